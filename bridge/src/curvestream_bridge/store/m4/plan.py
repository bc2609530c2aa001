"""Query planning: pixel columns in integer x, and which rollup buckets cover them.

A query asks for ``width`` columns over ``[start, end]`` in x units (steps,
ms since the epoch, or seconds since the run's start). Points live at integer
positions (step, or wall ns). Column boundaries are found in integers by
binary search on exactly the float formula of :func:`.m4.pixel_columns`, so a
point falls in the same column here as in the reference.

Each column ``[a, b)`` is then covered by maximal aligned buckets (the
segment-tree decomposition): bottom buckets inside it, then at each level up
the buckets up to the next aligned edge, and whatever the top level holds in
between. What is left are the two *straddling* bottom buckets at its edges:
their raw points are read. Per column that is at most ``2*(fanout-1)``
buckets per level and two bottom buckets of raw points.

Two more intervals ride along: ``before`` (everything left of the range) and
``after`` (everything right of it), whose last and first points are the
neighbours a zoomed line is drawn to.

    >>> iv = Intervals.of(np.array([3, 100]))
    >>> p = plan_pieces(iv, LevelPlan("step", base=3))
    >>> p.ranges[0].tolist()  # [first bucket, end bucket, interval]: 8..63 and 64..95 for [3, 100)
    [[1, 8, 1], [8, 12, 1], [13, 16, 2]]
    >>> p.keys(0)[:9].tolist()
    [1, 2, 3, 4, 5, 6, 7, 8, 9]
    >>> p.straddlers.tolist()
    [0, 12]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from curvestream_bridge.store.m4.kernel import pixel_columns
from curvestream_bridge.store.m4.levels import LevelPlan

__all__ = ["X_NEG", "X_POS", "AxisScale", "Intervals", "Pieces", "plan_pieces", "column_intervals"]

X_NEG = -(1 << 62)
X_POS = 1 << 62


@dataclasses.dataclass(frozen=True)
class AxisScale:
    """How an integer position (step, wall ns) reads in the query's x units."""

    axis: str  # step | time | relative
    origin: int = 0

    def x(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.int64)
        if self.axis == "step":
            return t.astype(np.float64)
        if self.axis == "time":
            return t / 1e6
        return (t - self.origin) / 1e9

    def positions(self, values: np.ndarray, lo: int = X_NEG, hi: int = X_POS) -> np.ndarray:
        """About the integer positions whose x are ``values`` (the inverse of :meth:`x`, in
        floats), clipped to ``[lo, hi]``: a guess to search from, not an answer."""
        scale = {"step": 1.0, "time": 1e6, "relative": 1e9}[self.axis]
        t = np.asarray(values, dtype=np.float64) * scale + (self.origin if self.axis == "relative" else 0)
        return np.clip(np.nan_to_num(t, nan=float(lo)), lo, hi).astype(np.int64)

    def first_at_or_after(self, value: float) -> int:
        """The smallest integer position whose x is >= value."""
        return _search(lambda t: self.x(t) >= value, self._guess(value))

    def last_at_or_before(self, value: float) -> int:
        return _search(lambda t: self.x(t) > value, self._guess(value)) - 1

    def _guess(self, value: float) -> int:
        return int(self.positions(np.array([value]))[0])


def _search(pred: Callable[[np.ndarray], np.ndarray], guess: int) -> int:
    """Smallest t in [X_NEG, X_POS] with pred(t) true (pred monotone), X_POS if none."""
    lo, hi = guess - 4096, guess + 4096
    if pred(np.array([lo]))[0] or not pred(np.array([hi]))[0]:
        lo, hi = X_NEG, X_POS
    while hi - lo > 1:  # invariant: pred(lo) false (or lo == X_NEG), pred(hi) true (or hi == X_POS)
        mid = (lo + hi) // 2
        if pred(np.array([mid]))[0]:
            hi = mid
        else:
            lo = mid
    return hi if not pred(np.array([lo]))[0] else lo


