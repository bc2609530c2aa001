"""A hundred runs at once into one bridge: 4 trainer processes drive 25 runs
each (every run its own producer, spool and MQTT connection) at 1,000 points/s
per run through Mosquitto into DuckDB; every series arrives with exactly the
count and checksum its run logged.

The test streams for 10 s (1 M points); ``bench/many_runs.py`` runs the full
60 s and measures live latency to an open WebSocket and the bridge's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import metric_counts, prometheus_value, series_points
from paced_trainer import KEYS, expected_checksum, value_at

pytestmark = pytest.mark.slow

PROCESSES, RUNS_EACH, RATE, SECONDS = 4, 25, 1000, 10
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "paced_trainer.py")


def test_a_hundred_runs_at_once_into_one_bridge_arrive_with_exact_counts_and_checksums(
        tmp_path, mosquitto, bridge_factory):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    procs, outs = [], []
    try:
        for p in range(PROCESSES):
            settings = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(tmp_path / f"spool-{p}"),
                        "finish_timeout_ms": 300_000}
            outs.append(tmp_path / f"logged-{p}.json")
            procs.append(subprocess.Popen(
                [sys.executable, SCRIPT, "load", f"p{p}", "--runs", str(RUNS_EACH), "--rate", str(RATE),
                 "--seconds", str(SECONDS), "--out", str(outs[-1]), "--settings", json.dumps(settings)],
                stdout=subprocess.DEVNULL))
        for p, proc in enumerate(procs):
            assert proc.wait(600) == 0, f"process {p} did not finish complete"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    logged = {run: entry for out in outs for run, entry in json.loads(out.read_text()).items()}
    assert len(logged) == PROCESSES * RUNS_EACH
    steps = round(RATE / len(KEYS) * SECONDS)
    for run, entry in logged.items():
        assert entry["steps"] == steps and entry["complete"], (run, entry["report"])
        for k, key in enumerate(KEYS):
            reference = expected_checksum(k, steps)
            assert entry["keys"][key] == {x: reference[x] for x in ("count", "sum_step", "sum_value")}, (run, key)
    # every run's finish() saw its last batch committed: each batch was stored by then
    for run in logged:
        assert metric_counts(bridge.url, "load", run) == {k: steps for k in KEYS}, run
    for run in logged:
        for k, key in enumerate(KEYS):
            curve = series_points(bridge.url, "load", run, key, 0, steps - 1)
            assert curve["raw"], (run, key)
            assert curve["points"]["step"] == list(range(steps)), f"{run} {key}: each step once"
            assert curve["points"]["y"] == [value_at(k, i) for i in range(steps)], f"{run} {key}: the logged values"
    assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0
