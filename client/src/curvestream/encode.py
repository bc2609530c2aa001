"""Where queued log() calls become columnar protobuf batches.

The training thread enqueues ``(step, wall_ns, {key: float})`` tuples and the
histogram/text items of ``curvestream.values``; the recorder thread hands a
drained slice to :class:`BatchBuilder`, which groups points by key into packed
arrays and seals a ``Batch`` every ``max_points`` points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream.values import AlertItem, HistogramItem, TextItem, compute_histogram

__all__ = ["BatchBuilder", "WIRE_VERSION"]

WIRE_VERSION = 1


class BatchBuilder:
    """Accumulates items; ``seal()`` returns ``(seq, payload, points)``."""

    def __init__(
        self, producer_id: bytes, project: str, run: str, next_seq: Callable[[], int], clock_ns: Callable[[], int]
    ) -> None:
        self.producer_id = producer_id
        self.project = project
        self.run = run
        self._next_seq = next_seq
        self._clock_ns = clock_ns
        self._last_ns = 0  # wall times are made strictly increasing per run here, off the training thread
        self._reset()

    def _reset(self) -> None:
        self._rows: list[tuple[int, int, dict[str, float]]] = []
        self._histograms: list[HistogramItem] = []
        self._texts: list[TextItem] = []
        self._alerts: list[AlertItem] = []
        self._meta: run_pb2.RunMeta | None = None
        self._status: run_pb2.RunStatus | None = None
        self.points = 0

    @property
    def empty(self) -> bool:
        return not self.points and not self._alerts and self._meta is None and self._status is None

    def add_scalars(self, step: int, wall_ns: int, values: dict[str, float]) -> None:
        if wall_ns <= self._last_ns:
            wall_ns = self._last_ns + 1
        self._last_ns = wall_ns
        self._rows.append((step, wall_ns, values))  # turned into columns once, in seal()
        self.points += len(values)

    def add(self, item: Any) -> None:
        if type(item) is tuple:
            self.add_scalars(*item)
        elif type(item) is HistogramItem:
            item.wall_ns = self._tick(item.wall_ns)
            self._histograms.append(item)
            self.points += 1
        elif type(item) is TextItem:
            item.wall_ns = self._tick(item.wall_ns)
            self._texts.append(item)
            self.points += 1
        elif type(item) is AlertItem:
            item.wall_ns = self._tick(item.wall_ns)
            self._alerts.append(item)
        elif isinstance(item, run_pb2.RunMeta):
            self._meta = item
        elif isinstance(item, run_pb2.RunStatus):
            self._status = item

    def _tick(self, wall_ns: int) -> int:
        if wall_ns <= self._last_ns:
            wall_ns = self._last_ns + 1
        self._last_ns = wall_ns
        return wall_ns

    def seal(self) -> tuple[int, bytes, int]:
        batch = batch_pb2.Batch(
            version=WIRE_VERSION,
            producer_id=self.producer_id,
            seq=self._next_seq(),
            project=self.project,
            run=self.run,
            sealed_ns=self._clock_ns(),
        )
        for key, (steps, walls, values) in _columns(self._rows).items():
            series = batch.scalars.add()
            series.key = key
            series.steps.extend(steps)
            series.wall_ns.extend(walls)
            series.values.extend(values)
        for h in self._histograms:
            edges, counts, lo, hi, total, count = compute_histogram(h.values, h.bins)
            batch.histograms.add(
                key=h.key, step=h.step, wall_ns=h.wall_ns, bucket_edges=edges, counts=counts,
                min=lo, max=hi, sum=total, count=count,
            )
        for t in self._texts:
            batch.texts.add(key=t.key, step=t.step, wall_ns=t.wall_ns, text=t.text, level=t.level)
        for a in self._alerts:
            batch.alerts.add(title=a.title, text=a.text, level=a.level, step=a.step, wall_ns=a.wall_ns)
        if self._meta is not None:
            batch.meta.CopyFrom(self._meta)
        if self._status is not None:
            batch.status.CopyFrom(self._status)
            # the status rides in this batch: the producer has sealed up to here
            batch.status.last_seq = max(batch.status.last_seq, batch.seq)
        points = self.points
        self._reset()
        return batch.seq, batch.SerializeToString(), points


def _columns(rows: list[tuple[int, int, dict[str, float]]]) -> dict[str, tuple[list[int], list[int], list[float]]]:
    """One (steps, walls, values) column per key, keys in the order first seen.

    A training loop usually logs the same keys every time: then each column is
    one comprehension over the rows, several times cheaper than appending point
    by point as they come."""
    if not rows:
        return {}
    keys = rows[0][2].keys()
    if all(r[2].keys() == keys for r in rows):
        steps, walls = [r[0] for r in rows], [r[1] for r in rows]
        return {key: (steps, walls, [r[2][key] for r in rows]) for key in keys}
    columns: dict[str, tuple[list[int], list[int], list[float]]] = {}
    for step, wall_ns, values in rows:
        for key, value in values.items():
            col = columns.get(key)
            if col is None:
                col = columns[key] = ([], [], [])
            col[0].append(step)
            col[1].append(wall_ns)
            col[2].append(value)
    return columns
