"""``GET /api/v1/groups/series``: groups of runs as one curve, computed on the
bridge from the runs' M4 answers, equal per pixel column to what the runs'
raw points give (computed here point by point): the band's minimum and
maximum exactly, the mean and standard deviation of the runs' values to the
last bits, on both engines, whole and zoomed, on every x axis."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from curvestream_wire.v1 import run_pb2

from bridge_client import AppClient, q, served_engine
from curvestream_bridge.api.models import ApiGroups, ApiGroupsTable
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.m4.kernel import pixel_columns

T0 = 1_700_000_000_000_000_000
KEY = "val/loss"


def _runs() -> dict[str, tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray]]:
    """name -> (config, steps, walls, values): two lr groups; dense noisy runs with a spike,
    a dip, NaN and ±Inf; one that stops early; one logged every 50 steps; one without the key's config."""
    rng = np.random.default_rng(3)
    out = {}
    for i, (lr, n, every) in enumerate([(0.1, 6000, 1), (0.1, 6000, 1), (0.1, 2500, 1), (0.01, 6000, 1),
                                        (0.01, 6000, 50), (None, 4000, 1)]):
        steps = np.arange(0, n, every, dtype=np.int64)
        walls = T0 + i * 10**9 + steps * 3_000_000
        values = np.exp(-steps / 2000) + 0.05 * rng.standard_normal(len(steps)) + i
        if every == 1:
            values[rng.integers(0, len(steps), 3)] = np.nan
            values[100 + i] = 1000.0
            values[200 + i] = -1000.0
        if i == 1:
            values[4000] = np.inf
            values[4321] = -np.inf
        config = {"lr": lr} if lr is not None else {}
        out[f"r{i} ü/{lr}"] = (config, steps, walls, values)
    return out


RUNS = _runs()


def _fill(store) -> None:
    items = []
    for i, (name, (config, steps, walls, values)) in enumerate(RUNS.items()):
        meta = run_pb2.RunMeta(project="sweep", run=name, config_json=json.dumps(config))
        for k, part in enumerate(np.array_split(np.arange(len(steps)), 4)):
            col = ScalarColumn(KEY, steps[part], walls[part], values[part])
            items.append(DecodedBatch(f"g{i}".encode(), k + 1, "sweep", name, [col], [], [],
                                      meta if k == 0 else None, None, 0))
    store.write(items)


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    with served_engine(request, tmp_path_factory, "groups", _fill) as client:
        yield client


def _x(name: str, axis: str) -> np.ndarray:
    _, steps, walls, _ = RUNS[name]
    if axis == "step":
        return steps.astype(np.float64)
    if axis == "time":
        return walls / 1e6
    return (walls - walls[0]) / 1e9


def _reference(names: list[str], axis: str, start: float, end: float, width: int) -> dict[int, dict[str, Any]]:
    """Per column where a run has raw points: the band, and each run's value (its last point there, or
    its line between the points around the column at the column's middle)."""
    cols: dict[int, dict[str, Any]] = {}
    for name in names:
        x, y = _x(name, axis), RUNS[name][3]
        steps, walls = RUNS[name][1].astype(np.float64), RUNS[name][2]
        c = pixel_columns(x, start, end, width)
        inside = (x >= start) & (x <= end)
        for col in range(width):
            mine = np.flatnonzero(inside & (c == col))
            entry = cols.setdefault(col, {"lo": math.nan, "hi": math.nan, "values": [], "xs": [], "steps": [],
                                          "times": [], "non_finite": 0, "points": False})
            if len(mine):
                entry["points"] = True
                finite_or_inf = y[mine][~np.isnan(y[mine])]
                if len(finite_or_inf):
                    entry["lo"] = np.fmin(entry["lo"], finite_or_inf.min())
                    entry["hi"] = np.fmax(entry["hi"], finite_or_inf.max())
                last = mine[-1]
                if np.isfinite(y[last]):
                    entry["values"].append(y[last])
                    entry["xs"].append(x[last])
                    entry["steps"].append(steps[last])
                    entry["times"].append(walls[last] / 1e6)
                else:
                    entry["non_finite"] += 1
                continue
            middle = start + (col + 0.5) * ((end - start) / width)
            before, after = np.flatnonzero(x < middle), np.flatnonzero(x > middle)
            if len(before) == 0 or len(after) == 0:
                continue
            i0, i1 = before[-1], after[0]
            if not (np.isfinite(y[i0]) and np.isfinite(y[i1])):
                entry["non_finite"] += 1
                continue
            share = (middle - x[i0]) / (x[i1] - x[i0])
            line = y[i0] + (y[i1] - y[i0]) * share
            entry["lo"], entry["hi"] = np.fmin(entry["lo"], line), np.fmax(entry["hi"], line)
            entry["values"].append(line)
            entry["xs"].append(middle)
            entry["steps"].append(steps[i0] + (steps[i1] - steps[i0]) * share)
            entry["times"].append(walls[i0] / 1e6 + (walls[i1] / 1e6 - walls[i0] / 1e6) * share)
    return {c: e for c, e in cols.items() if e["points"]}


