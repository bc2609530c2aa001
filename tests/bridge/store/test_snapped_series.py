"""Snapped columns (``SeriesQuery.snap``): the range widened to whole grid
units, by at most 1/16, every column edge on the grid; answered by InfluxDB
from rollup rows kept in the bridge's memory, exactly, whoever writes the
series meanwhile; and by InfluxDB and DuckDB with the same points (the
``/series`` answers, JSON and binary) alike, pixel for pixel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_m4_spikes import raster
from test_store_support import T0, Points, assert_same, batches, influx_store, reference, write_all

from bridge_client import served_bridge
from curvestream_bridge import series_binary
from curvestream_bridge.jsonnum import json_floats
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.m4.plan import AxisScale, column_intervals
from curvestream_bridge.store.m4.snap import FLOAT_SLACK_NS, MIN_UNITS, TIME_UNITS_MS, snap


@pytest.mark.parametrize("axis", ["step", "time"])
def test_a_snapped_range_holds_the_asked_one_is_at_most_a_sixteenth_wider_and_puts_every_edge_on_the_grid(axis):
    rng = np.random.default_rng(3)
    scale = AxisScale(axis)
    base = 0 if axis == "step" else T0
    for _ in range(300):
        width = int(rng.integers(50, 4000))
        per = 10 ** rng.uniform(0.5, 4.5) * (1 if axis == "step" else 1e6)  # positions per column
        lo = base + int(rng.integers(-10**9, 10**9)) * (1 if axis == "step" else 1000)
        hi = lo + int(per * width * rng.uniform(0.5, 1.5))
        s = snap(scale, lo, hi, width)
        if s is None:
            assert (hi + 1 - lo) / width <= MIN_UNITS * (1 if axis == "step" else 1e6), (lo, hi, width)
            continue
        a, b = scale.first_at_or_after(s.start), scale.last_at_or_before(s.end)
        slack = 0 if axis == "step" else FLOAT_SLACK_NS  # the float ms of an end lie ~250 ns apart
        assert a <= lo + slack and b >= hi - slack
        assert s.column % s.unit == 0 and s.lo % s.unit == 0 and s.column // s.unit > MIN_UNITS
        if axis == "time":
            assert s.unit // 1_000_000 in TIME_UNITS_MS
        assert (b + 1 - a) <= (hi + 1 - lo) * (1 + 1 / MIN_UNITS) + s.unit + 2 * slack
        assert snap(scale, a, b, width) == s  # a snapped range snaps to itself
        edges = column_intervals(scale, a, b, s.start, s.end, width)
        grid = s.lo + np.arange(width + 1) * s.column
        if axis == "step":
            assert np.array_equal(edges, grid)
        else:  # found by the float formula of ms since the epoch: within its ~250 ns of the grid
            assert np.abs(edges - grid).max() <= 1024


def test_relative_time_and_short_ranges_are_not_snapped():
    assert snap(AxisScale("relative", T0), T0, T0 + 10**12, 1000) is None
    assert snap(AxisScale("step"), 0, 16 * 1000 - 1, 1000) is None
    assert snap(AxisScale("step"), 0, 16 * 1000, 1000) is not None


def _ramp(n: int, seed: int, near_edges: bool = False) -> Points:
    """A noisy ramp a point a ms (or, ``near_edges``, pairs of points 1 ns on either side of
    whole milliseconds: every time grid point has points within the float error around it),
    with NaN, ±Inf, a spike and a dip."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n, dtype=np.int64)
    walls = T0 + steps * 1_000_000 + (rng.integers(0, 900_000, n) if not near_edges else 0)
    if near_edges:
        walls = walls + np.where(steps % 2 == 0, -1, 0)
    values = np.cumsum(rng.standard_normal(n))
    values[rng.integers(0, n, 5)] = np.nan
    values[int(rng.integers(0, n))], values[int(rng.integers(0, n))] = np.inf, -np.inf
    values[int(rng.integers(0, n))], values[int(rng.integers(0, n))] = 1e6, -1e6
    return Points(steps, walls, values)


def _views(points: Points, x: str, rng: np.random.Generator, count: int) -> list[SeriesQuery]:
    lo, hi = (points.steps.min(), points.steps.max()) if x == "step" else (points.walls.min() / 1e6,
                                                                           points.walls.max() / 1e6)
    out = [SeriesQuery("proj", "run", "loss", x, None, None, int(w), snap=True) for w in (120, 800)]
    for _ in range(count):
        span = (hi - lo) * 10 ** rng.uniform(-2.5, 0)
        start = lo + rng.uniform(-0.05, 1) * ((hi - lo) - span)
        out.append(SeriesQuery("proj", "run", "loss", x, float(start), float(start + span),
                               int(rng.integers(60, 1500)), snap=True))
    return out


class _Counted:
    """The statements a store sends to InfluxDB."""

    def __init__(self, store: Any) -> None:
        self.sent: list[str] = []
        run = store._db.statements

        def counted(stmts: list[str]) -> Any:
            self.sent.extend(stmts)
            return run(stmts)

        store._db.statements = counted

    def take(self) -> list[str]:
        out, self.sent = self.sent, []
        return out


