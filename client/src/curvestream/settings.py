"""Client settings: one frozen dataclass, every field with its default and its
``CURVESTREAM_*`` environment variable.

    >>> s = Settings.from_env(flush_interval_ms=100)
    >>> s.flush_interval_ms
    100

Precedence: keyword arguments > environment > defaults. A bad value raises
``ValueError`` naming the setting.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from curvestream_wire.mqtt import MqttEndpoint

__all__ = ["Settings", "MqttEndpoint", "default_spool_dir"]


def default_spool_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "curvestream", "spool")


@dataclass(frozen=True)
class Settings:
    mqtt_url: str = "mqtt://127.0.0.1:1883"
    """Broker, ``mqtt://user:pass@host:1883`` or ``mqtts://`` for TLS. CURVESTREAM_MQTT_URL."""

    bridge_url: str = "http://127.0.0.1:8080"
    """HTTP base of the bridge, for the direct-write fallback and the CLI; empty disables
    the fallback. CURVESTREAM_BRIDGE_URL."""

    write_token: str = ""
    """Bearer token for the bridge's ingest endpoint. CURVESTREAM_WRITE_TOKEN."""

    read_token: str = ""
    """Bearer token for the bridge's read endpoints (imports ask what is stored already;
    ``curvestream.Api`` and ``curvestream export`` read; ``init(resume=...)`` asks where a run
    ended, ``finish()`` whether the bridge is slow or gone, ``curvestream status`` what is
    stored already). CURVESTREAM_READ_TOKEN."""

    spool_dir: str = field(default_factory=default_spool_dir)
    """Where batches wait until the bridge has stored them. CURVESTREAM_SPOOL_DIR."""

    mode: Literal["online", "offline"] = "online"
    """``offline`` spools only; ``curvestream sync`` uploads later. CURVESTREAM_MODE."""

    flush_interval_ms: int = 200
    """A batch is sealed at least this often while points arrive. CURVESTREAM_FLUSH_INTERVAL_MS."""

    max_batch_points: int = 20_000
    """Points (all keys together) per batch at most. CURVESTREAM_MAX_BATCH_POINTS."""

    max_queue_calls: int = 16_384
    """log() calls waiting in memory for the recorder thread at most; beyond it
    ``queue_full`` decides. CURVESTREAM_MAX_QUEUE_CALLS."""

    queue_full: Literal["block", "drop"] = "block"
    """``block``: log() waits for room (nothing lost); ``drop``: the call is dropped,
    counted and reported at finish(). CURVESTREAM_QUEUE_FULL."""

    spool_max_bytes: int = 2 * 1024**3
    """Disk quota of this run's spool. A warning at 80 %; at 100 % ``spool_full``
    decides. CURVESTREAM_SPOOL_MAX_BYTES."""

    spool_full: Literal["block", "drop"] = "drop"
    """At the quota, or when the spool's disk is full: ``drop``: new batches are
    dropped, counted, warned about and reported at finish() and by ``curvestream
    status``; ``block``: the recorder waits for the bridge, or for room on the
    disk (log() blocks once the queue is full too). CURVESTREAM_SPOOL_FULL."""

    segment_max_bytes: int = 8 * 1024**2
    """A spool segment is closed at this size (or after ``segment_max_age_ms``) and
    deleted once the bridge has stored all of it. CURVESTREAM_SEGMENT_MAX_BYTES."""

    segment_max_age_ms: int = 10_000
    """CURVESTREAM_SEGMENT_MAX_AGE_MS."""

    ack_timeout_ms: int = 15_000
    """A sent batch with no commit from the bridge after this is sent again.
    CURVESTREAM_ACK_TIMEOUT_MS."""

    max_inflight_batches: int = 32
    """Batches sent and not yet committed at most. CURVESTREAM_MAX_INFLIGHT_BATCHES."""

    fallback_after_ms: int = 10_000
    """Broker unreachable this long (and ``bridge_url`` set): batches go by HTTP
    to the bridge instead; at once when the broker's address refuses the connection.
    CURVESTREAM_FALLBACK_AFTER_MS."""

    mqtt_protocol: Literal["auto", "5", "3.1.1"] = "auto"
    """``auto`` tries MQTT 5 and falls back to 3.1.1. CURVESTREAM_MQTT_PROTOCOL."""

    mqtt_keepalive_s: int = 15
    """CURVESTREAM_MQTT_KEEPALIVE_S."""

    mqtt_ca_file: str = ""
    """CA bundle for ``mqtts://`` (system default when empty). CURVESTREAM_MQTT_CA_FILE."""

    mqtt_tls_insecure: bool = False
    """Skip the broker certificate check (tests only). CURVESTREAM_MQTT_TLS_INSECURE."""

    finish_timeout_ms: int = 30_000
    """finish() waits for the bridge to commit everything as long as commits keep
    coming; after this long without a new one it asks the bridge, and goes on
    waiting only while the bridge has the batches and is storing them (slow, not
    gone). What is not committed stays in the spool for the next run or
    ``curvestream sync``. CURVESTREAM_FINISH_TIMEOUT_MS."""

    system_metrics: bool = True
    """Record the machine's CPU, memory, disk and network use, this process's, and each
    NVIDIA GPU's (with ``nvidia-ml-py``) under ``system/…`` (:mod:`curvestream.system_metrics`);
    ``False`` (``0``) records none. CURVESTREAM_SYSTEM_METRICS."""

    system_metrics_interval_ms: int = 10_000
    """How often system metrics are sampled. CURVESTREAM_SYSTEM_METRICS_INTERVAL_MS."""

    def __post_init__(self) -> None:
        positive = (
            "flush_interval_ms",
            "max_batch_points",
            "max_queue_calls",
            "spool_max_bytes",
            "segment_max_bytes",
            "segment_max_age_ms",
            "ack_timeout_ms",
            "max_inflight_batches",
            "mqtt_keepalive_s",
            "system_metrics_interval_ms",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"curvestream setting {name}: must be a positive integer, got {value!r}")
        for name in ("fallback_after_ms", "finish_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"curvestream setting {name}: must be an integer >= 0, got {value!r}")
        choices = {
            "mode": ("online", "offline"),
            "queue_full": ("block", "drop"),
            "spool_full": ("block", "drop"),
            "mqtt_protocol": ("auto", "5", "3.1.1"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"curvestream setting {name}: must be one of {allowed}, got {getattr(self, name)!r}")
        self.mqtt_endpoint()  # validates the URL
        if self.bridge_url:
            parsed = urllib.parse.urlsplit(self.bridge_url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(
                    f"curvestream setting bridge_url: expected http(s)://host[:port], got {self.bridge_url!r}"
                )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            var = "CURVESTREAM_" + f.name.upper()
            if var in env:
                values[f.name] = _parse(f.name, f.type, env[var])
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown curvestream setting(s): {', '.join(sorted(unknown))}")
        return cls(**values)

    def session_key(self) -> tuple:
        """Runs whose settings have the same key share one session (one batching thread,
        uploader and MQTT connection): the fields of where and how batches are sent.
        The others (batching, queue, spool) stay each run's own."""
        return tuple(getattr(self, name) for name in _SESSION_FIELDS)

    def mqtt_endpoint(self) -> MqttEndpoint:
        return MqttEndpoint.parse(self.mqtt_url)

    @property
    def spool_path(self) -> pathlib.Path:
        return pathlib.Path(self.spool_dir)


_SESSION_FIELDS = ("mode", "mqtt_url", "bridge_url", "write_token", "ack_timeout_ms", "max_inflight_batches",
                   "fallback_after_ms", "mqtt_protocol", "mqtt_keepalive_s", "mqtt_ca_file", "mqtt_tls_insecure")


def _parse(name: str, type_: Any, raw: str) -> Any:
    text = str(type_)
    try:
        if text == "int":
            return int(raw)
        if text == "bool":
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
    except ValueError:
        raise ValueError(f"curvestream setting {name} (CURVESTREAM_{name.upper()}): cannot parse {raw!r}") from None
    return raw
