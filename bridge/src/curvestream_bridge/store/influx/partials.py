"""The partial aggregates of a write's points for every series at once
(:func:`.m4.levels.batch_partials` of each series, in one pass).

InfluxDB's plans differ from series to series (step bases, and time ladders of
Grafana intervals of different lengths), so each row carries its series' bucket
size ratio from one level to the next; a series whose ladder ends drops out of
the levels above its top. A run of rows ends where the bucket or the series
changes, so the numpy calls of a write do not grow with its series (a write of
a fleet holds hundreds of series of a few dozen points each).

    >>> from curvestream_bridge.store.m4.levels import LevelPlan, batch_partials
    >>> plans = [LevelPlan("time", 0, (5, 10, 40)), LevelPlan("time", 0, (10, 20))]
    >>> steps = [np.arange(6), np.arange(4)]
    >>> walls = [np.arange(6) * 5, np.array([0, 12, 25, 31])]
    >>> values = [np.arange(6.0), np.array([1.0, np.nan, -2.0, 3.0])]
    >>> parts, levels = series_partials(plans, steps, walls, values)
    >>> sorted(parts)
    [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    >>> parts[(1, 0)][0].tolist(), parts[(1, 1)][0].tolist()
    ([0, 1, 2, 3], [0, 1])
    >>> all(np.array_equal(parts[(i, k)][0], b) and np.array_equal(parts[(i, k)][1].n, agg.n)
    ...     and np.array_equal(parts[(i, k)][1].value, agg.value, equal_nan=True)
    ...     for i in (0, 1) for k, b, agg in batch_partials(plans[i], steps[i], walls[i], values[i]))
    True
"""

from __future__ import annotations

import numpy as np

from curvestream_bridge.store.m4.agg import M4Agg, merge_runs, points_runs
from curvestream_bridge.store.m4.levels import LevelPlan, series_x_order

__all__ = ["series_partials", "Level"]


Level = tuple[M4Agg, list[int]]
"""The aggregates of one level for all series, and where each series' rows start
(series ``i``: rows ``bounds[i]:bounds[i + 1]``)."""


def series_partials(plans: list[LevelPlan], step: list[np.ndarray], wall: list[np.ndarray], value: list[np.ndarray]
                    ) -> tuple[dict[tuple[int, int], tuple[np.ndarray, M4Agg]], dict[int, Level]]:
    """For each series ``i`` (its plan, all on one axis, and its points in any order)
    and each level ``k`` of its plan: ``(i, k) -> (buckets, aggregates)``, the
    buckets sorted, as :func:`.m4.levels.batch_partials` gives them; and per level
    the array whose views (disjoint per series) those aggregates are, so that the
    rows of every series can be changed or turned into text at once."""
    out: dict[tuple[int, int], tuple[np.ndarray, M4Agg]] = {}
    levels: dict[int, Level] = {}
    if not plans:
        return out, levels
    axis = plans[0].axis
    lens = np.array([len(x) for x in step], np.int64)
    s = np.concatenate(step).astype(np.int64, copy=False)
    w = np.concatenate(wall).astype(np.int64, copy=False)
    v = np.concatenate(value).astype(np.float64, copy=False)
    series = np.repeat(np.arange(len(plans), dtype=np.int64), lens)
    order = series_x_order(axis, series, s, w)
    if order is not None:  # each series in x order: one sort for all of them
        s, w, v = s[order], w[order], v[order]
    tops = np.array([p.top for p in plans], np.int64)
    sizes = np.ones((len(plans), int(tops.max()) + 1), np.int64)
    for i, p in enumerate(plans):
        sizes[i, :p.top + 1] = [p.size(k) for k in p.levels]
    buckets = np.floor_divide(s if axis == "step" else w, sizes[series, 0])
    agg: M4Agg | None = None
    for k in range(sizes.shape[1]):
        if k > 0:
            alive = tops[series] >= k
            if not alive.all():
                assert agg is not None  # made at k = 0
                keep = np.flatnonzero(alive)
                agg, buckets, series = agg.take(keep), buckets[keep], series[keep]
            if len(series) == 0:
                break
            buckets = np.floor_divide(buckets, sizes[series, k] // sizes[series, k - 1])
        change = (buckets[1:] != buckets[:-1]) | (series[1:] != series[:-1])
        starts = np.flatnonzero(np.concatenate(([True], change)))
        agg = points_runs(s, w, v, starts) if agg is None else merge_runs(agg, starts)
        buckets, series = buckets[starts], series[starts]
        bounds = np.searchsorted(series, np.arange(len(plans) + 1)).tolist()
        levels[k] = (agg, bounds)
        for i in range(len(plans)):
            a, b = bounds[i], bounds[i + 1]
            if a < b:
                out[(i, k)] = (buckets[a:b], agg.take(slice(a, b)))
    return out, levels
