"""Counters and gauges for ``/metrics`` in the Prometheus text format.

    >>> m = Metrics()
    >>> m.inc("curvestream_rejected_total", 2, reason="undecodable")
    >>> "curvestream_rejected_total{reason=\\"undecodable\\"} 2" in m.render()
    True
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["Metrics", "HELP"]

HELP = {
    "curvestream_alert_deliveries_recorded_total": (
        "counter", "Alert changes delivered (webhook, MQTT) and recorded in the store, so no bridge sends them again."),
    "curvestream_points_ingested_total": ("counter", "Points written to the store."),
    "curvestream_batches_ingested_total": ("counter", "Batches written to the store, by source."),
    "curvestream_batches_duplicate_total": ("counter", "Re-sent batches dropped because they were stored already."),
    "curvestream_rejected_total": ("counter", "Payloads rejected, by reason."),
    "curvestream_store_write_seconds_sum": ("counter", "Time spent in store writes."),
    "curvestream_store_write_seconds_count": ("counter", "Store writes."),
    "curvestream_store_errors_total": ("counter", "Store writes that failed and were retried."),
    "curvestream_store_unexpected_errors_total": ("counter", "Store writes that failed with an unexpected error "
                                                  "(a bug, an unforeseen answer): retried, then parked."),
    "curvestream_batches_parked_total": ("counter", "Batches parked after unexpected store errors, by source."),
    "curvestream_parked_batches": ("gauge", "Batches waiting in the parked set for replay-dead-letters."),
    "curvestream_park_errors_total": ("counter", "Attempts to park a batch that failed (disk full): it stays "
                                      "unacknowledged."),
    "curvestream_parked_replayed_total": ("counter", "Parked batches replayed into the store."),
    "curvestream_ingest_lag_seconds": ("gauge", "Seconds from a batch being sealed by the trainer to being stored (last batch)."),
    "curvestream_ingest_queue_depth": ("gauge", "Messages waiting for the store writer."),
    "curvestream_live_clients": ("gauge", "Open WebSocket connections."),
    "curvestream_mqtt_connected": ("gauge", "1 while the bridge's MQTT subscriber is connected."),
    "curvestream_rollup_cache_bytes": ("gauge", "Memory held by DuckDB rollup rows kept for reads (rollup_cache_mb)."),
    "curvestream_rollup_cache_entries": ("gauge", "Series and axes whose rollup rows are kept for reads."),
    "curvestream_rollup_cache_hits_total": ("counter", "Series reads that found their rollup rows kept."),
    "curvestream_rollup_cache_misses_total": ("counter", "Series reads that loaded their rollup rows from the file."),
    "curvestream_library_log_lines_total": ("counter", "Warnings and errors logged by third-party libraries (the "
                                            "embedded amqtt broker, paho), by library and level; shown rate-limited."),
}


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return "{" + body + "}"


def _escape(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], float] = {}
        self._gauges: dict[str, Callable[[], float]] = {}

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        key = (name, _labels(labels))
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        with self._lock:
            self._values[(name, _labels(labels))] = value

    def gauge_fn(self, name: str, fn: Callable[[], float]) -> None:
        self._gauges[name] = fn

    def get(self, name: str, **labels: str) -> float:
        with self._lock:
            return self._values.get((name, _labels(labels)), 0)

    def total(self, name: str) -> float:
        with self._lock:
            return sum(v for (n, _), v in self._values.items() if n == name)

    def render(self) -> str:
        with self._lock:
            values = dict(self._values)
        for name, fn in self._gauges.items():
            try:
                values[(name, "")] = float(fn())
            except Exception:  # noqa: BLE001 - a gauge must not break the scrape
                continue
        lines = []
        for name in sorted({n for n, _ in values}):
            kind, text = HELP.get(name, ("untyped", name))
            lines.append(f"# HELP {name} {text}")
            lines.append(f"# TYPE {name} {kind}")
            for (n, labels), v in sorted(values.items()):
                if n == name:
                    lines.append(f"{name}{labels} {v:g}")
        return "\n".join(lines) + "\n"
