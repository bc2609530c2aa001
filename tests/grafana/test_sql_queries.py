"""The SQL queries for InfluxDB 3 (``grafana/queries/*.sql``, Grafana's InfluxDB
data source in SQL mode), run on DataFusion, the query engine InfluxDB 3 runs,
over Parquet laid out as InfluxDB 3 stores a table written through the v1 API
(tag columns as dictionaries, ``time`` in ns, one column per field), with
variables and macros substituted as Grafana does: the M4 query's answer is, per
run, exactly the bridge's M4 of the same points at the same columns, NaN and
±Inf included; the other queries return what their dashboard variables and
panels expect. No InfluxDB 3 server exists here: what InfluxDB 3 adds around
DataFusion (its catalog, the write buffer, the FlightSQL transport) is not run."""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any

import datafusion
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.influx.lineproto import stored_tag
from curvestream_bridge.store.m4.query import frame, points_result
from grafana_kit import ALL, GRAFANA_DIR, QUERIES_DIR, interpolate_variables, panel_interval_ms, sql_macros, walk_panels

T0_MS = 1_700_000_000_000
RUNS = {"lr=0.1 (warm-up)": 7, "lr=0.01": 8, "100%/b": 9}  # run: seed (names with characters regexes and tags escape)
N = 60_000
ALL_VALUES = {"group": ".*", "metric": ".*"}
EVERY_RUN = [stored_tag(r) for r in RUNS]  # the run variable's "All": the runs it lists


def sql(name: str) -> str:
    return (QUERIES_DIR / f"{name}.sql").read_text(encoding="utf-8").strip()


