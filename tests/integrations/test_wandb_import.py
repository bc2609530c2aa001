"""``curvestream import wandb`` of offline runs written by the real ``wandb``
package, run as the real command against real Mosquitto and a bridge on
DuckDB: every history row stored exactly (steps, values with NaN and ±Inf,
times to the microsecond W&B keeps, histograms and text), the config, summary,
tags, group and exit state kept; a second import sends nothing and says
"nothing new"."""

from __future__ import annotations

import decimal
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import get_json, import_command, prometheus_value, run_path

ROWS = 5_000
PROJECT = "vision"

WRITER = r'''
import json, math, sys
import wandb

rows = int(sys.argv[1])
logged = []
run = wandb.init(project="vision", name="resnet", mode="offline", tags=["baseline", "ü tag"], group="sweep-1",
                 config={"lr": 0.1, "opt": {"name": "adam", "betas": [0.9, 0.99]}})
for i in range(rows):
    step = 3 * i
    row = {"train/loss": 1 / (i + 1), "acc": i / rows, 'lr, "odd" = key ü': 0.5 ** (i % 40)}
    row["train/loss"] = {7: math.nan, 8: math.inf, 9: -math.inf}.get(i, row["train/loss"])
    logged.extend([step, k, repr(v)] for k, v in row.items())
    if i % 100 == 0:
        row["weights"] = wandb.Histogram(np_histogram=([1, 2, 3], [0.0, 1.0, 2.0, 3.0]))
        row["note"] = f"text {step} «ü»"
    run.log(row, step=step)
run.config.update({"late": 5})
run.summary["best_acc"] = 0.99
run.finish()
failed = wandb.init(project="vision", id="crash001", mode="offline", config={"seed": 1})
for step in range(10):
    failed.log({"loss": float(step)})
failed.finish(exit_code=3)
json.dump({"logged": logged, "run_id": run.id}, open(sys.argv[2], "w"))
'''


@pytest.fixture(scope="module")
def wandb_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A folder with the wandb/ directory of two offline runs, and what the script logged."""
    root = tmp_path_factory.mktemp("wandb-runs")
    truth = root / "logged.json"
    env = {**os.environ, "WANDB_DIR": str(root), "WANDB_SILENT": "true", "WANDB_MODE": "offline"}
    subprocess.run([sys.executable, "-c", WRITER, str(ROWS), str(truth)], env=env, check=True, timeout=300)
    return root / "wandb", json.loads(truth.read_text())


def _timestamps(folder: Path, run_id: str) -> dict[int, decimal.Decimal]:
    """step -> the ``_timestamp`` W&B wrote in the run's history row, exactly as its digits say."""
    from wandb.proto.wandb_internal_pb2 import Record

    from curvestream.importers.wandb_records import read_records

    out = {}
    (path,) = folder.glob(f"offline-run-*-{run_id}/run-{run_id}.wandb")
    for _, data in read_records(str(path)):
        rec = Record()
        rec.ParseFromString(data)
        if rec.WhichOneof("record_type") == "history":
            items = {i.key or ".".join(i.nested_key): i.value_json for i in rec.history.item}
            out[rec.history.step.num] = decimal.Decimal(items["_timestamp"])
    return out


def test_offline_runs_import_exactly_and_a_second_import_sends_nothing(wandb_dir, mosquitto, bridge_factory,
                                                                      spool_dir, tmp_path):
    folder, truth = wandb_dir
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    report = import_command("wandb", folder, mosquitto.url, bridge.url, spool_dir)
    run = f"resnet-{truth['run_id']}"
    assert sorted(r["run"] for r in report["runs"]) == ["crash001", run]

    runs = {r["run"]: r for r in get_json(bridge.url, "/api/v1/runs", project=PROJECT)["runs"]}
    main, crashed = runs[run], runs["crash001"]
    assert (main["state"], crashed["state"]) == ("finished", "failed")
    assert "exit code 3" in crashed["reason"]
    assert main["config"] == {"lr": 0.1, "opt": {"name": "adam", "betas": [0.9, 0.99]}, "late": 5}
    assert crashed["config"] == {"seed": 1}
    assert main["tags"] == ["baseline", "ü tag", "wandb-import"] and main["group"] == "sweep-1"
    assert main["summary"]["best_acc"] == 0.99 and main["summary"]["train/loss"] == 1 / ROWS

    expected: dict[str, list[tuple[int, float]]] = {}
    for step, key, value in truth["logged"]:
        expected.setdefault(key, []).append((step, float(value)))
    stamps = _timestamps(folder, truth["run_id"])
    total = 0
    for key, points in expected.items():
        ans = get_json(bridge.url, run_path(PROJECT, run) + "/series", key=key, width=20000)
        assert ans["raw"] and ans["total"] == ROWS, key
        p = ans["points"]
        got = [(s, {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(y, y))
               for s, y in zip(p["step"], p["y"])]
        assert [s for s, _ in got] == [s for s, _ in points], key
        for (s, y), (_, want) in zip(got, points):
            assert y == want or (math.isnan(y) and math.isnan(want)), (key, s, y, want)
        for s, t in zip(p["step"], p["time_ms"]):  # W&B keeps microseconds; the JSON answer carries ms as floats
            assert abs(decimal.Decimal(t) - stamps[s] * 1000) < decimal.Decimal("0.001"), (key, s)
        total += len(points)
    hist = get_json(bridge.url, run_path(PROJECT, run) + "/histograms", key="weights")["histograms"]
    assert [(h["step"], h["edges"], h["counts"]) for h in hist] == [
        (3 * i, [0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) for i in range(0, ROWS, 100)]
    notes = get_json(bridge.url, run_path(PROJECT, run) + "/texts", key="note")["texts"]
    assert [(t["step"], t["text"]) for t in notes] == [(3 * i, f"text {3 * i} «ü»") for i in range(0, ROWS, 100)]
    ingested = prometheus_value(bridge.url, "curvestream_points_ingested_total")
    assert ingested == total + 2 * (ROWS // 100) + 10

    again = import_command("wandb", folder, mosquitto.url, bridge.url, spool_dir)
    assert again["summary"].startswith("nothing new"), again["summary"]
    assert prometheus_value(bridge.url, "curvestream_points_ingested_total") == ingested
    assert prometheus_value(bridge.url, "curvestream_batches_duplicate_total") == 0
    assert not list(spool_dir.iterdir())
