"""The time rollup levels of InfluxDB: the intervals Grafana asks for.

Grafana sends every query the panel's interval, the time range over its width
in pixels rounded to one of a few values (``GRAFANA_INTERVALS_MS``, Grafana's
``gtime.RoundInterval``), as ``$__interval_ms`` (InfluxQL) and
``v.windowPeriod`` (Flux). The time rollups' bucket sizes are taken from those
values (``LADDER_MS``, each a multiple of the one before, so the levels nest
and the bridge's own queries can combine them), and every rollup row carries a
tag ``grafana_interval_ms`` that lists the Grafana intervals its level answers:
the largest level not wider than the interval, and for intervals finer than
the bottom level of a series, its bottom level. A dashboard query selects the
rows of exactly one level with a regex on that tag, read from the series index:
for a panel of W pixels it reads at most ``W * fanout`` rows (fanout <= 5,
except 10 from 1 ms to 10 ms), whatever the size of the series.

    >>> [answered_intervals(LADDER_MS, k) for k in (0, 1, 2)]
    [[1], [10], [20, 50]]
    >>> answered_intervals(LADDER_MS[4:], 0)  # a bottom level of 200 ms also answers the finer intervals
    [1, 10, 20, 50, 100, 200, 500]
    >>> time_plan(np.arange(0, 10**9, 10**6), target=16).ladder[0] // 10**6  # a point every ms: 20 ms buckets
    20
"""

from __future__ import annotations

import itertools

import numpy as np

from curvestream_bridge.store.m4.levels import LevelPlan
from curvestream_bridge.store.m4.snap import TIME_UNITS_MS

__all__ = ["GRAFANA_INTERVALS_MS", "LADDER_MS", "answered_intervals", "interval_tag", "time_plan", "plan_of_bottom",
           "top_for_shards"]

GRAFANA_INTERVALS_MS = (
    1, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 20_000, 30_000, 60_000, 120_000, 300_000,
    600_000, 900_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
)
"""Every value of Grafana's rounded interval (its server rounds any query's interval to one of these)."""

LADDER_MS = TIME_UNITS_MS
"""The Grafana intervals that nest (each divides the next): the time rollups' bucket sizes (and the
grid of snapped columns at x = time, :mod:`..m4.snap`, so that their edges never cut a bucket)."""

assert all(b % a == 0 for a, b in itertools.pairwise(LADDER_MS)) and set(LADDER_MS) <= set(GRAFANA_INTERVALS_MS)

_MS = 1_000_000


def answered_intervals(ladder_ms: tuple[int, ...], k: int) -> list[int]:
    """The Grafana intervals (ms) that level ``k`` of a series with these levels answers."""
    lo = ladder_ms[k] if k > 0 else 0
    hi = ladder_ms[k + 1] if k + 1 < len(ladder_ms) else float("inf")
    return [g for g in GRAFANA_INTERVALS_MS if lo <= g < hi]


def interval_tag(plan: LevelPlan, k: int) -> str:
    """The ``grafana_interval_ms`` tag of level ``k``: ``:20:50:`` (colons on both
    sides, so that a query matches a whole value with ``/:$__interval_ms:/``)."""
    ladder_ms = tuple(s // _MS for s in plan.ladder)
    return ":" + ":".join(str(g) for g in answered_intervals(ladder_ms, k)) + ":"


def plan_of_bottom(bottom_ms: int, top_ms: int | None = None) -> LevelPlan:
    """The time plan whose bottom level is ``bottom_ms`` and top level at most
    ``top_ms`` (values of LADDER_MS; no top: a day).

    >>> [s // _MS for s in plan_of_bottom(120_000, 3_600_000).ladder]
    [120000, 600000, 1200000, 3600000]
    """
    if bottom_ms not in LADDER_MS:
        raise ValueError(f"{bottom_ms} ms is not a time rollup level")
    levels = [s for s in LADDER_MS[LADDER_MS.index(bottom_ms):] if top_ms is None or s <= top_ms or s == bottom_ms]
    return LevelPlan("time", 0, tuple(s * _MS for s in levels))


def top_for_shards(shard_ns: int) -> int:
    """The largest time level (ms) whose buckets fit in a shard group of ``shard_ns`` (0:
    unknown, a day): a bucket's row (stamped at the bucket's start) and its points then
    live in one shard group and expire together under a retention policy.

    >>> top_for_shards(3_600 * 10**9), top_for_shards(7 * 86_400 * 10**9), top_for_shards(0)
    (3600000, 86400000, 86400000)
    """
    fitting = [s for s in LADDER_MS if shard_ns <= 0 or s * _MS <= shard_ns]
    return fitting[-1] if fitting else LADDER_MS[0]


def time_plan(walls: np.ndarray, target: int, top_ms: int | None = None) -> LevelPlan:
    """The time plan of a series whose wall times look like ``walls``: the
    level whose buckets hold closest to ``target`` points (within the ladder's
    widest step, 2.2 times fewer or more), up to ``top_ms``."""
    xs = np.unique(np.asarray(walls, dtype=np.int64))
    gap = float(np.median(np.diff(xs))) if len(xs) > 1 else float(_MS)
    wanted = target * max(gap, 1.0) / _MS
    bottom = min([s for s in LADDER_MS if top_ms is None or s <= top_ms] or [LADDER_MS[0]],
                 key=lambda s: abs(np.log(s / wanted)))
    return plan_of_bottom(bottom, top_ms)
