"""Points older than the database's default retention policy, taken out before a write.

InfluxDB drops points older than the retention policy they are written to
(``partial write: points beyond retention policy dropped=N``), the rest of
the request stored. The bridge takes them out of a batch itself, by the same
rule (a point older than now minus the policy's duration), so that it knows
which batch and run they came from: they are counted
(``curvestream_store_expired_points_total``), left out of the rollups (which
then hold exactly the points stored), and named to the trainer in the batch's
commit (``Commit.dropped``, with the reason). A point the bridge keeps and
InfluxDB drops a moment later (the edge of the window) is counted from
InfluxDB's answer (:meth:`.http.InfluxHTTP._count_expired`).

    >>> import numpy as np
    >>> from curvestream_bridge.batch import ScalarColumn
    >>> b = DecodedBatch(b"p", 1, "proj", "run", [ScalarColumn("loss", np.arange(4), np.array([5, 10, 15, 20]),
    ...                  np.ones(4))], [], [], None, None, 0)
    >>> kept, dropped = without_expired(b, 12)
    >>> kept.scalars[0].wall_ns.tolist(), dropped
    ([15, 20], 2)
"""

from __future__ import annotations

import dataclasses

from curvestream_bridge.batch import DecodedBatch, ScalarColumn

__all__ = ["without_expired", "reason", "cutoff"]


def without_expired(b: DecodedBatch, cutoff_ns: int) -> tuple[DecodedBatch, int]:
    """The batch without its points (scalars, histograms, texts) older than ``cutoff_ns``, and how many."""
    dropped = 0
    scalars = []
    for col in b.scalars:
        keep = col.wall_ns >= cutoff_ns
        if keep.all():
            scalars.append(col)
            continue
        dropped += int((~keep).sum())
        if keep.any():
            scalars.append(ScalarColumn(col.key, col.steps[keep], col.wall_ns[keep], col.values[keep]))
    histograms = [h for h in b.histograms if h.wall_ns >= cutoff_ns]
    texts = [t for t in b.texts if t.wall_ns >= cutoff_ns]
    dropped += len(b.histograms) - len(histograms) + len(b.texts) - len(texts)
    if not dropped:
        return b, 0
    return dataclasses.replace(b, scalars=scalars, histograms=histograms, texts=texts), dropped


def reason(database: str, retention_ns: int) -> str:
    """Why a batch's points were dropped, for the trainer."""
    return (f"older than the default retention policy of InfluxDB database {database!r} "
            f"({_duration(retention_ns)}): InfluxDB keeps no point that old")


def _duration(ns: int) -> str:
    seconds = ns // 1_000_000_000
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def cutoff(now_ns: int, retention_ns: int) -> int | None:
    """The oldest wall time a point may have to be kept (None: the policy keeps points forever)."""
    return now_ns - retention_ns if retention_ns > 0 else None

