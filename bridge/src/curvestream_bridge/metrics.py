"""The bridge's Prometheus metrics: every one declared once, here, with its
type, help and label names; ``/metrics`` renders them in the text format.

Declaring a metric takes one line (a counter's name ends in ``_total``)::

    POINTS_INGESTED = counter("curvestream_points_ingested_total", "Points written to the store.")

A :class:`Metrics` holds one bridge's values (bridges in one process keep
apart). Its methods take a declared metric, never a name, and check the
labels against the declaration, so nothing can export as ``untyped``:

    >>> m = Metrics()
    >>> m.inc(REJECTED, 2, reason="undecodable")
    >>> 'curvestream_rejected_total{reason="undecodable"} 2' in m.render()
    True
    >>> m.inc(REJECTED)
    Traceback (most recent call last):
    ...
    ValueError: curvestream_rejected_total takes the labels ('reason',), got ()
    >>> m.observe(STORE_WRITE_SECONDS, 0.003)
    >>> print("\\n".join(line for line in m.render().splitlines() if "store_write" in line and "0.00" in line))
    curvestream_store_write_seconds_bucket{le="0.001"} 0
    curvestream_store_write_seconds_bucket{le="0.0025"} 0
    curvestream_store_write_seconds_bucket{le="0.005"} 1
    curvestream_store_write_seconds_sum 0.003

Why not prometheus_client: the same declarations and text, in a file a reader
takes in at once, with no dependency; the cost per call on the ingest writer
is the same order (bench/README.md, "Metrics").
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
import threading
from collections.abc import Callable

__all__ = ["Metric", "Metrics", "DECLARED", "counter", "gauge", "histogram"]

DECLARED: dict[str, Metric] = {}
"""Every declared metric by name, in the order of declaration."""

_NAME = re.compile(r"curvestream_[a-z][a-z0-9_]*")
_DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclasses.dataclass(frozen=True, eq=False)
class Metric:
    """A declared metric: its name, Prometheus type, help text and label names."""

    name: str
    kind: str  # "counter" | "gauge" | "histogram"
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds, ascending, +Inf implied

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"metric name {self.name!r}: curvestream_ and lowercase words")
        if (self.kind == "counter") != self.name.endswith("_total"):
            raise ValueError(f"metric {self.name}: a counter's name, and only a counter's, ends in _total")
        if self.name in DECLARED:
            raise ValueError(f"metric {self.name} is declared twice")
        if list(self.buckets) != sorted(set(self.buckets)):
            raise ValueError(f"metric {self.name}: buckets must ascend")
        DECLARED[self.name] = self


def counter(name: str, help: str, *labels: str) -> Metric:
    return Metric(name, "counter", help, labels)


def gauge(name: str, help: str, *labels: str) -> Metric:
    return Metric(name, "gauge", help, labels)


def histogram(name: str, help: str, *labels: str, buckets: tuple[float, ...] = _DURATION_BUCKETS) -> Metric:
    return Metric(name, "histogram", help, labels, buckets)


# ingest
POINTS_INGESTED = counter("curvestream_points_ingested_total", "Points written to the store.")
BATCHES_INGESTED = counter("curvestream_batches_ingested_total", "Batches written to the store, by source.", "source")
BATCHES_DUPLICATE = counter("curvestream_batches_duplicate_total",
                            "Re-sent batches dropped because they were stored already.")
REJECTED = counter("curvestream_rejected_total", "Payloads rejected, by reason.", "reason")
INGEST_LAG = gauge("curvestream_ingest_lag_seconds",
                   "Seconds from a batch being sealed by the trainer to being stored (last batch).")
INGEST_QUEUE_DEPTH = gauge("curvestream_ingest_queue_depth", "Messages received (decoded, pushed live) and waiting "
                           "for their store write: the receive window in use.")
INGEST_QUEUE_BYTES = gauge("curvestream_ingest_queue_bytes", "Payload bytes in the receive window.")
INGEST_ROUNDS = counter("curvestream_ingest_rounds_total", "Ingest rounds (one store write each).")
INGEST_ROUND_MESSAGES = counter("curvestream_ingest_round_messages_total", "Messages settled by ingest rounds.")
INGEST_STAGE_SECONDS = counter("curvestream_ingest_stage_seconds_total", "Time the ingest pipeline spent per stage "
                               "(prepare, write, stored, evaluate, settle).", "stage")
CLOCK_OFFSET = gauge("curvestream_clock_offset_seconds", "The run's trainer clock behind the bridge's (negative: "
                     "ahead), least of its batches' send-to-receive delays.", "project", "run")
POINTS_TIME_CORRECTED = counter("curvestream_points_time_corrected_total",
                                "Points whose wall time was shifted by their trainer clock's correction.")
# store writes
STORE_WRITE_SECONDS = histogram("curvestream_store_write_seconds", "Time spent in store writes, each attempt.")
STORE_ERRORS = counter("curvestream_store_errors_total", "Store writes that failed and were retried.")
STORE_UNEXPECTED_ERRORS = counter("curvestream_store_unexpected_errors_total", "Store writes that failed with an "
                                  "unexpected error (a bug, an unforeseen answer): retried, then parked.")
STORE_EXPIRED_POINTS = counter("curvestream_store_expired_points_total",
                               "Points older than InfluxDB's default retention policy: left out of their "
                               "batch by the bridge (named to their trainer in the commit) or dropped by InfluxDB.")
# parked batches
BATCHES_PARKED = counter("curvestream_batches_parked_total",
                         "Batches parked after unexpected store errors, by source.", "source")
PARKED_BATCHES = gauge("curvestream_parked_batches", "Batches waiting in the parked set for replay-dead-letters.")
PARK_ERRORS = counter("curvestream_park_errors_total",
                      "Attempts to park a batch that failed (disk full): it stays unacknowledged.")
PARKED_REPLAYED = counter("curvestream_parked_replayed_total", "Parked batches replayed into the store.")
# reads
SERIES_READS_CANCELLED = counter("curvestream_series_reads_cancelled_total",
                                 "Series reads stopped because their client went away.")
ROLLUP_CACHE_BYTES = gauge("curvestream_rollup_cache_bytes",
                           "Memory held by rollup rows kept for reads (DuckDB, InfluxDB; rollup_cache_mb).")
ROLLUP_CACHE_ENTRIES = gauge(
    "curvestream_rollup_cache_entries", "Series and axes whose rollup rows are kept for reads."
)
ROLLUP_CACHE_HITS = counter("curvestream_rollup_cache_hits_total", "Series reads that found their rollup rows kept.")
ROLLUP_CACHE_MISSES = counter("curvestream_rollup_cache_misses_total",
                              "Series reads that loaded rollup rows from the store.")
# connections
LIVE_CLIENTS = gauge("curvestream_live_clients", "Open WebSocket connections.")
MQTT_CONNECTED = gauge("curvestream_mqtt_connected", "1 while the bridge's MQTT subscriber is connected.")
MQTT_DISCONNECTS = counter("curvestream_mqtt_disconnects_total",
                           "Times the bridge's MQTT connection ended without the bridge stopping (it reconnects).")
MQTT_TAKEOVERS = counter("curvestream_mqtt_takeovers_total",
                         "Of those, the times another client with the same client id took the connection over.")
RETAINED_RUNS_HELD = gauge("curvestream_retained_runs_held", "Runs known only from retained meta/status messages, "
                           "not listed until a point of theirs is stored or they speak live (retained.py).")
# alerts
ALERTS = counter("curvestream_alerts_total", "Alert changes (firing, resolved) saved, by kind and state.",
                 "kind", "state")
ALERT_STATE_ERRORS = counter("curvestream_alert_state_errors_total",
                             "Alert state saves that failed (the store unavailable); retried with the next change.")
ALERT_DELIVERIES_RECORDED = counter("curvestream_alert_deliveries_recorded_total", "Alert changes delivered "
                                    "(webhook, MQTT) and recorded in the store, so no bridge sends them again.", "sink")
# the process
LIBRARY_LOG_LINES = counter("curvestream_library_log_lines_total", "Warnings and errors logged by third-party "
                            "libraries (the embedded amqtt broker, paho), by library and level; shown rate-limited.",
                            "library", "level")


class Metrics:
    """One bridge's values of the declared metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[Metric, tuple[str, ...]], float] = {}
        self._histograms: dict[tuple[Metric, tuple[str, ...]], list[float]] = {}  # bucket counts, +Inf, sum, count
        self._functions: dict[Metric, Callable[[], float]] = {}

    def inc(self, metric: Metric, amount: float = 1, **labels: str) -> None:
        """Add to a counter (``amount`` ≥ 0) or a gauge."""
        if metric.kind == "histogram" or (amount < 0 and metric.kind == "counter"):
            raise ValueError(f"{metric.name} is a {metric.kind}: inc({amount}) does not apply")
        key = (metric, _key(metric, labels))
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def set(self, metric: Metric, value: float, **labels: str) -> None:
        """Set a gauge."""
        if metric.kind != "gauge":
            raise ValueError(f"{metric.name} is a {metric.kind}: only a gauge is set")
        key = (metric, _key(metric, labels))
        with self._lock:
            self._values[key] = value

    def observe(self, metric: Metric, value: float, **labels: str) -> None:
        """Count one observation (a duration in seconds) into a histogram."""
        if metric.kind != "histogram":
            raise ValueError(f"{metric.name} is a {metric.kind}: only a histogram observes")
        key = (metric, _key(metric, labels))
        at = bisect.bisect_left(metric.buckets, value)
        with self._lock:
            cells = self._histograms.get(key)
            if cells is None:
                cells = self._histograms[key] = [0.0] * (len(metric.buckets) + 3)
            cells[at] += 1  # counted in its own bucket here, made cumulative when rendered
            cells[-2] += value
            cells[-1] += 1

    def gauge_fn(self, metric: Metric, fn: Callable[[], float]) -> None:
        """A label-less gauge or counter read from ``fn`` at each scrape (a count kept elsewhere)."""
        if metric.kind == "histogram" or metric.labels:
            raise ValueError(f"{metric.name}: only a label-less gauge or counter is read from a function")
        self._functions[metric] = fn

    def get(self, metric: Metric, **labels: str) -> float:
        """A counter's or gauge's value (0 before the first change); a histogram's count."""
        key = _key(metric, labels)
        with self._lock:
            if metric.kind == "histogram":
                cells = self._histograms.get((metric, key))
                return cells[-1] if cells else 0
            return self._values.get((metric, key), 0)

    def render(self) -> str:
        """The Prometheus text format (version 0.0.4) of every metric with a value."""
        values: dict[Metric, dict[tuple[str, ...], float]] = {}
        with self._lock:
            for (metric, key), value in self._values.items():
                values.setdefault(metric, {})[key] = value
            histograms: dict[Metric, dict[tuple[str, ...], list[float]]] = {}
            for (metric, key), cells in self._histograms.items():
                histograms.setdefault(metric, {})[key] = list(cells)
        for metric, fn in self._functions.items():
            try:
                values[metric] = {(): float(fn())}
            except Exception:
                continue
        lines: list[str] = []
        for metric in DECLARED.values():
            samples = values.get(metric) or histograms.get(metric)
            if not samples:
                continue
            lines.append(f"# HELP {metric.name} {_escape_help(metric.help)}")
            lines.append(f"# TYPE {metric.name} {metric.kind}")
            for key in sorted(samples):
                labels = sorted(zip(metric.labels, key))
                if metric.kind != "histogram":
                    lines.append(f"{metric.name}{_labels(labels)} {_number(values[metric][key])}")
                    continue
                cells = histograms[metric][key]
                running = 0.0
                for bound, count in zip((*metric.buckets, math.inf), cells):
                    running += count
                    lines.append(f"{metric.name}_bucket{_labels([*labels, ('le', _number(bound))])} "
                                 f"{_number(running)}")
                lines.append(f"{metric.name}_sum{_labels(labels)} {_number(cells[-2])}")
                lines.append(f"{metric.name}_count{_labels(labels)} {_number(cells[-1])}")
        return "\n".join(lines) + "\n"


def _key(metric: Metric, labels: dict[str, str]) -> tuple[str, ...]:
    names = metric.labels
    if len(labels) == len(names):
        if not names:
            return ()
        try:
            return tuple([str(labels[name]) for name in names])
        except KeyError:
            pass
    raise ValueError(f"{metric.name} takes the labels {names}, got {tuple(sorted(labels))}")


def _labels(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(v: float) -> str:
    """Exact: an integral value as an integer (12345678, not 1.23457e+07), others as Python's shortest repr."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 2**53:
        return str(int(v))
    return repr(float(v))
