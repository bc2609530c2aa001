"""The engine-independent rollup core, in memory: any batching of the points,
rolled up and read back through the column decomposition, gives exactly the
M4 of the raw points (the reference of store/m4.py), for every x axis."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_store_support import Points, assert_same, curve, reference

from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.m4.agg import FIRST, LAST, MAX, MIN, M4Agg, merge
from curvestream_bridge.store.m4.kernel import m4_indices, pixel_columns
from curvestream_bridge.store.m4.levels import LevelPlan, batch_partials, choose_base, many_partials
from curvestream_bridge.store.m4.plan import X_NEG, X_POS, AxisScale, Intervals, column_intervals, plan_pieces
from curvestream_bridge.store.m4.query import assemble, frame, m4_result, raw_result


def rolled_up(points: Points, axis: str, cuts: np.ndarray) -> tuple[LevelPlan, list]:
    x = points.steps if axis == "step" else points.walls
    plan = LevelPlan(axis, choose_base(axis, x[:256], 32))
    rows = []
    for part in np.split(np.argsort(points.walls, kind="stable"), cuts):
        rows.extend(batch_partials(plan, points.steps[part], points.walls[part], points.values[part]))
    return plan, rows


def answer(q: SeriesQuery, points: Points, plan: LevelPlan, rows: list):
    xs = points.steps if q.x == "step" else points.walls
    f = frame(q, int(points.walls.min()), (int(xs.min()), int(xs.max())), plan)
    return m4_result(f, assemble(f, rows, (points.steps, points.walls, points.values)))


@pytest.mark.parametrize("seed", range(12))
def test_any_batching_reads_back_exactly_the_m4_of_the_raw_points(seed):
    rng = np.random.default_rng(seed)
    x = ("step", "time", "relative")[seed % 3]
    points = curve(rng, int(rng.integers(2_000, 30_000)), regress=seed % 2 == 0)
    cuts = np.sort(rng.choice(np.arange(1, len(points)), size=int(rng.integers(1, 40)), replace=False))
    plan, rows = rolled_up(points, "step" if x == "step" else "time", cuts)
    ref_all = reference(SeriesQuery("p", "r", "k", x, None, None, 10), points)
    checked = 0
    for _ in range(12):
        width = int(rng.choice([1, 2, 7, 100, 137, 1000]))
        if rng.random() < 0.5:
            q = SeriesQuery("p", "r", "k", x, None, None, width)
        else:
            a, b = np.sort(rng.uniform(ref_all.start - 10, ref_all.end + 10, 2))
            q = SeriesQuery("p", "r", "k", x, float(a), float(b), width)
        exp = reference(q, points)
        if exp.raw:
            continue
        assert_same(answer(q, points, plan, rows), exp, repr(q))
        checked += 1
    assert checked > 0


def test_column_edges_put_every_integer_in_the_same_column_as_the_float_formula():
    rng = np.random.default_rng(3)
    for axis, origin in (("step", 0), ("time", 0), ("relative", 1_700_000_000_123_456_789)):
        scale = AxisScale(axis, origin)
        t = np.sort(rng.integers(1_700_000_000_000_000_000, 1_700_000_100_000_000_000, 20_000))
        if axis == "step":
            t = np.sort(rng.integers(0, 10_000_000, 20_000))
        lo, hi = int(t[10]), int(t[-10])
        start, end = float(scale.x(np.array([lo]))[0]), float(scale.x(np.array([hi]))[0])
        width = 997
        edges = column_intervals(scale, lo, hi, start, end, width)
        inside = t[(t >= lo) & (t <= hi)]
        assert np.array_equal(np.searchsorted(edges, inside, side="right") - 1,
                              pixel_columns(scale.x(inside), start, end, width))


def test_pieces_and_straddling_buckets_cover_each_column_exactly_once():
    plan = LevelPlan("step", base=3)
    edges = np.array([-5, 3, 100, 4_000, 4_001, 300_000, 10_000_000])
    intervals = Intervals.of(edges)
    pieces = plan_pieces(intervals, plan)
    covered = {}  # interval -> list of [a, b) ranges
    for k in plan.levels:
        size = plan.size(k)
        for first, end, iv in pieces.ranges[k].tolist():
            covered.setdefault(iv, []).append((max(first * size, X_NEG), min(end * size, X_POS)))
    s0 = plan.size(0)
    for q in pieces.straddlers.tolist():
        a, b = q * s0, (q + 1) * s0
        for iv in range(len(intervals)):
            lo, hi = max(a, intervals.edges[iv]), min(b, intervals.edges[iv + 1])
            if lo < hi:
                covered.setdefault(iv, []).append((lo, hi))
    for iv in range(len(intervals)):
        parts = sorted(covered.get(iv, []))
        assert parts[0][0] == intervals.edges[iv] and parts[-1][1] == intervals.edges[iv + 1]
        assert all(p[1] == n[0] for p, n in itertools.pairwise(parts)), (iv, parts)


def test_merging_keeps_the_earliest_of_equal_minima_and_the_latest_of_equal_maxima():
    pts = M4Agg.from_points(np.array([5, 1, 9, 3]), np.array([50, 10, 90, 30]), np.array([2.0, 2.0, -1.0, -1.0]))
    m = merge(pts, np.zeros(4, dtype=np.int64), 1, "step")
    assert m.point(MIN, 0) == (3, 30, -1.0)
    assert m.point(MAX, 0) == (5, 50, 2.0)


@pytest.mark.parametrize("axis", ["step", "time"])
def test_the_partials_of_several_series_at_once_are_those_of_each_series_alone(axis):
    rng = np.random.default_rng(21)
    plans, cols = [], []
    for i in range(5):
        pts = curve(rng, int(rng.integers(1, 3_000)), regress=bool(i % 2))
        order = rng.permutation(len(pts)) if i == 2 else np.argsort(pts.walls, kind="stable")
        cids = np.arange(len(pts), dtype=np.int64) // 7 + 100 * i
        plans.append(LevelPlan(axis, int(rng.integers(0, 5)) + (0 if axis == "step" else 20)))
        cols.append((pts.steps[order], pts.walls[order], pts.values[order], cids[order]))
    together = list(many_partials(plans, *[[c[j] for c in cols] for j in range(4)]))
    for i, (plan, col) in enumerate(zip(plans, cols)):
        for (k, buckets, agg), (k2, series, buckets2, agg2) in zip(batch_partials(plan, *col), together):
            mine = np.flatnonzero(series == i)
            assert k == k2 and np.array_equal(buckets, buckets2[mine])
            got = agg2.take(mine)
            for field in ("n", "step", "wall", "has", "c0", "c1"):
                assert np.array_equal(getattr(agg, field), getattr(got, field)), (k, field)
            assert np.array_equal(np.where(agg.has, agg.value, 0), np.where(got.has, got.value, 0), equal_nan=True)


def _m4_by_column(x: np.ndarray, y: np.ndarray, start: float, end: float, width: int) -> list[int]:
    """M4 spelled out column by column: the first and last point, the earliest
    minimum and the latest maximum (NaN left out), the first NaN."""
    cols = pixel_columns(x, start, end, width)
    picks: set[int] = set()
    for c in np.unique(cols):
        idx = np.flatnonzero(cols == c).tolist()
        picks |= {idx[0], idx[-1]}
        values = [(float(y[i]), i) for i in idx if not np.isnan(y[i])]
        if values:
            lo, hi = min(v for v, _ in values), max(v for v, _ in values)
            picks |= {min(i for v, i in values if v == lo), max(i for v, i in values if v == hi)}
        nans = [i for i in idx if np.isnan(y[i])]
        if nans:
            picks.add(nans[0])
    return sorted(picks)


@pytest.mark.parametrize("seed", range(6))
def test_the_m4_kernel_keeps_per_column_first_last_earliest_minimum_latest_maximum_and_first_nan(seed):
    rng = np.random.default_rng(seed)
    hostile = np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.nan, np.inf, -np.inf])
    for _ in range(200):
        n, width = int(rng.integers(1, 300)), int(rng.integers(1, 40))
        x = np.sort(rng.integers(0, 500, n)).astype(np.float64)
        y = rng.choice(hostile, n) if rng.random() < 0.5 else rng.normal(size=n).round(1)
        start, end = float(x[0]) - rng.integers(0, 3), float(x[-1]) + rng.integers(0, 3)
        assert m4_indices(x, y, start, end, width).tolist() == _m4_by_column(x, y, start, end, width)


@pytest.mark.parametrize("seed", range(4))
def test_a_range_answered_from_its_raw_points_past_4_per_column_is_their_m4_as_from_rollups(seed):
    """What an engine with cheap raw reads (DuckDB's RAW_BELOW) answers from the
    points of a range holding more than 4 per column: the rollup path's answer."""
    rng = np.random.default_rng(seed)
    x = ("step", "time", "relative")[seed % 3]
    points = curve(rng, int(rng.integers(5_000, 20_000)), regress=seed % 2 == 0)
    cuts = np.sort(rng.choice(np.arange(1, len(points)), size=8, replace=False))
    plan, rows = rolled_up(points, "step" if x == "step" else "time", cuts)
    ref_all = reference(SeriesQuery("p", "r", "k", x, None, None, 10), points)
    checked = 0
    for _ in range(10):
        a, b = np.sort(rng.uniform(ref_all.start, ref_all.end, 2))
        q = SeriesQuery("p", "r", "k", x, float(a), float(b), int(rng.choice([7, 40, 137])))
        xs = points.steps if q.x == "step" else points.walls
        f = frame(q, int(points.walls.min()), (int(xs.min()), int(xs.max())), plan)
        agg = assemble(f, rows, (points.steps, points.walls, points.values))
        from_rollups = m4_result(f, agg)
        if from_rollups.total <= 4 * q.width:
            continue
        got = raw_result(f, points.steps, points.walls, points.values,
                         agg.point(LAST, 0), agg.point(FIRST, len(agg) - 1))
        assert not got.raw
        assert_same(got, from_rollups, repr(q))
        checked += 1
    assert checked > 0
