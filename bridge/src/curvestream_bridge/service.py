"""Assembling the bridge: store, ingest writer, MQTT subscriber, live hub and
the HTTP app; ``run_bridge`` serves it until interrupted, ``run_embedded``
with an embedded broker (``curvestream up``). The command line is ``cli.py``.
"""

from __future__ import annotations

import functools
import logging
import pathlib
import re
import socket
import threading
import urllib.request
from collections.abc import Sequence
from typing import Any

import uvicorn
from pydantic import ValidationError

from curvestream_wire.topics import Topics

from curvestream_bridge.alerts.cluster import AlertFeed
from curvestream_bridge.alerts.service import AlertService
from curvestream_bridge.api import BridgeApi, create_app
from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.client_id import ClientId, data_dir
from curvestream_bridge.embedded import EmbeddedBroker
from curvestream_bridge.ingest import Ingest, IngestListener
from curvestream_bridge.library_logs import route_library_logs
from curvestream_bridge.live import LiveHub
from curvestream_bridge.metrics import (
    LIVE_CLIENTS,
    RETAINED_RUNS_HELD,
    ROLLUP_CACHE_BYTES,
    ROLLUP_CACHE_ENTRIES,
    ROLLUP_CACHE_HITS,
    ROLLUP_CACHE_MISSES,
    STORE_EXPIRED_POINTS,
    Metrics,
)
from curvestream_bridge.receipts import Receipts
from curvestream_bridge.run_lifecycle import DeletedRuns
from curvestream_bridge.run_tails import RunTails
from curvestream_bridge.settings import BridgeSettings, describe_error, parse_addr
from curvestream_bridge.store import Store, open_store
from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.m4.fold import load_in_background
from curvestream_bridge.subscriber import Subscriber

__all__ = ["Bridge", "StartError", "run_bridge", "run_embedded"]

log = logging.getLogger("curvestream.bridge")


