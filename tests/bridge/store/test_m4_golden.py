"""The M4 golden vectors (``tests/golden/m4/vectors.json``, the definition in
``tests/m4_golden.py``) hold for the bridge's implementations: the numpy kernel
over raw points, the compiled fold of rollup rows and straddling points, and
both stores' ``series()`` (DuckDB; real InfluxDB 1.6.7) — the chart core's
``m4`` reads them in ``core/m4.test.ts``, the Grafana levels in
``tests/grafana/test_influxql_levels.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_store_support import Points, batches, opener, write_all

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.m4.kernel import m4_indices
from curvestream_bridge.store.m4.levels import LevelPlan, batch_partials, choose_base
from curvestream_bridge.store.m4.query import assemble, frame, m4_result
from m4_golden import VECTORS, M4Case, M4Query, load_m4_vectors, make_vectors, reference_query, render

CASES = load_m4_vectors()


def test_the_vectors_are_what_the_definition_gives_for_the_cases():
    assert VECTORS.read_text() == render(make_vectors()), "run: python tests/m4_golden.py"
    kinds = {case.name for case in CASES}
    assert {"nonfinite", "ties", "steps_back", "equal_x", "one_point", "empty"} <= kinds
    assert sum(not q.raw for case in CASES for q in case.queries) >= 60, "M4 answers, not only raw ones"


@pytest.mark.parametrize(("values", "width", "m4"), [
    ([0, 5, 1, 1, 1, -3, 1, 1, 1, 2], 2, [0, 1, 4, 5, 9]),  # columns 0-4 and 5-9: first, max, last | min=first, last
    ([2, 1, 1, 2], 1, [0, 1, 3]),  # the earliest of equal minima, the latest of equal maxima
    ([-0.0, 0.0, 0.0, -0.0], 1, [0, 3]),  # -0.0 equals 0.0: min is the first, max the last
    ([math.nan, 1, math.nan, math.inf, -math.inf, 2], 1, [0, 3, 4, 5]),  # first (a NaN), +Inf max, -Inf min
    ([math.nan, math.nan], 1, [0, 1]),  # a column of NaN alone: its first and last
])
def test_the_reference_is_the_definition_on_cases_worked_by_hand(values, width, m4):
    points = [(i, 1_000 * i, float(v)) for i, v in enumerate(values)]
    assert reference_query(points, "step", None, None, width)["m4"] == m4


def _in_range(case: M4Case, q: M4Query) -> np.ndarray:
    """Indices of the range's points, in key order."""
    order = case.key_order(q.x)
    x = case.x(q.x)[order]
    return order[(x >= q.start) & (x <= q.end)] if q.start is not None else order[:0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_numpy_kernel_gives_the_m4_of_every_range(case):
    for q in case.queries:
        inside = _in_range(case, q)
        picked = inside[m4_indices(case.x(q.x)[inside], case.values[inside], q.start, q.end, q.width)]
        assert picked.tolist() == q.m4, q


def _point(case: M4Case, i: int) -> tuple[int, int, float]:
    return int(case.steps[i]), int(case.walls[i]), float(case.values[i])


def _answered(res: SeriesResult) -> list[tuple[int, int, float]]:
    return list(zip(res.step.tolist(), res.wall_ns.tolist(), res.y.tolist()))


def _with_neighbours(q: M4Query, chosen: list[int]) -> list[int]:
    return ([q.before] if q.before is not None else []) + chosen + ([q.after] if q.after is not None else [])


def _expected(case: M4Case, q: M4Query, chosen: list[int]) -> list[tuple[int, int, float]]:
    return [_point(case, i) for i in _with_neighbours(q, chosen)]


def _same(got: list[tuple[int, int, float]], want: list[tuple[int, int, float]]) -> bool:
    """The same points (step, wall, value; NaN equal to NaN, -0.0 to 0.0: InfluxDB 1.6.7 keeps no sign of zero)."""
    return len(got) == len(want) and all(
        g[:2] == w[:2] and (g[2] == w[2] or (math.isnan(g[2]) and math.isnan(w[2]))) for g, w in zip(got, want))


@pytest.mark.parametrize("case", [c for c in CASES if len(c.steps)], ids=[c.name for c in CASES if len(c.steps)])
@pytest.mark.parametrize("bucket", ["small", "chosen"])
def test_the_compiled_fold_of_rollup_rows_and_points_gives_the_m4_of_every_range(case, bucket):
    for axis in ("step", "time"):
        x = case.steps if axis == "step" else case.walls
        plan = LevelPlan(axis, 1 if bucket == "small" else choose_base(axis, x, 32))
        rows = []
        order = np.argsort(case.walls, kind="stable")  # as written: batches in wall order
        for part in (p for p in np.array_split(order, 3) if len(p)):
            rows.extend(batch_partials(plan, case.steps[part], case.walls[part], case.values[part]))
        for q in (q for q in case.queries if q.x == axis):
            sq = SeriesQuery("p", "r", "k", axis, *q.asked, q.width)
            f = frame(sq, int(case.walls.min()), (int(x.min()), int(x.max())), plan)
            if q.total == 0:
                continue  # nothing to fold: the engines answer the neighbours alone (the store tests)
            got = m4_result(f, assemble(f, rows, (case.steps, case.walls, case.values)))
            assert _same(_answered(got), _expected(case, q, q.m4)), (plan, q)


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def golden_store(request, tmp_path_factory):
    store = opener(request.param, tmp_path_factory.mktemp("golden"), request)()
    for case in CASES:
        if len(case.steps):
            cut = sorted({len(case.steps) // 3, 2 * len(case.steps) // 3} - {0})  # three batches, none empty
            points = Points(case.steps, case.walls, case.values)
            write_all(store, batches(points, cut, key="m4", project="golden", run=case.name,
                                     producer=case.name.encode()), per_write=1)
    yield store
    store.close()


def _check(engine: str, case: M4Case, q: M4Query, res: SeriesResult) -> None:
    what = (engine, case.name, q)
    assert (res.raw, res.total) == (q.raw, q.total), what
    assert _same(_answered(res), _expected(case, q, q.points)), what
    if len(case.steps):
        assert (res.start, res.end) == (q.start, q.end), what
        assert res.x.tolist() == case.x(q.x)[_with_neighbours(q, q.points)].tolist(), what


def _ask(case: M4Case, q: M4Query) -> SeriesQuery:
    return SeriesQuery("golden", case.name, "m4", q.x, *q.asked, q.width)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_store_answers_every_query_as_the_definition(golden_store, case):
    for q in case.queries:
        _check(golden_store.name, case, q, golden_store.series(_ask(case, q)))


def test_each_store_answers_every_query_read_together_as_the_definition(golden_store):
    asked = [(case, q) for case in CASES for q in case.queries]
    for (case, q), res in zip(asked, golden_store.series_many([_ask(case, q) for case, q in asked]), strict=True):
        _check(golden_store.name, case, q, res)
