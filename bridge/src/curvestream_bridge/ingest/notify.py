"""Stage 6, notify: the listener hears what the round did (the live push, the
runs list, the alert engine, the run tails), and the ingest figures are
counted. Only the alert engine's evaluation can hold the round back: it is
retried while the store refuses its state, so the commit never goes out
before the state that goes with it is saved."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.ingest.listener import IngestListener
from curvestream_bridge.ingest.message import Message
from curvestream_bridge.ingest.retry import Retrier
from curvestream_bridge.metrics import BATCHES_INGESTED, INGEST_LAG, POINTS_INGESTED, Metrics

__all__ = ["Notifier"]

log = logging.getLogger("curvestream.bridge.ingest")

_ENDED = (run_pb2.RUN_STATE_FINISHED, run_pb2.RUN_STATE_FAILED)


class Notifier:
    def __init__(self, listener: IngestListener, retry: Retrier, metrics: Metrics,
                 on_ended: Callable[[run_pb2.RunStatus], None] | None = None) -> None:
        self.listener = listener
        self.retry = retry
        self.metrics = metrics
        self.on_ended = on_ended  # the pipeline lets go of what it held for a run that ended

    def decoded(self, batches: Sequence[DecodedBatch]) -> None:
        if not batches:
            return
        try:
            self.listener.decoded(batches)
        except Exception:
            log.exception("curvestream bridge: live fan-out failed")

    def stored(self, fresh: list[tuple[Message, DecodedBatch]]) -> None:
        if not fresh:
            return
        now = time.time_ns()
        lag_from = 0
        points = 0
        by_source: dict[str, int] = {}
        for m, b in fresh:
            by_source[m.source] = by_source.get(m.source, 0) + 1
            points += b.points
            lag_from = max(lag_from, b.sealed_ns)
        for source, n in by_source.items():
            self.metrics.inc(BATCHES_INGESTED, n, source=source)
        self.metrics.inc(POINTS_INGESTED, points)
        if lag_from:
            self.metrics.set(INGEST_LAG, max(0.0, (now - lag_from) / 1e9))
        try:
            self.listener.stored([b for _, b in fresh])
        except Exception:
            log.exception("curvestream bridge: live fan-out failed")

    def evaluate(self, batches: list[DecodedBatch]) -> None:
        """Before the commit; waits while the store refuses the alert state (StoreUnavailable)."""
        if batches:
            self.retry(lambda: self.listener.evaluate(batches))

    def status(self, status: run_pb2.RunStatus) -> None:
        try:
            self.listener.status(status)
        except Exception:
            log.exception("curvestream bridge: status fan-out failed")
        if status.state in _ENDED and self.on_ended is not None:
            self.on_ended(status)

    def meta(self, meta: run_pb2.RunMeta) -> None:
        try:
            self.listener.meta(meta)
        except Exception:
            log.exception("curvestream bridge: metadata fan-out failed")
