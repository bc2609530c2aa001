"""``curvestream.Api`` and the export endpoint against a real bridge process:
runs logged by the real client through real Mosquitto into DuckDB and into
real InfluxDB 1.6.7 come back whole — ``history()`` as pandas and polars
DataFrames, the Parquet and CSV exports (``curvestream export``) — with every
step, time and value as logged, NaN and ±Inf included."""

from __future__ import annotations

import csv
import io
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import curvestream

HOSTILE_KEY = 'val/loss, top-1 = "x" ü'
KEYS = ("loss", "acc", HOSTILE_KEY, "lr")


def _log(mosquitto, bridge, spool_dir, project: str, steps: int, seed: int = 1) -> dict[str, tuple]:
    """A run of ``steps`` rows of the four KEYS (NaN and ±Inf here and there, steps with gaps) and a
    ``grad_norm`` logged on its own every 10th row; what was logged, key -> (steps, values)."""
    rng = np.random.default_rng(seed)
    step = np.cumsum(rng.integers(1, 3, steps))
    values = {k: rng.standard_normal(steps) * 10.0 ** rng.integers(-5, 5, steps) for k in KEYS}
    for k, special in zip(KEYS, (math.nan, math.inf, -math.inf, math.nan)):
        values[k][rng.integers(0, steps, 25)] = special
    grad = rng.random(steps // 10)
    with curvestream.init(project=project, run="whole", config={"lr": 0.1}, mqtt_url=mosquitto.url,
                          bridge_url=bridge.url, spool_dir=str(spool_dir)) as run:
        cols = [values[k].tolist() for k in KEYS]
        for i, s in enumerate(step.tolist()):
            run.log({k: c[i] for k, c in zip(KEYS, cols)}, step=s)
            if i % 10 == 0:
                run.log({"grad_norm": float(grad[i // 10])}, step=s)
    assert run.finish().complete
    return {**{k: (step, values[k]) for k in KEYS}, "grad_norm": (step[::10], grad)}


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.array_equal(np.asarray(got, dtype=np.float64), want, equal_nan=True))


def _check_frames(found: curvestream.ApiRun, logged: dict[str, tuple]) -> None:
    steps = logged["loss"][0]
    df = found.history()  # pandas: every key, rows by step
    assert list(df.columns[:2]) == ["_step", "_time"] and set(df.columns[2:]) == set(logged)
    assert len(df) == len(steps) + len(logged["grad_norm"][0])  # grad_norm was logged in rows of its own
    for key, (want_steps, want) in logged.items():
        present = ~df[key].isna().to_numpy()
        assert np.array_equal(df["_step"].to_numpy()[present], want_steps), key
        assert _same(df[key].to_numpy(dtype="float64", na_value=np.nan)[present], want), key
    assert df["_step"].is_monotonic_increasing
    pl = found.history(list(KEYS), x="time", library="polars")  # one row per log() call of the four keys
    assert pl.columns == ["_step", "_time", *KEYS] and pl.height == len(steps)
    assert np.array_equal(pl["_step"].to_numpy(), steps)
    for key in KEYS:
        assert pl[key].null_count() == 0 and _same(pl[key].to_numpy(), logged[key][1]), key
    times = pl["_time"].dt.epoch("ns").to_numpy()
    assert np.all(np.diff(times) > 0)
    assert np.array_equal(times, df["_time"].array.asi8[~df["loss"].isna().to_numpy()])


def test_history_of_a_million_point_run_equals_what_was_logged_and_parquet_and_csv_round_trip(
        mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    logged = _log(mosquitto, bridge, spool_dir, "read-api", 245_000)
    assert sum(len(s) for s, _ in logged.values()) > 1_000_000
    api = curvestream.Api(bridge.url)
    (found,) = api.runs(project="read-api")
    assert found.config == {"lr": 0.1} and found.state == "finished"
    assert _same(np.array([found.summary[k] for k in logged]), np.array([logged[k][1][-1] for k in logged]))
    _check_frames(found, logged)
    times = found.points(["loss"])["loss"][1]

    parquet = tmp_path / "run.parquet"
    proc = subprocess.run([sys.executable, "-m", "curvestream.cli", "export", "read-api", found.run, "-o",
                           str(parquet)], env={**os.environ, "CURVESTREAM_BRIDGE_URL": bridge.url},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    import polars

    table = polars.read_parquet(parquet)
    assert table.columns == ["key", "step", "time_ns", "value"] and table.height == sum(len(s) for s, _ in
                                                                                        logged.values())
    for key, (want_steps, want) in logged.items():
        part = table.filter(polars.col("key") == key)
        assert np.array_equal(part["step"].to_numpy(), want_steps) and _same(part["value"].to_numpy(), want), key
    assert np.array_equal(table.filter(polars.col("key") == "loss")["time_ns"].to_numpy(), times)

    buffer = io.BytesIO()
    found.export(buffer, "csv", [HOSTILE_KEY, "grad_norm"])
    rows = list(csv.reader(io.StringIO(buffer.getvalue().decode())))
    assert rows[0] == ["key", "step", "time_ns", "value"]
    for key in (HOSTILE_KEY, "grad_norm"):
        mine = [r for r in rows[1:] if r[0] == key]
        assert [int(r[1]) for r in mine] == logged[key][0].tolist()
        assert _same(np.array([float(r[3]) for r in mine]), logged[key][1]), key


def test_history_and_parquet_export_are_exact_on_influxdb(mosquitto, influxd, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(influxd.store_url("readapi"), mosquitto.url)
    logged = _log(mosquitto, bridge, spool_dir, "read-api-influx", 30_000, seed=2)
    (found,) = curvestream.Api(bridge.url).runs(project="read-api-influx")
    _check_frames(found, logged)
    parquet = tmp_path / "run.parquet"
    found.export(parquet)
    import polars

    table = polars.read_parquet(parquet)
    for key, (want_steps, want) in logged.items():
        part = table.filter(polars.col("key") == key)
        assert np.array_equal(part["step"].to_numpy(), want_steps) and _same(part["value"].to_numpy(), want), key


def test_asking_for_a_run_that_is_not_there_says_so(mosquitto, bridge_factory, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    api = curvestream.Api(bridge.url)
    with pytest.raises(LookupError, match="no run nowhere/none"):
        api.run("nowhere", "none")
    with pytest.raises(curvestream.ApiError, match="404"):
        curvestream.ApiRun(api, {"project": "nowhere", "run": "none"}).history()