class Bridge:
    def __init__(self, settings: BridgeSettings, store: Store | None = None) -> None:
        self.client_id = ClientId.resolve(settings.mqtt_client_id, data_dir(settings.store, settings.parked_dir))
        settings = settings.model_copy(update={"mqtt_client_id": self.client_id.value})
        self.settings = settings
        self.metrics = Metrics()
        self.store = store if store is not None else open_store(settings.store, writer_id=settings.mqtt_client_id)
        self.live = LiveHub(settings.live_frame_ms, watch_hint=self._watch_hint)
        self.subscriber: Subscriber | None = None
        self.tails = RunTails(self.store)
        self.receipts = Receipts()
        self.deleted = DeletedRuns(self.store)
        # bridges sharing a subscription each see part of a run: their alerts come from a feed of the whole
        cluster = bool(settings.alerts and settings.mqtt_url and settings.mqtt_shared_group
                       and settings.mqtt_protocol != "3.1.1")
        self.alerts = AlertService(settings, self.store, self.metrics, publish=self._publish_alert,
                                   on_alert=self.live.alert, cluster=cluster, deleted=self.deleted) \
            if settings.alerts else None
        self.alert_feed = AlertFeed(settings, self.alerts, self.alerts.leader_changed) \
            if cluster and self.alerts is not None else None
        self.ingest = Ingest(self.store, settings, self.metrics, publish_commit=self._publish_commit,
                             listener=_BridgeListener(self, self.alerts if not cluster else None),
                             deleted=self.deleted)
        if settings.mqtt_url:
            self.subscriber = Subscriber(settings, self.ingest, self.metrics)
        if settings.grafana_live_url:
            from curvestream_bridge.grafana_live import GrafanaLivePusher

            self.live.grafana = GrafanaLivePusher(settings)
        self.metrics.gauge_fn(LIVE_CLIENTS, lambda: self.live.client_count)
        self.metrics.gauge_fn(RETAINED_RUNS_HELD, lambda: self.ingest.retained.runs_held)
        opened: Any = self.store
        if hasattr(opened, "expired_points"):  # points older than InfluxDB's retention policy, dropped by it
            self.metrics.gauge_fn(STORE_EXPIRED_POINTS, lambda: opened.expired_points)
        cache = getattr(self.store, "rollup_cache", None)  # DuckDB's rollup rows kept for reads
        if cache is not None:
            for metric, attr in ((ROLLUP_CACHE_BYTES, "bytes"), (ROLLUP_CACHE_ENTRIES, "entries"),
                                 (ROLLUP_CACHE_HITS, "hits"), (ROLLUP_CACHE_MISSES, "misses")):
                self.metrics.gauge_fn(metric, functools.partial(getattr, cache, attr))
        self.app = create_app(BridgeApi(settings=settings, store=self.store, ingest=self.ingest, live=self.live,
                                        metrics=self.metrics, tails=self.tails, alerts=self.alerts,
                                        subscriber=self.subscriber, receipts=self.receipts, deleted=self.deleted))

    def _decoded(self, batches: Any) -> None:
        self.receipts.note(batches)
        self.live.points(batches)

    def _on_status(self, status: Any) -> None:
        self.tails.on_status(status)
        self.live.status(status)
        if self.alerts is not None and self.alert_feed is None:
            self.alerts.on_status(status)

    def _publish_commit(self, producer_id: bytes, commit: Any) -> None:
        if self.subscriber is not None:
            self.subscriber.publish_commit(producer_id, commit)

    def _watch_hint(self, run: tuple[str, str], watched: bool) -> None:
        """A live page started or stopped watching ``run``: its trainers may flush sooner."""
        if self.subscriber is not None and self.settings.live_flush_hint_ms > 0:
            payload = str(self.settings.live_flush_hint_ms).encode() if watched else b""
            self.subscriber.publish(Topics.watched(*run), payload, retain=True)

    def _publish_alert(self, topic: str, payload: bytes) -> None:
        if self.subscriber is not None:
            self.subscriber.publish(topic, payload)

    def start(self) -> None:
        load_in_background()  # the first series query then finds the compiled M4 loops loaded
        if self.alerts is not None:
            self.alerts.start()
        if self.alert_feed is not None:
            self.alert_feed.start()
        self.ingest.start()
        if self.subscriber is not None:
            self.subscriber.start()

    def stop(self) -> None:
        if self.subscriber is not None:
            self.subscriber.stop()
        self.ingest.stop()
        if self.alert_feed is not None:
            self.alert_feed.stop()
        if self.alerts is not None:
            self.alerts.stop()
        if self.live.grafana is not None:
            self.live.grafana.close()
        self.store.close()
        self.client_id.release()


class _BridgeListener(IngestListener):
    """What ingest tells the bridge's parts: the live hub, the alert engine (unless
    a cluster feed feeds it), the run tails."""

    def __init__(self, bridge: Bridge, alerts: AlertService | None) -> None:
        self.bridge = bridge
        self.alerts = alerts

    def decoded(self, batches: Sequence[DecodedBatch]) -> None:
        self.bridge._decoded(batches)

    def stored(self, batches: Sequence[DecodedBatch]) -> None:
        self.bridge.live.stored(batches)

    def evaluate(self, batches: Sequence[DecodedBatch]) -> None:
        if self.alerts is not None:
            self.alerts.on_round(batches)

    def status(self, status: Any) -> None:
        self.bridge._on_status(status)

    def meta(self, meta: Any) -> None:
        self.bridge.live.meta(meta)


def _serve(bridge: Bridge, on_ready: Any = None) -> None:
    host, port = parse_addr(bridge.settings.http_addr)
    config = uvicorn.Config(bridge.app, host=host, port=port, log_level="warning",
                            ws="websockets-sansio" if _has_sansio() else "auto", lifespan="on")
    server = uvicorn.Server(config)
    if on_ready is not None:
        def watch() -> None:
            while not server.started and not server.should_exit:
                threading.Event().wait(0.05)
            if server.started:
                on_ready()

        threading.Thread(target=watch, daemon=True).start()
    server.run()


def _has_sansio() -> bool:
    try:
        import uvicorn.protocols.websockets.websockets_sansio_impl  # noqa: F401
    except ImportError:
        return False
    return True


