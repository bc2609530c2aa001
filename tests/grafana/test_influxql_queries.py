"""The InfluxQL flavour of every dashboard query, run on the real InfluxDB 1.6.7
against points written by the bridge's own InfluxStore, after Grafana's
substitutions (variables from the variable queries' own answers, then the
backend's $timeFilter and $__interval): the variable queries list what was
written, and the M4 curves read one rollup level and keep every window's first,
last, minimum and maximum of it, so a +1000 spike and a -1000 dip survive a
50-fold reduction."""

from __future__ import annotations

import math
import zlib
from typing import Any

import httpx
import numpy as np
import pytest

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.influx.ladder import answered_intervals, time_plan
from curvestream_bridge.store.influx.lineproto import decode_tag, stored_tag
from curvestream_bridge.store.influx.rollup import BOTTOM_TARGET_POINTS
from curvestream_bridge.store.influx.store import InfluxStore
from grafana_kit import ALL, influxql_macros, interpolate_variables, panel_interval_ms, query_library

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
STEP_MS = 10
POINTS = 10_000
PANEL_WIDTH_PX = 200  # Grafana's maxDataPoints for a panel this wide
ALL_VALUES = {"group": ".*", "metric": ".*"}

LOSS, HOSTILE_KEY = "train/loss", 'val/loss, top-1 = "x" ü'
RUN_A, RUN_B, RUN_PCT = "lr=0.1 bs=64", "lr=0.01 (warm-up)", "100% data"
SERIES = {  # (project, run) -> metric keys
    ("mnist", RUN_A): [LOSS, HOSTILE_KEY],
    ("mnist", RUN_B): [LOSS],
    ("mnist", RUN_PCT): [LOSS],
    ("sweep.v2", "a|b [x]+y"): ["acc"],
}
GROUPS = {("mnist", RUN_A): "lr sweep", ("mnist", RUN_B): "lr sweep"}  # the others: no group ("-")
SPIKE_STEP, DIP_STEP, NAN_STEP, INF_STEP = 3_021, 7_033, 5_010, 5_011  # inside windows, not at their edges


