"""``curvestream import mlflow`` of a file store written by the real ``mlflow``
package (mlflow-skinny), run as the real command against real Mosquitto and a
bridge on DuckDB: every metric line stored at its step and millisecond with
its value (NaN and ±Inf included) as MLflow's own reader returns it; params
as the config, tags, parent runs as groups, statuses; deleted runs left out;
a second import sends nothing and says "nothing new"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import get_json, import_command, prometheus_value, run_path

STEPS = 4_000

WRITER = r"""
import json, math, sys
import mlflow
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

store, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mlflow.set_tracking_uri("file:" + store)
client = MlflowClient()
t0 = 1_765_000_000_000
exp = mlflow.set_experiment("mnist")
with mlflow.start_run(run_name="sweep") as parent:
    mlflow.log_params({"lr": 0.1, "batch": 64, "note": "a b, c=d"})
    mlflow.set_tags({"team": "vision", "empty": ""})
    metrics = []
    for step in range(steps):
        loss = {7: math.nan, 8: math.inf, 9: -math.inf}.get(step, 1 / (step + 1))
        metrics.append(Metric("train/loss", loss, t0 + step // 3, step))  # three steps per millisecond
        if step % 100 == 0:
            metrics.append(Metric("val acc: top-1", step / steps, t0 + step // 3, step))
    metrics.append(Metric("train/loss", 0.5, t0 + 5, 5))  # the same step again, later
    for i in range(0, len(metrics), 1000):
        client.log_batch(parent.info.run_id, metrics=metrics[i:i + 1000])
    with mlflow.start_run(run_name="child", nested=True) as child:
        mlflow.log_metric("loss", 2.0, step=0)
        mlflow.log_metric("loss", 1.0, step=1)
    client.set_terminated(child.info.run_id, "FAILED")
with mlflow.start_run(run_name="gone") as gone:
    mlflow.log_metric("loss", 1.0)
client.delete_run(gone.info.run_id)
mlflow.set_experiment("other")
with mlflow.start_run(run_name="stopped") as stopped:
    mlflow.log_metric("x", 3.0, step=4)
client.set_terminated(stopped.info.run_id, "KILLED")

def spelled(v):
    return v if math.isfinite(v) else repr(v)

runs = {}
for name in ("mnist", "other"):
    for run in client.search_runs([client.get_experiment_by_name(name).experiment_id]):
        history = {key: [[m.step, m.timestamp, spelled(m.value)]
                         for m in client.get_metric_history(run.info.run_id, key)]
                   for key in run.data.metrics}
        runs[run.info.run_id] = {"experiment": name, "name": run.info.run_name, "status": run.info.status,
                                 "params": run.data.params, "tags": run.data.tags, "history": history}
json.dump(runs, open(out, "w"))
"""


@pytest.fixture(scope="module")
def mlruns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """An MLflow file store, and what MLflow's own client reads back from it."""
    root = tmp_path_factory.mktemp("mlflow")
    store, truth = root / "mlruns", root / "truth.json"
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true", "GIT_PYTHON_REFRESH": "quiet"}
    subprocess.run([sys.executable, "-c", WRITER, str(store), str(STEPS), str(truth)], env=env, check=True,
                   timeout=300, capture_output=True)
    return store, json.loads(truth.read_text())


def _value(y: float | str) -> float:
    return float(y) if isinstance(y, str) else y  # NaN and ±Inf are strings in both JSONs


def test_a_file_store_imports_exactly_as_mlflow_reads_it_and_a_second_import_sends_nothing(
        mlruns, mosquitto, bridge_factory, spool_dir, tmp_path):
    store, truth = mlruns
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    import_command("mlflow", store, mosquitto.url, bridge.url, spool_dir)
    names = {run_id: f"{r['name']}-{run_id[:12]}" for run_id, r in truth.items()}
    listed = {(r["project"], r["run"]): r for r in get_json(bridge.url, "/api/v1/runs")["runs"]}
    assert set(listed) == {(r["experiment"], names[i]) for i, r in truth.items()}  # the deleted run is not there
    total = 0
    for run_id, want in truth.items():
        got = listed[(want["experiment"], names[run_id])]
        assert got["state"] == {"FINISHED": "finished", "FAILED": "failed", "KILLED": "failed"}[want["status"]]
        assert got["config"] == want["params"]
        user_tags = {k: v for k, v in want["tags"].items() if not k.startswith("mlflow.")}
        assert got["tags"] == [f"{k}={v}" if v else k for k, v in sorted(user_tags.items())] + ["mlflow-import"]
        parent = want["tags"].get("mlflow.parentRunId")
        assert got["group"] == (names[parent] if parent else "")
        for key, points in want["history"].items():
            ans = get_json(bridge.url, run_path(want["experiment"], names[run_id]) + "/series", key=key, width=20000)
            assert ans["raw"] and ans["total"] == len(points), key
            p = ans["points"]
            # time_ms is a float of the stored nanoseconds: a millisecond plus the few ns that keep a run's
            # times apart, give or take the float's 0.25 us
            stored = sorted((s, round(t), repr(_value(y))) for s, t, y in zip(p["step"], p["time_ms"], p["y"]))
            assert stored == sorted((s, t, repr(_value(y))) for s, t, y in points), key
            assert all(abs(t - round(t)) < 0.001 for t in p["time_ms"])
            total += len(points)
    assert total == STEPS + STEPS // 100 + 1 + 2 + 1
    ingested = prometheus_value(bridge.url, "curvestream_points_ingested_total")
    assert ingested == total

    again = import_command("mlflow", store, mosquitto.url, bridge.url, spool_dir)
    assert again["summary"].startswith("nothing new"), again["summary"]
    assert prometheus_value(bridge.url, "curvestream_points_ingested_total") == ingested
    assert prometheus_value(bridge.url, "curvestream_batches_duplicate_total") == 0
