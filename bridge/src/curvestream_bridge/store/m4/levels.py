"""Rollup levels: which buckets exist, and the partial aggregates of one batch.

Level ``k`` (0 .. LEVELS-1) cuts the x axis into aligned buckets of
``S_k = 2**base * FANOUT**k`` units (steps, or nanoseconds for x = time):
bucket ``b`` holds ``b*S_k <= x < (b+1)*S_k``. A plan may instead list its
sizes (``ladder``), each a multiple of the one before (InfluxDB's time
rollups use the intervals Grafana asks for, see :mod:`..influx.ladder`). ``base`` is chosen once per
series and axis from the spacing of its first points so that a bottom bucket
holds about ``target`` points (within a factor of √2) (a series logged every step and one logged every
100 steps both get bottom buckets of a few dozen points).

Each batch adds one *partial* aggregate per bucket it touches at every level
(rows of different batches for the same bucket are merged when read), so a
write costs about ``n/S_0 * FANOUT/(FANOUT-1) + LEVELS`` rows per axis.

    >>> plan = LevelPlan("step", base=5)
    >>> plan.size(0), plan.size(1), plan.top
    (32, 256, 7)
    >>> choose_base("step", np.arange(0, 1000, 1), target=32)
    5
    >>> choose_base("step", np.arange(0, 100_000, 100), target=32)
    12
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from curvestream_bridge.store.m4.agg import M4Agg, merge_runs, points_runs

__all__ = ["FANOUT", "LEVELS", "MIN_POINTS", "AXES", "LevelPlan", "choose_base", "batch_partials", "order_by_x",
           "in_x_order", "many_partials", "series_x_order"]

FANOUT = 8
LEVELS = 8
MIN_POINTS = 64
"""A series gets rollups once it holds this many points (before that, queries read its raw points)."""
AXES = ("step", "time")
MAX_BASE = 38  # 2**(38+21) stays within the ±2**62 sentinels of .decompose


@dataclasses.dataclass(frozen=True)
class LevelPlan:
    axis: str  # "step" | "time" (relative time uses the time rollups)
    base: int  # log2 of the bottom bucket size (when there is no ladder)
    ladder: tuple[int, ...] = ()  # the bucket sizes, bottom first, each dividing the next

    k0 = 0

    @property
    def top(self) -> int:
        return len(self.ladder) - 1 if self.ladder else LEVELS - 1

    @property
    def levels(self) -> range:
        return range(self.top + 1)

    def size(self, k: int) -> int:
        if self.ladder:
            return self.ladder[k]
        return (1 << self.base) * FANOUT ** k

    def bottom_bucket(self, x: np.ndarray) -> np.ndarray:
        """The bottom bucket of each position."""
        if self.ladder:
            return np.floor_divide(x, self.ladder[0])
        return np.right_shift(x, self.base)  # floor division by a power of two


def choose_base(axis: str, x: np.ndarray, target: int) -> int:
    """log2 of the bottom bucket size for a series whose x values look like ``x``."""
    xs = np.unique(np.asarray(x, dtype=np.int64))
    gaps = np.diff(xs)
    gap = float(np.median(gaps)) if len(gaps) else 1.0
    base = int(np.rint(np.log2(max(target * max(gap, 1.0), 1.0))))
    return int(min(max(base, 0), MAX_BASE))


def order_by_x(axis: str, step: np.ndarray, wall: np.ndarray) -> np.ndarray:
    """Indices that sort points in x order: (step, wall) or wall."""
    if axis == "step":
        return np.lexsort((wall, step))
    return np.argsort(wall, kind="stable")


def in_x_order(axis: str, step: np.ndarray, wall: np.ndarray) -> bool:
    """Whether points are already in the order :func:`order_by_x` gives."""
    if axis == "time":
        return bool(np.all(wall[1:] >= wall[:-1]))
    ds = np.diff(step)
    return bool(np.all((ds > 0) | ((ds == 0) & (wall[1:] >= wall[:-1]))))


def batch_partials(plan: LevelPlan, step: np.ndarray, wall: np.ndarray, value: np.ndarray,
                   cid: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray, M4Agg]]:
    """``(k, buckets, aggregates)`` for every level, for the points of one batch
    of one series (any order)."""
    step, wall = np.asarray(step, dtype=np.int64), np.asarray(wall, dtype=np.int64)
    value = np.asarray(value, dtype=np.float64)
    order = None if in_x_order(plan.axis, step, wall) else order_by_x(plan.axis, step, wall)
    if order is not None:  # a batch usually comes in x order: checking costs a fraction of sorting
        step, wall, value = step[order], wall[order], value[order]
    x = step if plan.axis == "step" else wall
    buckets = np.floor_divide(x, plan.size(plan.k0))
    agg: M4Agg | None = None
    for k in plan.levels:
        if k > plan.k0:
            buckets = np.floor_divide(buckets, plan.size(k) // plan.size(k - 1))
        starts = np.flatnonzero(np.concatenate(([True], buckets[1:] != buckets[:-1])))
        if agg is None:  # the bottom level straight from the points: no row per point (most of a write's time)
            agg = points_runs(step, wall, value, starts)
            if cid is not None:
                cids = np.asarray(cid, dtype=np.int64)
                cids = cids if order is None else cids[order]
                agg.c0, agg.c1 = np.minimum.reduceat(cids, starts), np.maximum.reduceat(cids, starts)
        else:
            agg = merge_runs(agg, starts)
        buckets = buckets[starts]
        yield k, buckets, agg


def series_x_order(axis: str, series: np.ndarray, step: np.ndarray, wall: np.ndarray) -> np.ndarray | None:
    """Indices that put the points of several series (``series``: each point's, in
    runs) each in x order, ties as they came; None when they are already."""
    new_series = series[1:] != series[:-1]
    if axis == "time":
        ordered = bool(np.all(new_series | (wall[1:] >= wall[:-1])))
    else:
        ds = np.diff(step)
        ordered = bool(np.all(new_series | (ds > 0) | ((ds == 0) & (wall[1:] >= wall[:-1]))))
    if ordered:
        return None
    return np.lexsort((wall, step, series)) if axis == "step" else np.lexsort((wall, series))


def many_partials(plans: list[LevelPlan], step: list[np.ndarray], wall: list[np.ndarray], value: list[np.ndarray],
                  cid: list[np.ndarray]) -> Iterator[tuple[int, np.ndarray, np.ndarray, M4Agg]]:
    """:func:`batch_partials` of several series at once (their plans on one
    axis, without ladders): ``(k, series, buckets, aggregates)`` for every
    level, ``series`` the index of each row's series in the lists.

    One pass over all series: a run ends where the bucket or the series
    changes, so the numpy calls per write do not grow with its series."""
    axis = plans[0].axis
    assert all(not p.ladder and p.axis == axis for p in plans)
    lens = np.array([len(x) for x in step], np.int64)
    s, w, c = (np.concatenate(cols).astype(np.int64, copy=False) for cols in (step, wall, cid))
    v = np.concatenate(value).astype(np.float64, copy=False)
    series = np.repeat(np.arange(len(plans), dtype=np.int64), lens)
    base = np.repeat(np.array([p.base for p in plans], np.int64), lens)
    order = series_x_order(axis, series, s, w)
    if order is not None:
        s, w, v, c = s[order], w[order], v[order], c[order]
    buckets = np.right_shift(s if axis == "step" else w, base)  # floor division by 2**base
    agg: M4Agg | None = None
    for k in range(LEVELS):
        if k > 0:
            buckets = np.floor_divide(buckets, FANOUT)
        change = (buckets[1:] != buckets[:-1]) | (series[1:] != series[:-1])
        starts = np.flatnonzero(np.concatenate(([True], change)))
        if agg is None:
            agg = points_runs(s, w, v, starts)
            agg.c0, agg.c1 = np.minimum.reduceat(c, starts), np.maximum.reduceat(c, starts)
        else:
            agg = merge_runs(agg, starts)
        buckets, series = buckets[starts], series[starts]
        yield k, series, buckets, agg
