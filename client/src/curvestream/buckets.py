"""Histograms that arrive already bucketed (TensorBoard's ``add_histogram_raw``,
an imported event file): logged as they are, never re-binned.

    >>> import curvestream
    >>> from curvestream.buckets import Buckets
    >>> h = Buckets(edges=[0.0, 1.0, 2.0], counts=[3, 1], min=0.1, max=1.5, sum=2.2, count=4)
    >>> run = curvestream.init(project="p", run="r", mode="offline")  # doctest: +SKIP
    >>> run.log_histogram("weights", h, step=10)                        # doctest: +SKIP

``edges`` has one more element than ``counts``; bucket ``i`` holds the values
between ``edges[i]`` and ``edges[i + 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["Buckets"]


class Buckets:
    __slots__ = ("edges", "counts", "min", "max", "sum", "count")

    def __init__(self, edges: Sequence[float], counts: Sequence[float], *, min: float = math.nan,
                 max: float = math.nan, sum: float = math.nan, count: int | None = None) -> None:
        self.edges = [float(e) for e in edges]
        self.counts = [float(c) for c in counts]
        if len(self.edges) != len(self.counts) + 1:
            raise ValueError(f"curvestream: a histogram of {len(self.counts)} buckets needs "
                             f"{len(self.counts) + 1} edges, got {len(self.edges)}")
        self.min = float(min)
        self.max = float(max)
        self.sum = float(sum)
        self.count = round(math.fsum(self.counts)) if count is None else int(count)

    def as_tuple(self) -> tuple[list[float], list[float], float, float, float, int]:
        """``(edges, counts, min, max, sum, count)``, as ``compute_histogram`` answers."""
        return self.edges, self.counts, self.min, self.max, self.sum, self.count