def points_of(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wall ns, step, value) of a run: 1 ms apart with jitter, noise, NaN, ±Inf, -0.0, ties, a spike and a dip."""
    rng = np.random.default_rng(seed)
    steps = np.arange(N, dtype=np.int64)
    walls = (T0_MS + steps) * 1_000_000 + rng.integers(0, 900_000, N)
    values = np.round(np.cumsum(rng.standard_normal(N)), 1)  # rounded: equal values (ties) in most columns
    values[rng.integers(0, N, 30)] = np.nan
    values[rng.integers(0, N, 5)] = np.inf
    values[rng.integers(0, N, 5)] = -np.inf
    values[rng.integers(0, N, 20)] = -0.0
    values[rng.integers(0, N)], values[rng.integers(0, N)] = 1e6, -1e6
    return walls, steps, values


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """DataFusion over ``cs_scalar`` and ``cs_alert`` as InfluxDB 3 keeps them (Parquet files)."""
    folder: pathlib.Path = tmp_path_factory.mktemp("influxdb3")
    parts = []
    for run, seed in RUNS.items():
        walls, steps, values = points_of(seed)
        finite = np.isfinite(values)
        code = np.where(np.isnan(values), 1, np.where(values > 0, 2, 3))
        def tag(v):
            return pa.array([stored_tag(v)] * N).dictionary_encode()
        parts.append(pa.table({
            "metric": tag("train/loss"), "project": tag("mnist"), "run": tag(run),
            "nonfinite": pa.array(np.where(finite, 0, code), mask=finite),
            "step": pa.array(steps),
            "time": pa.array(walls, type=pa.timestamp("ns")),
            "value": pa.array(np.where(finite, values, 0.0), mask=~finite),
        }))
    pq.write_table(pa.concat_tables(parts), folder / "cs_scalar.parquet")
    alerts = pa.table({"kind": pa.array(["nonfinite"]).dictionary_encode(),
                       "metric": pa.array(["train/loss"]).dictionary_encode(),
                       "project": pa.array(["mnist"]).dictionary_encode(),
                       "rule": pa.array(["nonfinite"]).dictionary_encode(),
                       "run": pa.array([stored_tag("lr=0.01")]).dictionary_encode(),
                       "state": pa.array(["firing"]).dictionary_encode(),
                       "firing": pa.array([1]), "message": pa.array(["train/loss became NaN at step 12"]),
                       "step": pa.array([12]), "time": pa.array([(T0_MS + 12) * 1_000_000], type=pa.timestamp("ns"))})
    pq.write_table(alerts, folder / "cs_alert.parquet")
    groups = pa.table({"group": pa.array(["lr sweep", "lr sweep", "-"]).dictionary_encode(),
                       "project": pa.array(["mnist"] * 3).dictionary_encode(),
                       "run": pa.array([stored_tag(r) for r in RUNS]).dictionary_encode(),
                       "seen": pa.array([True] * 3), "time": pa.array([0] * 3, type=pa.timestamp("ns"))})
    pq.write_table(groups, folder / "cs_group.parquet")
    ctx = datafusion.SessionContext()
    ctx.register_parquet("cs_scalar", str(folder / "cs_scalar.parquet"))
    ctx.register_parquet("cs_alert", str(folder / "cs_alert.parquet"))
    ctx.register_parquet("cs_group", str(folder / "cs_group.parquet"))
    return ctx


def run_sql(ctx: Any, name: str, selection: dict[str, Any], from_ms: int, to_ms: int, width: int) -> list[dict]:
    text = interpolate_variables(sql(name), selection, ALL_VALUES)
    text = sql_macros(text, from_ms, to_ms, panel_interval_ms(from_ms, to_ms, width))
    table = ctx.sql(text).to_arrow_table()
    for i, field in enumerate(table.schema):  # times as ns since the epoch
        if pa.types.is_timestamp(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
    return table.to_pylist()


def bridge_m4(run: str, from_ms: int, to_ms: int, interval_ms: int) -> list[tuple[int, int, float]]:
    """The bridge's M4 of the run's points in Grafana's range, at columns of Grafana's interval from its start."""
    walls, steps, values = points_of(RUNS[run])
    keep = (walls >= from_ms * 1_000_000) & (walls <= to_ms * 1_000_000)
    width = -(-(to_ms - from_ms) // interval_ms)  # whole intervals (the last one may reach past the range)
    q = SeriesQuery("mnist", run, "train/loss", "time", float(from_ms), float(from_ms + width * interval_ms), width)
    f = frame(q, 0, (int(walls.min()), int(walls.max())), None)
    res = points_result(f, steps[keep], walls[keep], values[keep])
    inside = [i for i in range(len(res.x)) if i not in (res.before, res.after)]
    return [(int(res.wall_ns[i]), int(res.step[i]), float(res.y[i])) for i in inside]


def same(a: list[tuple[int, int, float]], b: list[tuple[int, int, float]]) -> bool:
    return len(a) == len(b) and all(
        (x[0], x[1]) == (y[0], y[1]) and ((x[2] == y[2] and math.copysign(1, x[2]) == math.copysign(1, y[2]))
                                          or (math.isnan(x[2]) and math.isnan(y[2]))) for x, y in zip(a, b))


@pytest.mark.parametrize("view", [(0, N, 1200), (0, N, 97), (12_345, 13_789, 640), (30_000, 30_200, 2000),
                                  (-5_000, 4_000, 300), (40_000, 41_000, 1000)])
def test_the_m4_query_answers_each_run_exactly_as_the_bridges_m4_of_the_same_points(engine, view) -> None:
    first, last, width = view
    from_ms, to_ms = T0_MS + first, T0_MS + last
    interval = panel_interval_ms(from_ms, to_ms, width)
    rows = run_sql(engine, "curves_m4", {"project": "mnist", "run": EVERY_RUN, "metric": ["train/loss"]}, from_ms,
                   to_ms, width)
    by_run: dict[str, list[tuple[int, int, float]]] = {}
    for r in rows:
        assert r["project"] == "mnist" and r["metric"] == "train/loss"
        by_run.setdefault(r["run"], []).append((r["time"], r["step"], r["value"]))
    for run in RUNS:
        expected = bridge_m4(run, from_ms, to_ms, interval)
        assert same(by_run.get(stored_tag(run), []), expected), (run, view, interval)
    assert any(math.isnan(v) for pts in by_run.values() for *_, v in pts) or last - first < 2000


def test_one_run_or_several_select_only_theirs(engine) -> None:
    chosen = [stored_tag("lr=0.1 (warm-up)"), stored_tag("100%/b")]  # as the run variable offers them (stored)
    rows = run_sql(engine, "curves_m4", {"project": "mnist", "run": chosen, "metric": ALL}, T0_MS, T0_MS + N, 500)
    assert {r["run"] for r in rows} == set(chosen)


def test_the_variable_panel_and_annotation_queries_return_what_the_dashboard_expects(engine) -> None:
    window = (T0_MS - 1000, T0_MS + N + 1000, 800)
    assert run_sql(engine, "project_values", {}, *window) == [{"project": "mnist"}]
    assert run_sql(engine, "group_values", {"project": "mnist"}, *window) == [{"group": "-"}, {"group": "lr sweep"}]
    runs = run_sql(engine, "run_values", {"project": "mnist", "group": ALL}, *window)
    assert [r["run"] for r in runs] == sorted(stored_tag(r) for r in RUNS)
    sweep = run_sql(engine, "run_values", {"project": "mnist", "group": ["lr sweep"]}, *window)
    assert [r["run"] for r in sweep] == sorted(stored_tag(r) for r in RUNS if r != "100%/b")
    assert run_sql(engine, "metric_values", {"project": "mnist", "run": EVERY_RUN}, *window) == [
        {"metric": "train/loss"}]
    counts = run_sql(engine, "nonfinite_count", {"project": "mnist", "run": [stored_tag("lr=0.01")], "metric": ALL},
                     *window)
    _walls, _, values = points_of(RUNS["lr=0.01"])
    assert sum(r["nonfinite"] for r in counts) == int((~np.isfinite(values)).sum())
    (alert,) = run_sql(engine, "alert_annotations", {"project": "mnist", "run": EVERY_RUN}, *window)
    assert (alert["message"], alert["state"], alert["firing"]) == ("train/loss became NaN at step 12", "firing", 1)


def test_the_system_query_draws_each_windows_first_min_max_and_last_of_the_raw_values(engine) -> None:
    """``system_m4`` (the System row; the system metrics are few points, read raw): per window of
    Grafana's interval from the range's start, the first, minimum, maximum and last finite value,
    at the window's start. Run here over a key of this table: the query takes any key it is given."""
    run = "lr=0.01"
    from_ms, to_ms, width = T0_MS + 1_000, T0_MS + 21_000, 400
    interval = panel_interval_ms(from_ms, to_ms, width)
    rows = run_sql(engine, "system_m4", {"project": "mnist", "run": [stored_tag(run)],
                                         "system_metric": ["train/loss"]}, from_ms, to_ms, width)
    walls, _, values = points_of(RUNS[run])
    keep = (walls >= from_ms * 1_000_000) & (walls <= to_ms * 1_000_000) & np.isfinite(values)
    cols = (walls[keep] // 1_000_000 - from_ms) // interval
    want: dict[int, list[float]] = {}
    for c, v in zip(cols.tolist(), values[keep].tolist()):
        want.setdefault(from_ms + c * interval, []).append(v)
    got: dict[int, list[float]] = {}
    for r in rows:
        assert (r["project"], r["run"], r["metric"]) == ("mnist", stored_tag(run), "train/loss")
        got.setdefault(r["time"] // 1_000_000, []).append(r["value"])
    assert sorted(got) == sorted(want) and len(got) > 10
    for t, vs in want.items():
        assert sorted(got[t]) == sorted([vs[0], min(vs), max(vs), vs[-1]]), t


def test_the_sql_dashboard_runs_the_sql_library_on_its_data_source_with_many_runs_at_once() -> None:
    board = json.loads((GRAFANA_DIR / "influxdb3" / "curvestream-sql.json").read_text())
    (source,) = yaml.safe_load((GRAFANA_DIR / "influxdb3" / "datasource.yaml").read_text())["datasources"]
    assert source["jsonData"]["version"] == "SQL" and source["type"] == "influxdb"
    library = {path.read_text(encoding="utf-8").strip(): path.stem for path in QUERIES_DIR.glob("*.sql")}
    targets = [t for p in walk_panels(board["panels"]) for t in p.get("targets", []) if "rawSql" in t]
    queries = [t["rawSql"] for t in targets] + [v["query"] for v in board["templating"]["list"]]
    queries += [a["target"]["rawSql"] for a in board["annotations"]["list"] if "rawSql" in a.get("target", {})]
    assert {library[q] for q in queries} == set(library.values())  # every query from grafana/queries/*.sql
    assert all(t["datasource"]["uid"] == source["uid"] for t in targets)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["run"]["multi"] and variables["run"]["includeAll"] and variables["run"].get("allValue") is None
    curves = [t for t in targets if library[t["rawSql"]] == "curves_m4"]
    assert curves and all("${run:regex}" in t["rawSql"] for t in curves)  # one query a panel for every chosen run
