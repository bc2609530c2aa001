"""Many runs at once into one bridge: 4 trainer processes drive 25 runs each
(every run its own producer and spool, the runs of a process one MQTT
connection) at 1,000 points/s per run through Mosquitto into DuckDB; every
series arrives with exactly the count and checksum its run logged. And a fleet
at a low rate: 300 runs from 3 processes into DuckDB, 100 from 2 into InfluxDB
1.6.7, every point stored once and every run finished.

The test streams for 10 s (1 M points); ``bench/many_runs.py`` runs the full
60 s and measures live latency to an open WebSocket and the bridge's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import get_json, metric_counts, prometheus_value, series_points
from paced_trainer import KEYS, expected_checksum, value_at

pytestmark = pytest.mark.slow

PROCESSES, RUNS_EACH, RATE, SECONDS = 4, 25, 1000, 10
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "paced_trainer.py")


def test_a_hundred_runs_at_once_into_one_bridge_arrive_with_exact_counts_and_checksums(
        tmp_path, mosquitto, bridge_factory):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    logged = run_fleet(tmp_path, mosquitto, bridge, "load", PROCESSES, RUNS_EACH, RATE, SECONDS)
    assert len(logged) == PROCESSES * RUNS_EACH
    steps = round(RATE / len(KEYS) * SECONDS)
    for run, entry in logged.items():
        assert entry["steps"] == steps and entry["complete"], (run, entry["report"])
        for k, key in enumerate(KEYS):
            reference = expected_checksum(k, steps)
            assert entry["keys"][key] == {x: reference[x] for x in ("count", "sum_step", "sum_value")}, (run, key)
    # every run's finish() saw its last batch committed: each batch was stored by then
    for run in logged:
        assert metric_counts(bridge.url, "load", run) == dict.fromkeys(KEYS, steps), run
    for run in logged:
        for k, key in enumerate(KEYS):
            curve = series_points(bridge.url, "load", run, key, 0, steps - 1)
            assert curve["raw"], (run, key)
            assert curve["points"]["step"] == list(range(steps)), f"{run} {key}: each step once"
            assert curve["points"]["y"] == [value_at(k, i) for i in range(steps)], f"{run} {key}: the logged values"
    assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0


def run_fleet(tmp_path, mosquitto, bridge, project: str, processes: int, runs_each: int, rate: float,
              seconds: float) -> dict:
    """``processes`` trainer processes of ``runs_each`` runs each at ``rate`` points/s per run; what they logged."""
    procs, outs = [], []
    try:
        for p in range(processes):
            settings = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(tmp_path / f"spool-{p}"),
                        "finish_timeout_ms": 300_000}
            outs.append(tmp_path / f"{project}-{p}.json")
            procs.append(subprocess.Popen(
                [sys.executable, SCRIPT, project, f"p{p}", "--runs", str(runs_each), "--rate", str(rate),
                 "--seconds", str(seconds), "--out", str(outs[-1]), "--settings", json.dumps(settings)],
                stdout=subprocess.DEVNULL))
        for p, proc in enumerate(procs):
            assert proc.wait(600) == 0, f"process {p} did not finish complete"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    return {run: entry for out in outs for run, entry in json.loads(out.read_text()).items()}


def assert_every_point_once_and_every_run_finished(base: str, project: str, logged: dict, steps: int) -> None:
    for run, entry in logged.items():
        assert entry["steps"] == steps and entry["complete"], (run, entry["report"])
    runs = {r["run"]: r for r in get_json(base, "/api/v1/runs")["runs"] if r["project"] == project}
    assert sorted(runs) == sorted(logged), "every run listed"
    assert {r["state"] for r in runs.values()} == {"finished"}, "every run ends finished"
    for run in logged:
        assert metric_counts(base, project, run) == dict.fromkeys(KEYS, steps), run
        for k, key in enumerate(KEYS):
            curve = series_points(base, project, run, key, 0, steps - 1)
            assert curve["points"]["step"] == list(range(steps)), f"{run} {key}: each step once"
            assert curve["points"]["y"] == [value_at(k, i) for i in range(steps)], f"{run} {key}: the logged values"
    assert prometheus_value(base, "curvestream_rejected_total") == 0


@pytest.mark.parametrize("store, processes, runs_each", [("duckdb", 3, 100), ("influxdb", 2, 50)])
def test_hundreds_of_runs_from_several_processes_store_every_point_once_and_all_end_finished(
        tmp_path, mosquitto, bridge_factory, influxd, store, processes, runs_each):
    """300 runs into DuckDB, 100 into InfluxDB 1.6.7; a low rate per run (20 points/s for 2 s)
    keeps it lean: what is tested is many runs at once, not their speed."""
    url = f"duckdb:///{tmp_path / 'fleet.duckdb'}" if store == "duckdb" else influxd.store_url(f"fleet{processes}")
    bridge = bridge_factory(url, mosquitto.url)
    rate, seconds = 20, 2
    logged = run_fleet(tmp_path, mosquitto, bridge, f"fleet-{store}", processes, runs_each, rate, seconds)
    assert len(logged) == processes * runs_each
    assert_every_point_once_and_every_run_finished(bridge.url, f"fleet-{store}", logged,
                                                   round(rate / len(KEYS) * seconds))
