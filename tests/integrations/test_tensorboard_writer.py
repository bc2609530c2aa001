"""curvestream's SummaryWriter beside torch's: the same calls, and what TensorBoard
reads back from torch's event files (every event kept) is what curvestream
stored, through real Mosquitto and a real bridge on DuckDB."""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from curvestream.tensorboard import SummaryWriter
from helpers import get_json, run_path, run_state
from servers import wait_until
from tensorboard_files import read_run

STEPS = 400


def _points(base: str, project: str, run: str, key: str) -> list[tuple[int, float, float]]:
    ans = get_json(base, run_path(project, run) + "/series", key=key, width=20000)
    assert ans["raw"]
    p = ans["points"]
    return list(zip(p["step"], [t / 1000 for t in p["time_ms"]], p["y"]))


def _same_points(stored: list, expected: list) -> None:
    assert [s for s, _, _ in stored] == [s for s, _, _ in expected]
    for (_, wall, value), (_, tb_wall, tb_value) in zip(stored, expected):
        assert abs(wall - tb_wall) < 2e-6
        assert value == pytest.approx(tb_value, rel=1e-6, abs=1e-30)  # TensorBoard keeps float32


def _curvestream_buckets(value) -> tuple[list, list]:
    """TensorBoard keeps right limits only: an empty first bucket's limit is the
    left edge (what torch writes); otherwise the minimum is."""
    limits, counts = list(value.bucket_limit), list(value.bucket)
    if counts[0] == 0:
        return limits, counts[1:]
    return [value.min, *limits], counts


def _log_both(writers: list, t0: float) -> dict:
    rng = np.random.default_rng(3)
    for step in range(STEPS):
        wall = t0 + step * 0.01
        loss, val = float(rng.random()), float(rng.random())
        for w in writers:
            w.add_scalar("train/loss", loss, step, walltime=wall)
            w.add_scalar("lr", torch.tensor(0.1 / (step + 1)), step, walltime=wall + 0.001, new_style=True)
            w.add_scalars("losses", {"train": loss, "val": val}, step, walltime=wall + 0.002)
        if step % 100 == 0:
            weights = torch.from_numpy(rng.normal(size=2000) * (step + 1))
            for w in writers:
                w.add_histogram("weights", weights, step, walltime=wall + 0.003)
                w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=17.0,
                                    bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3], global_step=step,
                                    walltime=wall + 0.004)
                w.add_text("notes", f"step {step}: ünïcode, \"quotes\"", step, walltime=wall + 0.005)
    hparams = {"lr": 0.1, "batch_size": 32, "optimizer": "adam", "amsgrad": True}
    for w in writers:
        w.add_hparams(hparams, {"hparam/accuracy": 0.875}, global_step=STEPS)
        w.close()
    return hparams