def column_intervals(scale: AxisScale, lo: int, hi: int, start: float, end: float, width: int) -> np.ndarray:
    """Boundaries ``b_0=lo .. b_width=hi+1``: column c holds ``b_c <= t < b_{c+1}``.

    ``b_c`` is the first integer in ``[lo, hi+1]`` whose column is >= c
    (columns may be empty)."""
    k = np.arange(1, width, dtype=np.int64)
    top = hi + 1

    def cols(t: np.ndarray) -> np.ndarray:
        return pixel_columns(scale.x(t), start, end, width)

    # a bracket around where x crosses column k's left edge, kept only where it holds b_k (the search needs
    # no more): a few steps instead of ~log2(hi - lo) for all but columns whose guess was off
    guess = scale.positions(start + k * ((end - start) / width), lo, top)
    slack = 2 + (np.abs(guess) >> 40)  # the inverse's float error (ns positions near 2**60: ~1e6)
    left, right = np.clip(guess - slack, lo, top), np.clip(guess + slack, lo, top)
    left = np.where((left == lo) | (cols(left - 1) < k), left, lo)
    right = np.where((right == top) | (cols(right) >= k), right, top)
    for _ in range(70):  # vectorized binary search: cols are monotone in t
        if not np.any(right - left > 0):
            break
        mid = left + (right - left) // 2
        ok = cols(mid) >= k
        right = np.where(ok, mid, right)
        left = np.where(ok, left, mid + 1)
    return np.concatenate(([lo], right, [hi + 1])).astype(np.int64)


@dataclasses.dataclass
class Intervals:
    """Consecutive half-open intervals ``[edges[i], edges[i+1])``; by
    convention interval 0 is ``before``, the last one ``after``."""

    edges: np.ndarray

    @classmethod
    def of(cls, column_edges: np.ndarray) -> Intervals:
        return cls(np.concatenate(([X_NEG], column_edges, [X_POS])).astype(np.int64))

    def __len__(self) -> int:
        return len(self.edges) - 1


@dataclasses.dataclass
class Pieces:
    """For each level, rows ``[first_bucket, end_bucket, interval]`` of the
    bucket ranges that are pieces of an interval (the top level's ranges may be
    huge: read all its rows instead); and the straddling bottom buckets."""

    plan: LevelPlan
    ranges: dict[int, np.ndarray]
    straddlers: np.ndarray

    def keys(self, k: int) -> np.ndarray:
        """The bucket numbers of level k's pieces (not the top level)."""
        r = self.ranges[k]
        if len(r) == 0:
            return np.zeros(0, dtype=np.int64)
        lens = r[:, 1] - r[:, 0]
        offsets = np.cumsum(lens) - lens
        return np.repeat(r[:, 0], lens) + np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(offsets, lens)

    def interval_of(self, k: int, buckets: np.ndarray) -> np.ndarray:
        """Interval of each bucket of level k, -1 when it is no piece."""
        r = self.ranges[k]
        if len(r) == 0:
            return np.full(len(buckets), -1, dtype=np.int64)
        i = np.searchsorted(r[:, 0], buckets, side="right") - 1
        ok = (i >= 0) & (buckets < r[np.maximum(i, 0), 1])
        return np.where(ok, r[np.maximum(i, 0), 2], -1)


def plan_pieces(intervals: Intervals, plan: LevelPlan) -> Pieces:
    edges = intervals.edges
    a, b = edges[:-1].copy(), edges[1:].copy()
    ids = np.arange(len(a), dtype=np.int64)
    s0 = plan.size(plan.k0)
    inner = edges[1:-1]  # the sentinels that bound ``before`` and ``after`` cut nothing: no point lies there
    straddlers = np.unique(np.floor_divide(inner[np.floor_divide(inner, s0) * s0 != inner], s0))
    lo = -np.floor_divide(-a, s0) * s0  # ceil to the bottom grid
    hi = np.floor_divide(b, s0) * s0
    hi = np.maximum(hi, lo)
    ranges: dict[int, np.ndarray] = {}
    for k in plan.levels:
        size = plan.size(k)
        if k == plan.top:
            rows = np.stack([lo // size, hi // size, ids], axis=1)
            ranges[k] = rows[rows[:, 1] > rows[:, 0]]
            break
        up = plan.size(k + 1)
        lo2 = np.minimum(-np.floor_divide(-lo, up) * up, hi)
        hi2 = np.maximum(np.floor_divide(hi, up) * up, lo2)
        left = np.stack([lo // size, lo2 // size, ids], axis=1)
        right = np.stack([hi2 // size, hi // size, ids], axis=1)
        rows = np.concatenate([left, right])
        rows = rows[rows[:, 1] > rows[:, 0]]
        ranges[k] = rows[np.argsort(rows[:, 0], kind="stable")]
        lo, hi = lo2, hi2
    return Pieces(plan, ranges, straddlers)
