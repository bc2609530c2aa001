"""The InfluxQL curves query reads one rollup level chosen by Grafana's interval,
on the real InfluxDB 1.6.7, over a 1M-point series with a +1000 spike and a
-1000 dip written through the bridge's InfluxStore (once, for every view):
at every width from 100 to 4000 px and at random zooms, both extremes are
drawn in the window (Grafana's interval, one pixel column) where the raw
points have them or in the one before, every value drawn is a raw value, and
the query reads and returns O(width) rows."""

from __future__ import annotations

import re
from typing import Any

import httpx
import numpy as np
import pytest

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.influx.ladder import GRAFANA_INTERVALS_MS, LADDER_MS, interval_tag, plan_of_bottom
from curvestream_bridge.store.influx.store import InfluxStore
from grafana_kit import influxql_macros, interpolate_variables, panel_interval_ms, query_library
from m4_golden import load_m4_vectors, window_queries

N = 1_000_000
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SPACING_MS = 10
WIDTHS = (100, 137, 500, 1000, 1999, 4000)
SELECTION = {"project": "big", "run": ["r1"], "metric": ["train/loss"]}
MAX_FANOUT = 10  # the widest ratio between two levels of the ladder


@pytest.fixture(scope="module")
def series(influxd: Any) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    steps = np.arange(N, dtype=np.int64)
    wall_ms = BASE_MS + steps * SPACING_MS + rng.integers(0, SPACING_MS, N)
    values = np.exp(-steps / 300_000) + 0.05 * rng.standard_normal(N)
    spike, dip = (int(i) for i in rng.choice(N, 2, replace=False))
    values[spike], values[dip] = 1000.0, -1000.0
    store = InfluxStore(influxd.store_url("levels"))
    try:
        cuts = np.arange(10_000, N, 10_000)
        parts = np.split(np.arange(N), cuts)
        batches = [DecodedBatch(b"L" * 16, seq, "big", "r1",
                                [ScalarColumn("train/loss", steps[p], wall_ms[p] * 1_000_000, values[p])],
                                [], [], None, None, 0) for seq, p in enumerate(parts, start=1)]
        for i in range(0, len(batches), 20):
            store.write(batches[i:i + 20])
        bottom_ms = store._rollup.plan(("big", "r1", "train/loss"), store._db.statements)["time"].size(0) // 10**6
    finally:
        store.close()
    return {"url": influxd.url, "db": "levels", "wall_ms": wall_ms, "values": values, "spike": spike, "dip": dip,
            "bottom_ms": bottom_ms}