def run_bridge(settings: BridgeSettings, store: Store | None = None) -> None:
    """Serve until interrupted; ``store``: an engine already open instead of ``settings.store``."""
    settings.check_exposure()
    host, port = parse_addr(settings.http_addr)
    busy = _port_busy(host, port)
    if busy:
        raise SystemExit(f"curvestream bridge: cannot listen on {settings.http_addr} ({busy}); set "
                         "CURVESTREAM_HTTP_ADDR to a free address")
    bridge = Bridge(settings, store)
    bridge.start()
    log.info("curvestream bridge: store %s, MQTT %s (client id %s), HTTP on http://%s", bridge.store.name,
             settings.mqtt_url or "(off)", bridge.settings.mqtt_client_id, settings.http_addr)
    try:
        _serve(bridge)
    finally:
        bridge.stop()


class StartError(RuntimeError):
    """Why the embedded stack cannot start, in one line for the console."""


def _port_busy(host: str, port: int) -> str:
    """Why ``port`` cannot be listened on (empty: it can), as the servers bind it (SO_REUSEADDR)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return ""


def _check_ports(host: str, http_port: int, mqtt_port: int) -> None:
    for what, h, p, option in (("the page and API", host, http_port, "--port"),
                               ("the MQTT broker", "127.0.0.1", mqtt_port, "--mqtt-port")):
        busy = _port_busy(h, p)
        if busy:
            hint = ""
            if what == "the page and API" and _healthy(f"http://{h}:{p}"):
                hint = f" by a curvestream already running: http://{h}:{p}"
            raise StartError(f"port {p} on {h}, for {what}, is in use{hint} ({busy}); choose another with {option} N")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=1.0) as resp:
            return resp.status == 200
    except (OSError, ValueError):
        return False


def run_embedded(data_dir: str, http_port: int, mqtt_port: int, host: str = "127.0.0.1",
                 on_ready: Any = None, on_shutdown: Any = None, extra_env: dict[str, str] | None = None) -> None:
    """``curvestream up``: amqtt + bridge + DuckDB + page, all on loopback by default."""
    _check_ports(host, http_port, mqtt_port)
    data = pathlib.Path(data_dir).resolve()
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StartError(f"cannot make the data directory {data}: {exc.strerror or exc}") from None
    broker = EmbeddedBroker("127.0.0.1", mqtt_port)
    overrides: dict[str, Any] = {
        "store": f"duckdb:///{data / 'curvestream.duckdb'}",
        "mqtt_url": broker.url,
        "http_addr": f"{host}:{http_port}",
        "mqtt_client_id": "curvestream-embedded-bridge",
        "mqtt_protocol": "3.1.1",  # amqtt speaks MQTT 3.1.1 only
        "dead_letter_path": str(data / "dead-letters.bin"),
        "parked_dir": str(data / "parked"),
        **(extra_env or {}),
    }
    try:
        settings = BridgeSettings(**overrides)
    except ValidationError as exc:
        raise StartError(f"bad settings: {describe_error(exc)}") from None
    settings.check_exposure()
    try:
        bridge = Bridge(settings)
    except StoreUnavailable as exc:
        holder = re.search(r"PID (\d+)", str(exc))
        if holder:
            raise StartError(f"the data directory {data} is in use by another curvestream (PID {holder[1]}): stop "
                             "it, or give this one its own with --data DIR") from None
        raise StartError(f"cannot open the store in {data}: {exc}") from None
    route_library_logs(bridge.metrics)  # amqtt's warnings: counted, one line each, no tracebacks
    try:
        broker.start()
    except RuntimeError as exc:
        bridge.stop()
        raise StartError(str(exc)) from None
    bridge.start()

    def ready() -> None:
        print(f"curvestream is up: http://{host}:{http_port}  (MQTT {broker.url}, data {data})", flush=True)
        if on_ready is not None:
            on_ready()

    try:
        _serve(bridge, ready)
    finally:
        if on_shutdown is not None:  # e.g. the demo finishes its runs while broker and bridge still run
            on_shutdown()
        bridge.stop()
        broker.stop()
