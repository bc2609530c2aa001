"""A script written against W&B's API (tests/wandb_style_train.py) runs with the
real wandb package (``WANDB_MODE=disabled``, the reference), and with its one
import line switched to ``import curvestream.wandb as wandb`` it streams through
real Mosquitto into a bridge process: its curves (at W&B's steps, and against
``epoch`` where ``define_metric`` says so), histograms, text, config, summary,
tags, group, notes and its alert arrive."""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import wandb_style_train as script
from helpers import get_json, metric_counts, run_path

SCRIPT = pathlib.Path(script.__file__)


def _run(path: pathlib.Path, env: dict[str, str], cwd: pathlib.Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(path)], env={**os.environ, **env}, cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _points(bridge_url: str, run: str, key: str) -> tuple[list[int], list[float]]:
    got = get_json(bridge_url, run_path("wandb-switch", run) + "/series", key=key, width=5000)
    assert got["raw"]
    ys = [float(y) if not isinstance(y, str) else float(y.replace("Infinity", "inf")) for y in got["points"]["y"]]
    return got["points"]["step"], ys


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def test_the_script_runs_with_the_real_wandb_package_as_the_reference(tmp_path):
    proc = _run(SCRIPT, {"WANDB_MODE": "disabled", "WANDB_SILENT": "true"}, tmp_path)
    assert json.loads(proc.stdout.splitlines()[-1])["name"] == "baseline"


def test_the_wandb_script_switched_by_one_import_line_stores_what_it_logged(mosquitto, bridge_factory, spool_dir,
                                                                            tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    source = SCRIPT.read_text()
    switched = tmp_path / "train.py"
    switched.write_text(source.replace("import wandb  #", "import curvestream.wandb as wandb  #", 1))
    assert switched.read_text().count("\n") == source.count("\n")  # one line changed, nothing else
    proc = _run(switched, {"CURVESTREAM_MQTT_URL": mosquitto.url, "CURVESTREAM_BRIDGE_URL": bridge.url,
                           "CURVESTREAM_SPOOL_DIR": str(spool_dir), "PYTHONPATH": str(SCRIPT.parent)}, tmp_path)
    printed = json.loads(proc.stdout.splitlines()[-1])
    run = printed["id"]
    assert printed["name"] == "baseline" and run.startswith("baseline-") and printed["project"] == "wandb-switch"
    # media are accepted, not stored, one warning per type
    assert proc.stderr.count("Image values are not stored") == 1 and proc.stderr.count("Table values") == 1

    want = script.expected()
    (record,) = get_json(bridge.url, "/api/v1/runs", project="wandb-switch")["runs"]
    assert record["run"] == run and record["name"] == "baseline" and record["state"] == "finished"
    assert record["tags"] == ["baseline", "from-wandb"] and record["group"] == "sweep-1"
    assert record["notes"] == "first try with the W&B API"
    assert record["config"] == {"lr": 0.01, "epochs": 3, "optimizer": {"name": "adam", "beta1": 0.9},
                                "batch_size": 32, "dropout": 0.1}
    min_loss = min(want["scalars"]["train/loss"][1])
    assert record["summary"]["best_acc"] == script.val_acc(script.EPOCHS - 1)
    assert record["summary"]["final_loss"] == script.loss_at(script.EPOCHS - 1, script.BATCHES - 1)
    assert record["summary"]["train/loss"] == {"min": min_loss}

    counts = metric_counts(bridge.url, "wandb-switch", run)
    assert {k: counts.get(k) for k in want["scalars"]} == {k: len(v[0]) for k, v in want["scalars"].items()}
    for key, (steps, values) in want["scalars"].items():
        got_steps, got_values = _points(bridge.url, run, key)
        assert got_steps == steps and _same(got_values, values), key

    hist = {k: get_json(bridge.url, run_path("wandb-switch", run) + "/histograms", key=k)["histograms"]
            for k in ("weights", "grad")}
    assert [h["step"] for h in hist["weights"]] == want["weights_steps"]
    assert all(h["count"] == 101 and h["min"] == -(e + 1) and h["max"] == e + 1
               for e, h in enumerate(hist["weights"]))
    (grad,) = hist["grad"]
    assert grad["step"] == want["grad_step"] and grad["edges"] == script.GRAD_EDGES
    assert grad["counts"] == script.GRAD_COUNTS
    texts = get_json(bridge.url, run_path("wandb-switch", run) + "/texts", key="sample")["texts"]
    assert [(t["step"], t["text"]) for t in texts] == [(want["text_step"], "the cat sat on the mat")]
    assert not {"examples", "table"} & set(counts)

    (alert,) = [a for a in get_json(bridge.url, "/api/v1/alerts", project="wandb-switch", run=run)["alerts"]
                if a["kind"] == "code"]  # in the run's last batch: stored once the run finished
    assert (alert["rule"], alert["severity"]) == ("Accuracy below target", "warning")
    assert alert["message"].endswith("raised at step 1001: best accuracy 0.70 < 0.9")
    assert alert["fired_step"] == 1001 and alert["state"] == "resolved"  # resolved as the run finished