def curve(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 2.0 * np.exp(-np.arange(POINTS) / 3_000) + rng.normal(0, 0.01, POINTS)


def values_of(project: str, run: str, key: str) -> np.ndarray:
    y = curve(zlib.crc32(f"{project}\0{run}\0{key}".encode()))
    if (run, key) == (RUN_A, LOSS):
        y[SPIKE_STEP], y[DIP_STEP] = 1000.0, -1000.0
        y[NAN_STEP], y[INF_STEP] = math.nan, math.inf
    return y


@pytest.fixture(scope="module")
def influx(influxd: Any) -> dict[str, Any]:
    """Every series written through the bridge's InfluxStore; returns what a query needs."""
    database = "grafana_kit"
    store = InfluxStore(influxd.store_url(database))
    try:
        steps = np.arange(POINTS, dtype=np.int64)
        wall_ns = (BASE_MS + steps * STEP_MS) * 1_000_000
        batches = []
        for seq, ((project, run), keys) in enumerate(SERIES.items(), start=1):
            columns = [ScalarColumn(key, steps, wall_ns, values_of(project, run, key)) for key in keys]
            meta = run_pb2.RunMeta(project=project, run=run, group=GROUPS.get((project, run), ""))
            batches.append(DecodedBatch(b"g" * 16, seq, project, run, columns, [], [], meta, None, 0))
        store.write(batches)
    finally:
        store.close()
    return {"url": influxd.url, "db": database, "from_ms": BASE_MS, "to_ms": BASE_MS + (POINTS - 1) * STEP_MS}


def run_query(influx: dict[str, Any], name: str, selection: dict[str, Any]) -> list[dict[str, Any]]:
    """A library query as Grafana sends it to InfluxDB; returns the answer's series."""
    interval_ms = panel_interval_ms(influx["from_ms"], influx["to_ms"], PANEL_WIDTH_PX)
    text = interpolate_variables(query_library()[name]["influxql"], selection, ALL_VALUES)
    text = influxql_macros(text, influx["from_ms"], influx["to_ms"], interval_ms)
    resp = httpx.post(f"{influx['url']}/query", data={"db": influx["db"], "q": text, "epoch": "ms"}, timeout=60)
    resp.raise_for_status()
    (result,) = resp.json()["results"]
    assert "error" not in result, (result["error"], text)
    return result.get("series", [])


def tag_values(influx: dict[str, Any], name: str, selection: dict[str, Any]) -> list[str]:
    """A variable query's options, as Grafana lists them (the stored, percent-encoded form)."""
    series = run_query(influx, name, selection)
    return sorted(v[1] for s in series for v in s["values"])


def curves(influx: dict[str, Any], selection: dict[str, Any]) -> dict[tuple[str, str, str], np.ndarray]:
    """M4 answer per (project, run, metric), logged names: rows of (time ms, value)."""
    out = {}
    for s in run_query(influx, "curves_m4", selection):
        tags = s["tags"]
        key = (decode_tag(tags["project"]), decode_tag(tags["run"]), decode_tag(tags["metric"]))
        out[key] = np.array(s["values"], dtype=np.float64)
    return out


def test_variable_queries_list_the_projects_runs_and_metrics_that_were_written(influx) -> None:
    projects = tag_values(influx, "project_values", {})
    assert [decode_tag(p) for p in projects] == ["mnist", "sweep.v2"]
    assert [decode_tag(g) for g in tag_values(influx, "group_values", {"project": "mnist"})] == ["-", "lr sweep"]
    runs = tag_values(influx, "run_values", {"project": "mnist", "group": ALL})
    assert sorted(decode_tag(r) for r in runs) == sorted([RUN_A, RUN_B, RUN_PCT])
    assert "100%25 data" in runs  # '%' is stored percent-encoded; Grafana offers (and sends back) that form
    sweep = tag_values(influx, "run_values", {"project": "mnist", "group": ["lr sweep"]})
    assert sorted(decode_tag(r) for r in sweep) == sorted([RUN_A, RUN_B])  # "All" runs of the group are these
    assert [decode_tag(m) for m in tag_values(influx, "metric_values", {"project": "mnist", "run": [RUN_A]})] == \
        sorted([LOSS, HOSTILE_KEY])
    assert [
        decode_tag(m) for m in tag_values(influx, "metric_values", {"project": "mnist", "run": every_run("mnist")})
    ] == sorted([LOSS, HOSTILE_KEY])
    assert [decode_tag(m) for m in tag_values(influx, "metric_values", {"project": "sweep.v2",
                                                                          "run": every_run("sweep.v2")})] == ["acc"]


def every_run(project: str) -> list[str]:
    """The run variable's "All": the runs it lists (stored names), sent as their alternation."""
    return [stored_tag(run) for p, run in SERIES if p == project]


def rollup_reference(t_ms: np.ndarray, y: np.ndarray, level_ms: int, interval_ms: int) -> dict[int, set[float]]:
    """What the curves query must draw in each window, from the raw points: the
    rows of one level (a bucket's first and last when finite, its minimum and
    maximum among non-NaN values when finite), each in the window where its
    bucket starts, and per window the first, last, minimum and maximum of them."""
    by_window: dict[int, list[tuple[int, float | None, float | None, float | None, float | None]]] = {}
    buckets = t_ms // level_ms * level_ms
    for start in np.unique(buckets):
        ys = y[buckets == start]
        extremes = ys[~np.isnan(ys)]
        lo, hi = (float(extremes.min()), float(extremes.max())) if len(extremes) else (math.inf, math.inf)
        row = (int(start), *(v if math.isfinite(v) else None for v in (float(ys[0]), float(ys[-1]), lo, hi)))
        by_window.setdefault(int(start) // interval_ms * interval_ms, []).append(row)
    out = {}
    for window, rows in by_window.items():
        firsts = [r[1] for r in rows if r[1] is not None]
        lasts = [r[2] for r in rows if r[2] is not None]
        mins = [r[3] for r in rows if r[3] is not None]
        maxs = [r[4] for r in rows if r[4] is not None]
        out[window] = {*firsts[:1], *lasts[-1:], *([min(mins)] if mins else []), *([max(maxs)] if maxs else [])}
    return out


def test_m4_curves_draw_each_windows_first_last_min_and_max_from_one_rollup_level(influx) -> None:
    got = curves(influx, {"project": "mnist", "run": [RUN_A], "metric": [LOSS]})
    assert list(got) == [("mnist", RUN_A, LOSS)]
    rows = got[("mnist", RUN_A, LOSS)]
    assert rows[:, 1].max() == 1000.0 and rows[:, 1].min() == -1000.0
    assert not np.isnan(rows[:, 1]).any()  # NaN/±Inf are stored without a value and counted apart

    interval_ms = panel_interval_ms(influx["from_ms"], influx["to_ms"], PANEL_WIDTH_PX)
    y = values_of("mnist", RUN_A, LOSS)
    t = BASE_MS + np.arange(POINTS) * STEP_MS
    plan = time_plan(t * 1_000_000, BOTTOM_TARGET_POINTS)
    ladder_ms = tuple(size // 1_000_000 for size in plan.ladder)
    (level_ms,) = [ladder_ms[k] for k in plan.levels if interval_ms in answered_intervals(ladder_ms, k)]
    assert level_ms < interval_ms  # a coarser level than the raw points, finer than the window
    expected = rollup_reference(t, y, level_ms, interval_ms)
    assert len(rows) <= 4 * len(expected) and len(rows) * 10 < POINTS  # a real reduction
    assert sorted(set(rows[:, 0].tolist())) == sorted(expected)
    for start, values in expected.items():
        assert set(rows[rows[:, 0] == start, 1].tolist()) == values, f"window at {start} ms"


def test_a_selection_of_runs_gets_those_runs_and_all_gets_every_run_of_the_project(influx) -> None:
    selected = curves(influx, {"project": "mnist", "run": [RUN_A, "100%25 data"], "metric": [LOSS]})
    assert sorted(selected) == sorted([("mnist", RUN_A, LOSS), ("mnist", RUN_PCT, LOSS)])
    every = curves(influx, {"project": "mnist", "run": every_run("mnist"), "metric": ALL})
    assert sorted(every) == sorted(("mnist", run, key) for (project, run), keys in SERIES.items()
                                   if project == "mnist" for key in keys)
    hostile = curves(influx, {"project": "sweep.v2", "run": ["a|b [x]+y"], "metric": ["acc"]})
    assert list(hostile) == [("sweep.v2", "a|b [x]+y", "acc")]  # regex characters in names match only themselves
    assert curves(influx, {"project": "mnist", "run": ["a|b [x]+y"], "metric": ALL}) == {}


def test_nonfinite_values_are_counted_per_window_in_the_series_that_logged_them(influx) -> None:
    series = run_query(influx, "nonfinite_count", {"project": "mnist", "run": every_run("mnist"), "metric": ALL})
    counts = {(decode_tag(s["tags"]["run"]), decode_tag(s["tags"]["metric"])): sum(v[1] for v in s["values"])
              for s in series}
    assert counts == {(RUN_A, LOSS): 2}


def test_every_library_query_was_run_here() -> None:
    covered = {"project_values", "group_values", "run_values", "metric_values", "curves_m4", "nonfinite_count",
               "alert_annotations", "system_m4"}  # alert_annotations in test_alert_queries.py, system_m4 in
    # test_system_row.py
    assert set(query_library()) == covered
