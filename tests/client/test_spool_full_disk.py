"""A trainer's spool on a filesystem that fills up (a small tmpfs): ``log()``
keeps returning, every point is either in the spool, intact, or counted as
lost, and the loss is reported by ``finish()`` and by ``curvestream status``."""

from __future__ import annotations

import os
import subprocess
import sys

from test_run import _points, _spooled_batches

import curvestream
from curvestream.losses import read_losses
from servers import wait_until


def spooled_or_dropped(run: curvestream.Run, n: int) -> None:
    stats = run.recorder.stats
    wait_until(
        lambda: stats.points_spooled + stats.points_dropped_spool_full >= n, 60, f"{n} points through the recorder"
    )


def test_a_spool_on_a_full_disk_keeps_log_returning_and_counts_every_point_it_could_not_keep(small_disk):
    spool_dir = small_disk.path / "spool"
    run = curvestream.init(project="unit", id="full disk", mode="offline", spool_dir=str(spool_dir),
                           max_batch_points=2000, flush_interval_ms=20)
    for i in range(20_000):
        run.log({"loss": float(i)}, step=i)
    spooled_or_dropped(run, 20_000)
    small_disk.fill(leave_bytes=30_000)  # room for a record or two, then none
    for i in range(20_000, 60_000):
        run.log({"loss": float(i)}, step=i)  # returns: the training goes on
    spooled_or_dropped(run, 60_000)
    assert [r["points"] for r in read_losses(spool_dir)] == [run.recorder.stats.points_dropped_spool_full] != [0], \
        "the live run's loss is on record while the disk is full"
    small_disk.free()
    for i in range(60_000, 80_000):
        run.log({"loss": float(i)}, step=i)
    report = run.finish()
    assert report.points_dropped_spool_full > 0 and not report.complete
    assert report.points_spooled + report.points_dropped_spool_full == report.points_logged >= 80_000

    steps = [p[0] for p in _points(_spooled_batches(spool_dir))["loss"]]
    assert len(steps) == len(set(steps)), "no point twice"
    assert set(range(20_000)) <= set(steps) and set(range(60_000, 80_000)) <= set(steps), \
        "before the disk filled and after space returned, every point is kept"
    assert 80_000 - len(steps) == report.points_dropped_spool_full, "the others are counted lost"

    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    status = subprocess.run([sys.executable, "-m", "curvestream.cli", "status", str(spool_dir)],
                            env={**env, "CURVESTREAM_BRIDGE_URL": ""}, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert f"lost {report.points_dropped_spool_full} points" in status.stdout, status.stdout


def test_a_run_that_lost_nothing_leaves_no_loss_record(spool_dir):
    run = curvestream.init(project="unit", id="fine", mode="offline", spool_dir=str(spool_dir))
    run.log({"loss": 1.0})
    assert run.finish().points_dropped_spool_full == 0  # offline: the batch waits in the spool
    assert read_losses(spool_dir) == [] and not (spool_dir / "losses").exists()


def test_the_empty_loss_record_of_a_run_that_died_is_removed_by_the_next_status(spool_dir):
    from curvestream.losses import LossRecord

    died = LossRecord(spool_dir, b"\x02" * 16, "unit", "killed")
    assert read_losses(spool_dir) == [] and died.path.exists(), "a live run keeps its record"
    os.close(died._fd)  # what the death of its process does
    assert read_losses(spool_dir) == [] and not died.path.exists()


def test_with_spool_full_block_a_full_disk_makes_the_recorder_wait_and_loses_nothing(small_disk):
    spool_dir = small_disk.path / "spool"
    run = curvestream.init(project="unit", id="block", mode="offline", spool_dir=str(spool_dir),
                           spool_full="block", max_batch_points=2000, flush_interval_ms=20)
    small_disk.fill()
    for i in range(10_000):
        run.log({"loss": float(i)}, step=i)
    wait_until(lambda: run.recorder.stats.spool_errors >= 2, 60, "the recorder meeting the full disk")
    assert run.recorder.stats.points_dropped_spool_full == 0
    small_disk.free()
    report = run.finish()
    assert report.points_dropped_spool_full == 0 and report.points_spooled == report.points_logged == 10_000
    assert [p[0] for p in _points(_spooled_batches(spool_dir))["loss"]] == list(range(10_000))