def test_influxdb_folds_snapped_views_from_kept_rows_and_reads_only_a_series_top_rows_again(influxd):
    points = _ramp(300_000, 5)
    store = influx_store(influxd, "snapped_kept", writer="a")
    try:
        write_all(store, batches(points, np.arange(20_000, len(points), 20_000)), per_write=5)
        sent = _Counted(store)
        rng = np.random.default_rng(8)
        for x in ("step", "time"):
            for q in _views(points, x, rng, 12):
                assert_same(store.series(q), reference(q, points), repr(q))
                first = sent.take()
                assert_same(store.series(q), reference(q, points), repr(q))
                again = sent.take()
                if q.start is None:  # the whole run: its kept rows alone, after its top rows
                    assert len(again) == 1 and '"k" = ' in again[0] and "GROUP BY \"w\"" in again[0], again
                # a few statements whatever the width (a count first, the cut buckets' points), none per edge
                assert len(again) <= 8, (q, again)
                assert len(first) <= 8 + 18, (q, len(first), first[:3])  # and a statement per level read
        assert store.rollup_cache.entries == 2
    finally:
        store.close()


def test_kept_rows_follow_every_write_of_this_bridge_and_of_another_one(influxd):
    points = _ramp(200_000, 6)
    a = influx_store(influxd, "snapped_writers", writer="a")
    b = influx_store(influxd, "snapped_writers", writer="b")
    try:
        parts = batches(points, np.arange(10_000, len(points), 10_000))
        written: list[Any] = []

        def write(store: Any, items: list[Any]) -> None:
            write_all(store, items)
            written.extend(items)

        def seen() -> Points:
            cols = [p.scalars[0] for p in written]
            return Points(*(np.concatenate([getattr(c, f) for c in cols]) for f in ("steps", "wall_ns", "values")))

        views = [SeriesQuery("proj", "run", "loss", x, None, None, 500, snap=True) for x in ("step", "time")]
        write(a, parts[:10])
        for writer, items in ((a, parts[10:12]), (b, parts[12:16]), (a, parts[16:])):  # ours, another's, ours
            for q in views:
                assert_same(a.series(q), reference(q, seen()), repr(q))  # now kept
            write(writer, items)
        for q in views:
            assert_same(a.series(q), reference(q, seen()), repr(q))
    finally:
        a.close()
        b.close()


def test_points_a_nanosecond_from_the_time_grid_land_in_their_columns(influxd):
    """At x = time the edges found by the float formula lie up to ~250 ns off the grid: a point
    there is in the column the formula gives it, not the one its rollup bucket would."""
    points = _ramp(120_000, 7, near_edges=True)
    store = influx_store(influxd, "snapped_near")
    try:
        write_all(store, batches(points, np.arange(20_000, len(points), 20_000)))
        rng = np.random.default_rng(9)
        for q in _views(points, "time", rng, 20):
            assert_same(store.series(q), reference(q, points), repr(q))
    finally:
        store.close()


def _answers(client: Any, query: dict, binary: bool) -> dict:
    """The many-series answer, its points as JSON spells them (binary columns converted)."""
    resp = client.get("/api/v1/series", params=query, headers={"Accept": series_binary.MEDIA_TYPE} if binary else None)
    assert resp.status_code == 200, resp.text
    if not binary:
        return resp.json()
    header, columns = series_binary.decode(resp.content)
    for s, cols in zip(header["series"], columns):
        s["points"] = {"x": cols["x"].tolist(), "y": json_floats(cols["y"]), "step": cols["step"].tolist(),
                       "time_ms": cols["time_ms"].tolist()}
    return header


def _image(answer: dict, width: int, lo: float, hi: float) -> np.ndarray:
    x = np.asarray(answer["points"]["x"], dtype=float)
    y = np.array([float(v) for v in answer["points"]["y"]])
    keep = np.isfinite(y)
    return raster(x[keep], y[keep], answer["start"], answer["end"], width, lo, hi)


def test_the_series_answers_of_influxdb_and_duckdb_for_the_same_points_draw_the_same_pixels(influxd, tmp_path):
    runs = {f"run-{i}": _ramp(150_000, 20 + i) for i in range(3)}
    stores = {"duckdb": f"duckdb:///{tmp_path / 'same.duckdb'}", "influxdb": influxd.store_url("same_pixels")}
    rng = np.random.default_rng(4)
    queries = [{"x": q.x, "width": q.width, "snap": "true", "key": "loss", "run": [f"proj/{r}" for r in runs],
                **({} if q.start is None else {"start": q.start, "end": q.end})}
               for x in ("step", "time") for q in _views(runs["run-0"], x, rng, 6)]
    answers: dict[str, list[dict]] = {}
    for engine, url in stores.items():
        with served_bridge(store=url) as (bridge, client):
            for r, (run, points) in enumerate(runs.items()):
                write_all(bridge.store, batches(points, np.arange(25_000, len(points), 25_000), run=run,
                                                producer=f"p{r}".encode()))
            answers[engine] = [_answers(client, query, binary=i % 2 == 1) for i, query in enumerate(queries)]
    for query, duck, influx in zip(queries, answers["duckdb"], answers["influxdb"]):
        for d, i in zip(duck["series"], influx["series"]):
            what = f"{query} {d['run']}"
            assert (d["start"], d["end"], d["raw"], d["total"]) == (i["start"], i["end"], i["raw"], i["total"]), what
            assert (d["points"], d["before"], d["after"]) == (i["points"], i["before"], i["after"]), what
            y = np.array([float(v) for v in i["points"]["y"]])
            lo, hi = np.nanmin(y[np.isfinite(y)]), np.nanmax(y[np.isfinite(y)])
            assert np.array_equal(_image(d, query["width"], lo, hi), _image(i, query["width"], lo, hi)), what
    # the whole runs' view: wider than the runs, by at most 1/16 of them
    whole = answers["influxdb"][0]["series"][0]
    assert whole["start"] < 0 and whole["end"] > 149_999
    assert whole["end"] - whole["start"] <= 150_000 * (1 + 1 / MIN_UNITS)
