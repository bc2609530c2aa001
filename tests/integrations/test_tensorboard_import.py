"""``curvestream import tensorboard`` of a directory written by torch's
SummaryWriter, run as the real command against real Mosquitto and a bridge on
DuckDB: every event stored exactly (TensorBoard's loader keeps every event
here only because it is told to), a second import sends nothing and says
"nothing new", and an
import killed halfway and run again ends exact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from helpers import get_json, prometheus_value, run_path, run_state
from servers import wait_until
from tensorboard_files import read_run, run_dirs

PER_TAG = 20_000
PROJECT = "imported"


@pytest.fixture(scope="module")
def torch_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/exp: 20,000 scalars per tag (old and new style), add_scalars, histograms, text, hparams."""
    root = tmp_path_factory.mktemp("tb") / "runs"
    rng = np.random.default_rng(11)
    with TorchWriter(str(root / "exp")) as w:
        for step in range(PER_TAG):
            w.add_scalar("train/loss", float(rng.random()), step)
            w.add_scalar("train/lr", 1e-3 / (1 + step), step, new_style=True)
            if step % 10 == 0:
                w.add_scalars("acc", {"train": step / PER_TAG, "val": step / PER_TAG / 2}, step)
            if step % 2000 == 0:
                w.add_histogram("layer/weights", torch.from_numpy(rng.normal(size=500) * (1 + step)), step)
                w.add_text("samples", f"step {step}: «sample» text", step)
        w.add_hparams({"lr": 1e-3, "layers": 4, "act": "gelu"}, {"hparam/final_loss": 0.125})
    with TorchWriter(str(root / "second")) as w:
        w.add_scalar("loss", float("nan"), 0)
        w.add_scalar("loss", float("inf"), 1)
        w.add_scalar("loss", -2.5, 2)
    return root


def _import(logdir: Path, mosquitto, bridge, spool_dir: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "curvestream.cli", "import", "tensorboard", str(logdir), "--project", PROJECT],
        env={**os.environ, "CURVESTREAM_MQTT_URL": mosquitto.url, "CURVESTREAM_BRIDGE_URL": bridge.url,
             "CURVESTREAM_SPOOL_DIR": str(spool_dir), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"import failed ({proc.returncode}):\n{out}\n{err}"
    return out


def _stored_series(base: str, run: str, key: str) -> list[tuple[int, float, float]]:
    ans = get_json(base, run_path(PROJECT, run) + "/series", key=key, width=20000)
    assert ans["raw"], f"{run}/{key} answered in rollups"
    p = ans["points"]
    return list(zip(p["step"], [t / 1000 for t in p["time_ms"]], p["y"]))


def _run_name(rel: str) -> str:
    return "runs" if rel == "." else rel


def _assert_exact(base: str, logdir: Path) -> int:
    """Every event of every run under ``logdir`` is stored with its step, wall time and value; the count."""
    runs = {(r["project"], r["run"]): r for r in get_json(base, "/api/v1/runs")["runs"]}
    total = 0
    for rel in run_dirs(str(logdir)):
        tb, run = read_run(str(logdir / rel)), _run_name(rel)
        assert runs[(PROJECT, run)]["state"] == "finished"
        assert runs[(PROJECT, run)]["config"] == tb["hparams"]
        for key, events in tb["scalars"].items():
            stored = _stored_series(base, run, key)
            assert [s for s, _, _ in stored] == [s for s, _, _ in events], f"{run}/{key}: steps differ"
            for (_, wall, value), (_, tb_wall, tb_value) in zip(stored, events):
                assert abs(wall - tb_wall) < 2e-6
                if isinstance(value, str):  # NaN and ±Infinity travel as strings in JSON
                    assert value == {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[str(tb_value)]
                else:
                    assert value == tb_value  # float32 in the file, the same float32 stored
            total += len(events)
        for key, events in tb["histograms"].items():
            stored = get_json(base, run_path(PROJECT, run) + "/histograms", key=key)["histograms"]
            assert [(h["step"], h["count"], h["edges"]) for h in stored] == [
                (s, h.num, list(h.bucket_limit)) for s, _, h in events]
            total += len(events)
        for key, events in tb["texts"].items():
            stored = get_json(base, run_path(PROJECT, run) + "/texts", key=key)["texts"]
            assert [(t["step"], t["text"]) for t in stored] == [(s, v) for s, _, v in events]
            total += len(events)
    return total


def test_an_import_stores_every_event_exactly_and_a_second_import_nothing_new(
        torch_logdir, mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    _finish(_import(torch_logdir, mosquitto, bridge, spool_dir))
    assert len(read_run(str(torch_logdir / "exp"))["scalars"]["train/loss"]) == PER_TAG
    total = _assert_exact(bridge.url, torch_logdir)
    assert total == 2 * PER_TAG + 2 * PER_TAG // 10 + 1 + 3 + 10 + 10
    assert prometheus_value(bridge.url, "curvestream_points_ingested_total") == total

    batches = prometheus_value(bridge.url, "curvestream_batches_ingested_total")
    again = json.loads(_finish(_import(torch_logdir, mosquitto, bridge, spool_dir)))
    assert again["summary"].startswith("nothing new"), again["summary"]
    assert [r["new_points"] for r in again["runs"]] == [0] * len(again["runs"])
    assert prometheus_value(bridge.url, "curvestream_points_ingested_total") == total
    assert prometheus_value(bridge.url, "curvestream_batches_ingested_total") == batches
    assert prometheus_value(bridge.url, "curvestream_batches_duplicate_total") == 0  # asked first, sent nothing
    assert _assert_exact(bridge.url, torch_logdir) == total
    assert not list(spool_dir.iterdir())


def test_an_import_killed_halfway_and_run_again_ends_exact(
    torch_logdir, mosquitto, bridge_factory, spool_dir, tmp_path
):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    proc = _import(torch_logdir, mosquitto, bridge, spool_dir, CURVESTREAM_MAX_INFLIGHT_BATCHES="1")
    def ingested():
        return prometheus_value(bridge.url, "curvestream_points_ingested_total")
    wait_until(lambda: ingested() > 0, 120, "the first imported batch to be stored", interval=0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    partial = ingested()
    assert 0 < partial < 2 * PER_TAG, "the import was not stopped halfway"
    assert list(spool_dir.iterdir()), "the killed import left its spool"
    time.sleep(0.5)

    _finish(_import(torch_logdir, mosquitto, bridge, spool_dir))
    total = _assert_exact(bridge.url, torch_logdir)
    assert prometheus_value(bridge.url, "curvestream_points_ingested_total") == total
    assert run_state(bridge.url, PROJECT, "exp") == "finished"