def views(s: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(from ms, to ms, width): the whole run at every width, then random zooms around the extremes and elsewhere."""
    lo, hi = int(s["wall_ms"][0]), int(s["wall_ms"][-1])
    out = [(lo, hi, w) for w in WIDTHS]
    rng = np.random.default_rng(5)
    for i in range(24):
        span = (hi - lo) * float(10 ** rng.uniform(-3, -0.3))
        centre = (int(s["wall_ms"][(s["spike"], s["dip"])[i % 2]]) if i % 3 else float(rng.uniform(lo, hi)))
        start = int(centre - span * rng.uniform(0.05, 0.95))
        out.append((start, int(start + span), int(rng.choice(WIDTHS))))
    return out


def influxql(s: dict[str, Any], text: str) -> list[dict[str, Any]]:
    resp = httpx.post(f"{s['url']}/query", data={"db": s["db"], "q": text, "epoch": "ms"}, timeout=120)
    resp.raise_for_status()
    (result,) = resp.json()["results"]
    assert "error" not in result, (result["error"], text)
    return result.get("series", [])


def curves_query(from_ms: int, to_ms: int, interval_ms: int) -> str:
    text = interpolate_variables(query_library()["curves_m4"]["influxql"], SELECTION)
    return influxql_macros(text, from_ms, to_ms, interval_ms)


def test_the_time_levels_are_grafanas_intervals_and_the_series_bottom_level_holds_a_few_points(series) -> None:
    assert series["bottom_ms"] in LADDER_MS
    assert 7 <= series["bottom_ms"] / SPACING_MS <= 36


def test_every_width_and_zoom_draws_both_extremes_in_their_pixel_column_from_o_width_rows(series) -> None:
    wall_ms, values = series["wall_ms"], series["values"]
    finite_values = set(values.tolist())
    checked = {"exact column": 0, "below the bottom level": 0}
    for from_ms, to_ms, width in views(series):
        interval = panel_interval_ms(from_ms, to_ms, width)
        windows = (to_ms - from_ms) // interval + 2
        answer = influxql(series, curves_query(from_ms, to_ms, interval))
        assert len(answer) == 1, (from_ms, to_ms, width)
        rows = np.array(answer[0]["values"], dtype=np.float64)
        view = (from_ms, to_ms, width, interval)
        assert len(rows) <= 4 * windows, view
        assert set(rows[:, 1].tolist()) <= finite_values, view  # real points only
        read = influxql(series, f'SELECT count("count") FROM "cs_rollup_time" WHERE "grafana_interval_ms" =~ '
                                f'/:{interval}:/ AND time >= {from_ms - interval}ms AND time <= {to_ms}ms')
        assert read and read[0]["values"][0][1] <= MAX_FANOUT * windows, view
        for i, value in ((series["spike"], 1000.0), (series["dip"], -1000.0)):
            t = int(wall_ms[i])
            if not from_ms <= t <= to_ms:
                continue
            drawn_at = set(rows[rows[:, 1] == value, 0].tolist())
            assert len(drawn_at) == 1, (view, value, drawn_at)
            if interval >= series["bottom_ms"]:
                raw_window = t // interval * interval
                assert drawn_at <= {raw_window, raw_window - interval}, (view, value, t)
                checked["exact column"] += 1
            else:  # finer than the bottom level: drawn at the start of the bottom bucket that holds it
                bucket = t // series["bottom_ms"] * series["bottom_ms"]
                assert drawn_at == {bucket // interval * interval}, (view, value, t)
                checked["below the bottom level"] += 1
    assert checked["exact column"] >= 20 and checked["below the bottom level"] >= 2, checked


def test_a_level_whose_rows_are_the_windows_is_read_as_it_is_and_every_other_one_grouped() -> None:
    """The curves query's two tag patterns split the level that answers an interval (``:N:`` in
    its tag) in two: read as it is only where each of its rows is one whole window starting at
    the row's time (the bucket a multiple of the interval), so that its first, min, max and last
    fields are what first(), min(), max() and last() would answer for that window (InfluxDB emits
    each field's values about twice as fast without GROUP BY time: bench/README.md); every other
    level grouped into windows. Every level of every series' ladder, every interval of Grafana's."""
    text = query_library()["curves_m4"]["influxql"]
    as_is, grouped = dict.fromkeys(re.findall(r'"grafana_interval_ms" =~ /([^/]+)/', text))
    assert (as_is, grouped) == ("^:$__interval_ms:", ".:$__interval_ms:")
    read_as_is = 0
    for bottom in LADDER_MS:
        plan = plan_of_bottom(bottom)
        for k, size in enumerate(plan.ladder):
            tag, level_ms = interval_tag(plan, k), size // 10**6
            for n in GRAFANA_INTERVALS_MS:
                this, other = (bool(re.search(p.replace("$__interval_ms", str(n)), tag)) for p in (as_is, grouped))
                assert this + other == (f":{n}:" in tag), (tag, n)  # exactly the level that answers n
                if this:
                    assert level_ms % n == 0, (tag, n)  # a row is a window of its own, at the row's time
                    read_as_is += 1
    assert read_as_is >= len(LADDER_MS) * 2  # each level's own interval, and 1 ms at each bottom level


# ---------------------------------------------------------------------------------------- the M4 golden vectors
GOLDEN = {"project": "golden", "metric": ["m4"]}


@pytest.fixture(scope="module")
def golden(influxd: Any) -> dict[str, Any]:
    """The golden vectors' cases written through the bridge's InfluxStore, each its own run."""
    cases = {case.name: case for case in load_m4_vectors()}
    store = InfluxStore(influxd.store_url("golden"))
    bottoms = {}
    try:
        for seq, case in enumerate((c for c in cases.values() if len(c.steps)), start=1):
            store.write(
                [
                    DecodedBatch(
                        b"G" * 16,
                        seq,
                        "golden",
                        case.name,
                        [ScalarColumn("m4", case.steps, case.walls, case.values)],
                        [],
                        [],
                        None,
                        None,
                        0,
                    )
                ]
            )
            plan = store._rollup.plan(("golden", case.name, "m4"), store._db.statements)
            bottoms[case.name] = plan["time"].size(0) // 10**6 if plan is not None else None
    finally:
        store.close()
    return {"url": influxd.url, "db": "golden", "cases": cases, "bottom_ms": bottoms}


def _windows(s: dict[str, Any], query: str, case: str, from_ms: int, to_ms: int, interval: int,
             field: str) -> dict[int, list[float]]:
    """Window start (ms) -> the values the query draws there, for the windows of [from, to)."""
    text = interpolate_variables(query_library()[query]["influxql"], {**GOLDEN, "run": [case]})
    got: dict[int, list[float]] = {}
    for series_ in influxql(s, influxql_macros(text, from_ms, to_ms, interval)):
        i = series_["columns"].index(field)
        for row in series_["values"]:
            if from_ms <= row[0] < to_ms:
                got.setdefault(row[0], []).append(row[i])
    return {t: sorted(v) for t, v in got.items()}


def test_the_curves_and_nonfinite_queries_draw_the_golden_m4_of_every_window_that_is_whole_buckets(golden) -> None:
    """Every golden query on the time axis whose columns are windows of a rollup level at least the series'
    bottom one: each window draws the column's first, minimum, maximum and last values (finite ones: the
    non-finite values of a window are counted by the non-finite query instead). A series of fewer than 64
    points has no rollups: the dashboards draw nothing for it (its queries are not checked here)."""
    checked = {"windows": 0, "nonfinite windows": 0}
    for name, case in golden["cases"].items():
        bottom = golden["bottom_ms"].get(name)
        for q, interval in window_queries(case, LADDER_MS) if bottom is not None else []:
            if interval < bottom:
                continue  # finer than the bottom level: drawn at its buckets' starts (see the test above)
            from_ms, to_ms = int(q.start), int(q.end)
            want, nonfinite = {}, {}
            for col in q.columns:
                t = from_ms + col["column"] * interval
                in_window = [i for i in range(len(case.walls)) if t <= case.walls[i] / 1e6 < t + interval]
                assert col["first"] in in_window and col["last"] in in_window, (name, q, col)
                bad = [i for i in in_window if not np.isfinite(case.values[i])]
                if bad:
                    nonfinite[t] = [float(len(bad))]
                else:
                    want[t] = sorted(float(case.values[col[k]]) for k in ("first", "min", "max", "last"))
            drawn = _windows(golden, "curves_m4", name, from_ms, to_ms, interval, "value")
            assert {t: v for t, v in drawn.items() if t in want} == want, (name, q)
            assert drawn.keys() <= want.keys() | nonfinite.keys(), (name, q)  # nothing drawn where no point is
            assert _windows(golden, "nonfinite_count", name, from_ms, to_ms, interval, "nonfinite") == nonfinite, \
                (name, q)
            checked["windows"] += len(want)
            checked["nonfinite windows"] += len(nonfinite)
    assert checked["windows"] >= 20 and checked["nonfinite windows"] >= 3, checked