def test_torch_event_files_read_back_equal_what_curvestream_stored(mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    torch_dir = tmp_path / "tb" / "exp"
    ours = SummaryWriter(str(tmp_path / "cs" / "exp"), mqtt_url=mosquitto.url, bridge_url=bridge.url,
                         spool_dir=str(spool_dir))
    assert (ours.run.project, ours.run.display_name) == ("cs", "exp") and ours.run.name.startswith("exp-")
    assert ours.get_logdir() == ours.log_dir == str(tmp_path / "cs" / "exp")
    hparams = _log_both([TorchWriter(str(torch_dir)), ours], time.time())

    tb = read_run(str(torch_dir))
    project, run = "cs", ours.run.name
    wait_until(lambda: run_state(bridge.url, project, run) == "finished", 60, "the run to finish")
    for key in ("train/loss", "lr"):
        assert len(tb["scalars"][key]) == STEPS
        _same_points(_points(bridge.url, project, run, key), tb["scalars"][key])
    for sub in ("train", "val"):  # add_scalars: one run per sub-tag, named like torch's sub-directories
        sub_tb = read_run(str(torch_dir / f"losses_{sub}"))
        _same_points(_points(bridge.url, project, f"{run}/losses_{sub}", "losses"), sub_tb["scalars"]["losses"])

    for key in ("weights", "raw"):
        stored = get_json(bridge.url, run_path(project, run) + "/histograms", key=key)["histograms"]
        expected = tb["histograms"][key]
        assert [h["step"] for h in stored] == [s for s, _, _ in expected] == [0, 100, 200, 300]
        for h, (_, wall, value) in zip(stored, expected):
            assert abs(h["time_ms"] / 1000 - wall) < 2e-6
            assert (h["edges"], h["counts"]) == _curvestream_buckets(value)
            assert (h["min"], h["max"], h["sum"], h["count"]) == pytest.approx(
                (value.min, value.max, value.sum, value.num))

    texts = get_json(bridge.url, run_path(project, run) + "/texts", key="notes")["texts"]
    assert [(t["step"], t["text"]) for t in texts] == [(s, v) for s, _, v in tb["texts"]["notes"]]
    assert all(abs(t["time_ms"] / 1000 - w) < 2e-6 for t, (_, w, _) in zip(texts, tb["texts"]["notes"]))

    runs = {(r["project"], r["run"]): r for r in get_json(bridge.url, "/api/v1/runs")["runs"]}
    (hp_dir,) = [d for d in torch_dir.iterdir() if d.is_dir() and not d.name.startswith("losses_")]
    tb_hp = read_run(str(hp_dir))
    assert tb_hp["hparams"] == hparams == runs[(project, run)]["config"]
    assert runs[(project, f"{run}/losses_train")]["name"] == "exp/losses_train"
    (accuracy,) = _points(bridge.url, project, run, "hparam/accuracy")
    (tb_accuracy,) = tb_hp["scalars"]["hparam/accuracy"]
    assert (accuracy[0], accuracy[2]) == (tb_accuracy[0], pytest.approx(tb_accuracy[2]))


def test_tee_writes_real_event_files_with_the_same_wall_times(mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    log_dir = tmp_path / "runs" / "teed"
    with SummaryWriter(str(log_dir), tee=True, mqtt_url=mosquitto.url, bridge_url=bridge.url,
                       spool_dir=str(spool_dir)) as writer:
        for step in range(50):
            writer.add_scalar("loss", 1 / (step + 1), step)
        writer.add_image("picture", np.zeros((3, 4, 4)), 0)  # goes to the event file only
    tb = read_run(str(log_dir))
    wait_until(lambda: run_state(bridge.url, "runs", writer.run.name) == "finished", 60, "the run to finish")
    _same_points(_points(bridge.url, "runs", writer.run.name, "loss"), tb["scalars"]["loss"])


def test_methods_curvestream_does_not_store_warn_once_each_and_change_nothing(spool_dir, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="curvestream"):
        with SummaryWriter(str(tmp_path / "runs" / "quiet"), mode="offline", spool_dir=str(spool_dir)) as writer:
            for step in range(3):
                writer.add_image("img", np.zeros((3, 2, 2)), step)
                writer.add_figure("fig", object(), step)
                writer.add_scalar("loss", math.pi, step)
    warned = [r.getMessage() for r in caplog.records if "is not stored by curvestream" in r.getMessage()]
    assert len(warned) == 2 and "add_image" in warned[0] and "add_figure" in warned[1]
    with pytest.raises(AttributeError):
        writer.add_nonsense("x", 1)  # type: ignore[attr-defined]


def test_tensorboardx_constructor_names_the_run_from_logdir_each_writer_a_new_run(spool_dir, tmp_path):
    with SummaryWriter(logdir=str(tmp_path / "experiments" / "lr=0.1"), comment="x", purge_step=None, max_queue=5,
                       flush_secs=30, filename_suffix=".v2", write_to_disk=False, mode="offline",
                       spool_dir=str(spool_dir)) as writer:
        assert (writer.run.project, writer.run.display_name) == ("experiments", "lr=0.1")
        assert writer.run.name.startswith("lr=0.1-")
        assert writer.logdir == writer.get_logdir() == str(tmp_path / "experiments" / "lr=0.1")
    named = SummaryWriter(str(tmp_path / "a" / "b"), project="p", run="r", mode="offline", spool_dir=str(spool_dir))
    assert (named.run.project, named.run.display_name) == ("p", "r") and named.run.name.startswith("r-")
    named.close()


def test_a_block_that_raises_finishes_the_run_as_failed(mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    with pytest.raises(RuntimeError):
        with SummaryWriter(str(tmp_path / "runs" / "boom"), mqtt_url=mosquitto.url, bridge_url=bridge.url,
                           spool_dir=str(spool_dir)) as writer:
            writer.add_scalar("loss", 1.0, 0)
            raise RuntimeError("diverged")
    wait_until(lambda: run_state(bridge.url, "runs", writer.run.name) == "failed", 60, "the run to be failed")


def test_a_script_that_sets_up_no_logging_still_sees_the_warning_once(tmp_path):
    import subprocess
    import sys

    script = ("import numpy as np\nfrom curvestream.tensorboard import SummaryWriter\n"
              f"with SummaryWriter({str(tmp_path / 'runs' / 'plain')!r}, mode='offline', "
              f"spool_dir={str(tmp_path / 'spool')!r}) as writer:\n"
              "    for step in range(3):\n"
              "        writer.add_image('img', np.zeros((3, 2, 2)), step)\n"
              "        writer.add_scalar('loss', 1.0, step)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "SummaryWriter.add_image is not stored" in line]
    assert said == ["curvestream: SummaryWriter.add_image is not stored by curvestream and is ignored (tee=True "
                    "also writes TensorBoard event files)"], done.stderr