def _number(v: Any) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v)


def _groups(api: AppClient, **params: Any) -> dict[str, Any]:
    resp = api.get("/api/v1/groups/series", params={"key": KEY, **params})
    assert resp.status_code == 200, resp.text
    ApiGroups.model_validate(resp.json())  # the answer is its model (extra fields forbidden)
    return resp.json()


@pytest.mark.parametrize("axis", ["step", "time", "relative"])
def test_each_groups_band_is_per_column_the_min_and_max_of_its_runs_raw_points(api, axis):
    names = list(RUNS)
    body = _groups(api, group_by="config:lr", run=[f"sweep/{q(n)}" for n in names], x=axis, width=333)
    assert [(g["label"], len(g["runs"])) for g in body["groups"]] == [("lr=0.01", 2), ("lr=0.1", 3), ("no lr", 1)]
    start, end = body["start"], body["end"]
    assert start == min(_x(n, axis)[0] for n in names) and end == max(_x(n, axis)[-1] for n in names)
    zoom_lo, zoom_hi = start + (end - start) * 0.31, start + (end - start) * 0.37
    zoomed = _groups(api, group_by="config:lr", run=[f"sweep/{q(n)}" for n in names], x=axis, width=250,
                     start=zoom_lo, end=zoom_hi)
    for answer, width in ((body, 333), (zoomed, 250)):
        for group in answer["groups"]:
            members = [r["run"] for r in group["runs"]]
            assert all(RUNS[m][0].get("lr") == (float(group["value"]) if group["value"] else None) for m in members)
            expected = _reference(members, axis, answer["start"], answer["end"], width)
            got = group["columns"]
            assert got["column"] == sorted(expected), group["label"]
            for i, col in enumerate(got["column"]):
                e = expected[col]
                where = (group["label"], col)
                assert (_number(got["min"][i]), _number(got["max"][i])) == (e["lo"], e["hi"]), where
                assert got["count"][i] == len(e["values"]), where
                if e["values"]:
                    assert math.isclose(got["step"][i], float(np.mean(e["steps"])), rel_tol=1e-12)
                    assert math.isclose(got["time_ms"][i], float(np.mean(e["times"])), rel_tol=1e-12)
                    assert math.isclose(got["mean"][i], float(np.mean(e["values"])), rel_tol=1e-12, abs_tol=1e-12)
                    assert math.isclose(got["std"][i], float(np.std(e["values"])), rel_tol=1e-9, abs_tol=1e-12)
                    assert math.isclose(got["x"][i], float(np.mean(e["xs"])), rel_tol=1e-12)
            assert group["non_finite"] == sum(e["non_finite"] for e in expected.values())
    spikes = {g["label"]: (min(map(_number, g["columns"]["min"])), max(map(_number, g["columns"]["max"])))
              for g in body["groups"]}
    assert spikes["lr=0.1"] == (-math.inf, math.inf) and spikes["lr=0.01"][1] == 1000.0, "no extreme is lost"


def test_the_table_form_is_one_row_per_group_and_column_with_the_same_figures(api):
    params = {"group_by": "config:lr", "run": [f"sweep/{q(n)}" for n in RUNS], "width": 120}
    groups = _groups(api, **params)
    resp = api.get("/api/v1/groups/table", params={"key": KEY, **params})
    assert resp.status_code == 200, resp.text
    table = ApiGroupsTable.model_validate(resp.json()).model_dump()
    expected = [{"group": g["label"], "value": g["value"], "runs": len(g["runs"]),
                 **{k: g["columns"][k][i] for k in g["columns"]}}
                for g in groups["groups"] for i in range(len(g["columns"]["column"]))]
    assert resp.json()["rows"] == expected and len(expected) > 200
    assert {k: table[k] for k in ("key", "x", "start", "end", "width")} == \
        {k: groups[k] for k in ("key", "x", "start", "end", "width")}


def test_groups_may_be_picked_by_the_runs_tables_filters_and_bad_queries_are_refused(api):
    by_filter = _groups(api, group_by="config:lr", project="sweep", config_key="lr", config_value="0.1", width=100)
    assert [(g["label"], sorted(r["run"] for r in g["runs"])) for g in by_filter["groups"]] == \
        [("lr=0.1", sorted(n for n in RUNS if RUNS[n][0].get("lr") == 0.1))]
    in_order = [r["run"] for r in by_filter["groups"][0]["runs"]]  # newest first, as the table lists them
    listed = _groups(api, group_by="config:lr", run=[f"sweep/{q(n)}" for n in in_order], width=100)
    assert by_filter["groups"] == listed["groups"]
    none = _groups(api, group_by="group", run=["sweep/nowhere"])
    assert none["start"] is None and none["groups"][0]["columns"]["column"] == []
    for bad in ({"group_by": "colour"}, {"group_by": "group", "start": 5, "end": 1}, {"group_by": "config:"}):
        assert api.get("/api/v1/groups/series", params={"key": KEY, **bad}).status_code == 422, bad
