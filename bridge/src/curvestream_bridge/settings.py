"""Bridge settings: one pydantic-settings object. Every field reads
``CURVESTREAM_<FIELD>`` from the environment (or a ``.env``-style file given
by ``CURVESTREAM_CONFIG_FILE`` / ``--config``); see ``bridge.example.env``.
"""

from __future__ import annotations

import socket
import urllib.parse
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["BridgeSettings", "parse_addr", "describe_error"]


class BridgeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CURVESTREAM_", extra="ignore", frozen=True)

    mqtt_url: str = "mqtt://127.0.0.1:1883"
    """Broker to subscribe to (``mqtt://user:pass@host:port``, ``mqtts://`` for TLS); empty: HTTP ingest only."""

    mqtt_client_id: str = ""
    """Persistent-session client id: stable across restarts, so the broker keeps
    messages for the bridge while it is down; unique per bridge (a broker drops
    the older of two connections with one id; bridges sharing a subscription or
    an InfluxDB database tell their rows apart by it). Empty: the bridge makes
    ``curvestream-bridge-<host>-<6 random characters>`` once and keeps it in its
    data directory (``client_id.py``). CURVESTREAM_MQTT_CLIENT_ID."""

    mqtt_shared_group: str = ""
    """MQTT 5 shared subscription group (``$share/<group>/…``): bridges in one
    group split the stream. Empty: a plain subscription."""

    mqtt_protocol: Literal["auto", "5", "3.1.1"] = "auto"
    mqtt_session_expiry_s: int = 7 * 24 * 3600
    mqtt_ca_file: str = ""
    mqtt_tls_insecure: bool = False

    store: str = "duckdb:///./curvestream-data/curvestream.duckdb"
    """``duckdb:///path/file.db`` or ``influxdb://user:pass@host:8086/dbname`` (a token as password)."""

    http_addr: str = "127.0.0.1:8080"
    """Address of the HTTP API, the WebSocket and the page."""

    read_token: str = ""
    """Bearer token for reads; empty: open (only allowed on loopback)."""

    write_token: str = ""
    """Bearer token for POST /api/v1/ingest; empty: open (only allowed on loopback)."""

    allow_open: bool = False
    """Serve without tokens on a non-loopback address anyway (behind your own proxy)."""

    bridge_id: str = Field(default_factory=lambda: f"{socket.gethostname()}")
    max_payload_bytes: int = 64 * 1024 * 1024
    """Larger MQTT payloads or ingest bodies are rejected."""
    max_batch_points: int = 5_000_000
    ingest_queue_messages: int = 10_000
    """The receive window: messages received (decoded, pushed live) and waiting for their store write,
    at most; beyond it the MQTT thread waits (backpressure). CURVESTREAM_INGEST_QUEUE_MESSAGES."""
    ingest_queue_mb: int = 256
    """The receive window's payload bytes at most, in MiB. CURVESTREAM_INGEST_QUEUE_MB."""
    ingest_round_messages: int = 10_000
    """Messages written by one store write at most (with ``write_max_points``). CURVESTREAM_INGEST_ROUND_MESSAGES."""
    ingest_round_linger_ms: int = 250
    """Under fan-in (the previous round held at least ``ingest_round_linger_from`` messages), a round
    waits this long after the previous one for more messages, so that each series comes with several
    batches (its alerts and rollups cost per round); live points are pushed as they arrive meanwhile.
    CURVESTREAM_INGEST_ROUND_LINGER_MS (0: never wait)."""
    ingest_round_linger_from: int = 256
    """See ``ingest_round_linger_ms``. CURVESTREAM_INGEST_ROUND_LINGER_FROM."""
    ingest_dedupe_producers: int = 100_000
    """Producers whose stored seqs the bridge keeps in memory at most (the least recently seen are
    read from the store again when they come back). CURVESTREAM_INGEST_DEDUPE_PRODUCERS."""
    mqtt_receive_maximum: int = 10_000
    """MQTT 5 Receive Maximum: messages the broker may send before the first is acknowledged (each is
    acknowledged after its store write). Keep it at most ``ingest_queue_messages``. 3.1.1 has no such
    setting (the broker's own in-flight limit applies). CURVESTREAM_MQTT_RECEIVE_MAXIMUM."""
    write_max_points: int = 1_000_000
    """Points per store write at most (several batches are written together)."""
    dead_letter_path: str = ""
    """File where rejected payloads are kept for inspection (framed, with the reason). Empty: none."""
    parked_dir: str = "./curvestream-data/parked"
    """Where valid batches the store kept failing on unexpectedly (a bug, an answer nobody foresaw)
    are parked, one file each with the reason, before the trainer is told it may free its spool;
    ``curvestream-bridge replay-dead-letters`` stores them once fixed. Empty: never park (such a
    batch is retried until the store takes it, holding up the stream meanwhile)."""
    unexpected_error_attempts: int = 5
    """Attempts of a store write that fails unexpectedly before the batches it still fails on
    are parked (backoff doubling from 0.2 s, so ~3 s for 5)."""
    live_frame_ms: int = 50
    """Live points are pushed as soon as they are decoded; what arrives within this long of the
    last push waits for the next one (at most one frame per socket per ``live_frame_ms``).
    CURVESTREAM_LIVE_FRAME_MS."""
    live_flush_hint_ms: int = 50
    """While a live page watches a run, the bridge asks that run's trainers (a retained MQTT
    message on ``curvestream/v1/<project>/<run>/watched``) to seal batches at least this often,
    if their own ``flush_interval_ms`` is longer; 0: never ask. CURVESTREAM_LIVE_FLUSH_HINT_MS."""
    clock_skew_tolerance_s: float = 300.0
    """A trainer clock off by less than this keeps its times (docs/clock-skew.md).
    CURVESTREAM_CLOCK_SKEW_TOLERANCE_S."""
    clock_skew_certain_after_s: float = 86_400.0
    """A trainer clock behind by more than this is corrected; by less, it cannot be told from a broker backlog.
    CURVESTREAM_CLOCK_SKEW_CERTAIN_AFTER_S."""

    grafana_live_url: str = ""
    """Grafana base URL; when set, new points are pushed to ``/api/live/push/<stream>``."""
    grafana_live_token: str = ""
    grafana_live_stream: str = "curvestream"

    alerts: bool = True
    """Evaluate alert rules as points are stored (``CURVESTREAM_ALERTS=0`` turns the engine off)."""
    alert_rules: str = ""
    """YAML file of alert rules (docs/alerts.md); empty: the defaults (non-finite on every key, plateau on
    keys containing ``loss``, stalled after 300 s, lost). An invalid file stops the bridge at start."""
    alert_webhook_url: str = ""
    """Webhook URLs (comma-separated) that receive alerts in the Alertmanager v4 webhook format."""
    alert_webhook_give_up_s: float = 3600.0
    """A webhook is retried with backoff for this long, then the alert is given up for that URL."""
    alert_public_url: str = ""
    """Base URL of the page for an alert's ``generatorURL``; empty: ``http://<CURVESTREAM_HTTP_ADDR>``."""

    @field_validator("store")
    @classmethod
    def _check_store(cls, v: str) -> str:
        scheme = urllib.parse.urlsplit(v).scheme
        if scheme not in ("duckdb", "influxdb", "influxdbs"):
            raise ValueError(f"store must be duckdb:///path or influxdb://host:port/db, got {v!r}")
        return v

    @field_validator("alert_rules")
    @classmethod
    def _check_rules(cls, v: str) -> str:
        if v:
            from curvestream_bridge.alerts.rules import load_rules

            load_rules(v)  # RulesError (a ValueError) names the rule and field
        return v

    @field_validator("http_addr")
    @classmethod
    def _check_addr(cls, v: str) -> str:
        parse_addr(v)
        return v

    @field_validator("max_payload_bytes", "max_batch_points", "ingest_queue_messages", "write_max_points",
                     "live_frame_ms", "unexpected_error_attempts", "ingest_queue_mb", "ingest_round_messages",
                     "ingest_dedupe_producers", "mqtt_receive_maximum")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive")
        return v

    def check_exposure(self) -> None:
        """Refuse to serve without tokens on anything but loopback."""
        host, _ = parse_addr(self.http_addr)
        if _is_loopback(host) or self.allow_open:
            return
        missing = [n for n, v in (("CURVESTREAM_READ_TOKEN", self.read_token),
                                  ("CURVESTREAM_WRITE_TOKEN", self.write_token)) if not v]
        if missing:
            raise SystemExit(
                f"curvestream bridge: refusing to listen on {self.http_addr} without {' and '.join(missing)}; "
                "set the tokens, bind 127.0.0.1, or set CURVESTREAM_ALLOW_OPEN=1 behind your own proxy"
            )


def describe_error(exc: ValidationError) -> str:
    """Pydantic's lines in one, each naming its environment variable:

        >>> try:
        ...     BridgeSettings(store="x://", max_batch_points=0)
        ... except ValidationError as exc:
        ...     print(describe_error(exc))
        CURVESTREAM_STORE: store must be duckdb:///path or influxdb://host:port/db, got 'x://'; \
CURVESTREAM_MAX_BATCH_POINTS: must be positive
    """
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        inner = (err.get("ctx") or {}).get("error")
        msg = str(inner) if isinstance(inner, ValueError) else err["msg"]
        parts.append(f"CURVESTREAM_{field.upper()}: {msg}" if field else msg)
    return "; ".join(parts)


def parse_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address must be host:port, got {addr!r}")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")
