"""What a writer's rollup rows held before a write that failed (see :mod:`.rollup`).

A write merges its points into the rows of the buckets they fall in. Its rollup
rows are sent before its raw points and its batch markers, so a write can fail
after some of its rows are stored (a chunk of raw points refused, the markers'
request failing); its batches are then written again. Merging the retry into
the rows as stored would count the first attempt's points twice (first, last,
min and max are idempotent, and joining packed points keeps one point per wall
time; counts are not). So the writer keeps, for each
bucket a failed write sent a row of, the row as the writes stored before it
left it (or that there was none): :class:`Committed`. Later writes merge into
that instead of the stored row, at every level of both axes (the packed
points too), until a write that rewrote the bucket is stored. Another write
into the same bucket before the retry (a write split up to find a bad batch)
merges into the remembered row and is stored on its own; a second failure
keeps the row of before the first.

A write whose rows and raw points are all stored but whose markers fail counts
as rolled up: the store leaves its batches out of the rollups of the writes
that store them again (``InfluxStore._rolled_up``).

Not covered: this memory is the bridge process's. A bridge killed during a
write, or stopped between a failed write and its retry, leaves rows holding
points whose batches are not marked stored; the next one reads those rows as
they are (its open buckets too) and counts the points of every bucket they
hold twice when the batches come again, for good. Extremes, packed points and
raw points stay right. Durable ways out: rows that say which batches they hold
(too big), or rollup rows sent only once the raw points are stored (narrows
the gap to the rollup and marker requests themselves, and gives up sending the
two kinds side by side): not done.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from curvestream_bridge.store.m4.agg import M4Agg

__all__ = ["Committed", "committed_rows"]


@dataclasses.dataclass
class Committed:
    """The rows of some buckets of one series, axis and level, as stored writes
    left them: ``buckets`` (sorted) are the buckets it tells about, ``rows`` (a
    sorted subset) those that had a row, with their aggregates and, at the
    bottom level of a packed axis, their points (None: too many to keep, or no
    points on this axis)."""

    buckets: np.ndarray
    rows: np.ndarray
    agg: M4Agg
    points: list[np.ndarray | None]

    def __len__(self) -> int:
        return len(self.buckets)

    def within(self, buckets: np.ndarray) -> Committed:
        """What it tells about ``buckets``."""
        keep = np.flatnonzero(np.isin(self.rows, buckets))
        return Committed(self.buckets[np.isin(self.buckets, buckets)], self.rows[keep], self.agg.take(keep),
                         [self.points[i] for i in keep.tolist()])

    def without(self, buckets: np.ndarray) -> Committed:
        """What it tells about other buckets than ``buckets``."""
        keep = np.flatnonzero(~np.isin(self.rows, buckets))
        return Committed(self.buckets[~np.isin(self.buckets, buckets)], self.rows[keep], self.agg.take(keep),
                         [self.points[i] for i in keep.tolist()])

    def plus(self, other: Committed) -> Committed:
        """This, and what ``other`` tells about the buckets this does not."""
        other = other.without(self.buckets)
        return _sorted(np.union1d(self.buckets, other.buckets), [self, other])


def _sorted(buckets: np.ndarray, parts: list[Committed]) -> Committed:
    rows = np.concatenate([p.rows for p in parts])
    order = np.argsort(rows, kind="stable")
    points = [x for p in parts for x in p.points]
    return Committed(buckets, rows[order], M4Agg.concat([p.agg for p in parts]).take(order),
                     [points[i] for i in order.tolist()])


def committed_rows(buckets: np.ndarray, read: tuple[np.ndarray, M4Agg, list[np.ndarray | None]] | None,
                   last: tuple[int, M4Agg, np.ndarray | None] | None, known: Committed | None) -> Committed:
    """The rows of a write's ``buckets`` (sorted) before it: those a failed write
    may have changed since (``known``), else the open bucket (``last``), else the
    rows ``read`` (buckets older than the open one); no row for the others."""
    parts: list[Committed] = []
    if read is not None:
        parts.append(Committed(read[0], read[0], read[1], list(read[2])))
    if last is not None:
        i = int(np.searchsorted(buckets, last[0]))
        if i < len(buckets) and buckets[i] == last[0]:
            one = np.array([last[0]], dtype=np.int64)
            parts.append(Committed(one, one, last[1], [last[2]]))
    if known is not None:
        parts = [p.without(known.buckets) for p in parts] + [known.within(buckets)]
    if not parts:
        return Committed(buckets, np.zeros(0, np.int64), M4Agg.empty(0), [])
    if len(parts) == 1:  # most writes: the open bucket, or the rows read
        return Committed(buckets, parts[0].rows, parts[0].agg, parts[0].points)
    return _sorted(buckets, parts)
