"""Each trainer's clock as the bridge sees it, and what is done about a wrong one.

Every batch carries the client's send time (``Batch.sent_ns``). Its arrival
here minus that time is a *sample*: the producer's clock offset plus however
long the batch travelled (the network, and the broker's queue while the bridge
was away). The offset estimate is the smallest sample of the producer's last
batches. Then:

- within ``clock_skew_tolerance_s`` (default 5 min): nothing changes, points keep
  the trainer's times;
- the trainer's clock ahead by more: certain (nothing arrives before it was
  sent), so its points are corrected;
- the trainer's clock behind by more than ``clock_skew_certain_after_s``
  (default 1 day, longer than a broker backlog lasts in practice): corrected;
- behind by less: a slow clock cannot be told from a backlog, so points keep
  the trainer's times (the offset is still shown).

A correction shifts every wall time of the producer's batches (points,
histograms, texts, the status and metadata times) by one fixed amount, so its
points stay in order; it is set again only when the estimate moves by more
than the tolerance (the trainer's clock was set). ``/metrics`` has
``curvestream_clock_offset_seconds`` per run and
``curvestream_points_time_corrected_total``; ``GET /api/v1/runs`` has
``clock_offset_s`` and ``clock_correction_s`` per run.
"""

from __future__ import annotations

import collections
import dataclasses
import threading

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.metrics import CLOCK_OFFSET, POINTS_TIME_CORRECTED, Metrics

__all__ = ["ClockSkew"]

_SAMPLES = 32


@dataclasses.dataclass
class _Producer:
    run: tuple[str, str]
    samples: collections.deque = dataclasses.field(default_factory=lambda: collections.deque(maxlen=_SAMPLES))
    correction_ns: int = 0


class ClockSkew:
    def __init__(self, tolerance_s: float, certain_after_s: float, metrics: Metrics) -> None:
        self.tolerance_ns = int(tolerance_s * 1e9)
        self.certain_after_ns = int(certain_after_s * 1e9)
        self.metrics = metrics
        self._producers: dict[bytes, _Producer] = {}
        self._runs: dict[tuple[str, str], tuple[int, int]] = {}  # run -> (offset, correction) of its latest producer
        self._lock = threading.Lock()

    def correct(self, batch: DecodedBatch, received_ns: int) -> int:
        """Measure the batch's producer and shift the batch's times by its correction; return the shift."""
        if not batch.sent_ns or not received_ns:
            return 0
        with self._lock:
            producer = self._producers.get(batch.producer_id)
            if producer is None:
                producer = self._producers[batch.producer_id] = _Producer((batch.project, batch.run))
            producer.samples.append(received_ns - batch.sent_ns)
            offset = min(producer.samples)
            wanted = offset if offset < -self.tolerance_ns or offset > self.certain_after_ns else 0
            if abs(wanted - producer.correction_ns) > self.tolerance_ns:
                producer.correction_ns = wanted
            shift = producer.correction_ns
            shown = self._runs.get(producer.run)
            self._runs[producer.run] = (offset, shift)
        if shown is None or shown[0] != offset:  # /metrics set again only when the run's offset moves
            self.metrics.set(CLOCK_OFFSET, offset / 1e9, project=batch.project, run=batch.run)
        if shift:
            _shift_batch(batch, shift)
            self.metrics.inc(POINTS_TIME_CORRECTED, batch.points)
        return shift

    def correct_status(self, status: run_pb2.RunStatus) -> None:
        """A status sent on its own topic gets its producer's correction too (newest status wins by time)."""
        with self._lock:
            producer = self._producers.get(bytes(status.producer_id))
            shift = producer.correction_ns if producer is not None else 0
        if shift and status.updated_ns:
            status.updated_ns += shift

    def forget(self, producer_id: bytes) -> None:
        """The producer's run ended: its samples are let go (a producer that sends again starts anew)."""
        with self._lock:
            self._producers.pop(producer_id, None)

    def of_run(self, project: str, run: str) -> tuple[float, float] | None:
        """(offset, correction) in seconds of the run's latest producer; None before its first batch."""
        with self._lock:
            known = self._runs.get((project, run))
        return None if known is None else (known[0] / 1e9, known[1] / 1e9)


def _shift_batch(batch: DecodedBatch, shift: int) -> None:
    for column in batch.scalars:
        column.wall_ns = column.wall_ns + shift
    for item in (*batch.histograms, *batch.texts):
        item.wall_ns += shift
    if batch.status is not None and batch.status.updated_ns:
        batch.status.updated_ns += shift
    if batch.meta is not None and batch.meta.started_ns:
        batch.meta.started_ns += shift
