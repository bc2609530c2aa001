"""Replaying spools: ``spool_status`` on live, dead and damaged spools, and
``sync_spool`` into a real bridge on DuckDB, over the real broker or the HTTP
fallback. (The CLI around them: tests/e2e/test_client_recovery.py.)"""

from __future__ import annotations

import itertools
import os
import pathlib
import time
from collections.abc import Iterator

import pytest

from curvestream_wire.v1 import run_pb2

import curvestream
from curvestream.encode import BatchBuilder
from curvestream.settings import Settings
from curvestream.spool import Spool, iter_records
from curvestream.spool_replay import spool_status, sync_spool
from helpers import metric_counts, prometheus_value, run_state, stored_steps
from servers import BridgeProcess, wait_until

NOWHERE = "mqtt://127.0.0.1:1"  # nothing listens: the broker is unreachable


def _left_by_a_killed_trainer(spool_dir: pathlib.Path, project: str, run: str, steps: int,
                              per_batch: int = 50) -> Spool:
    """A spool as a trainer killed mid-run leaves it: metadata, ``running``, points, and no final status."""
    producer = os.urandom(16)
    spool = Spool.create(spool_dir, producer, project, run)
    seqs = itertools.count(1)
    builder = BatchBuilder(producer, project, run, lambda: next(seqs), time.time_ns)
    builder.add(run_pb2.RunMeta(version=1, project=project, run=run, producer_id=producer, config_json="{}"))
    builder.add(run_pb2.RunStatus(version=1, project=project, run=run, state=run_pb2.RUN_STATE_RUNNING,
                                  updated_ns=time.time_ns(), producer_id=producer))
    for step in range(steps):
        builder.add((step, time.time_ns(), {"x": float(step)}))
        if builder.points >= per_batch:
            spool.append(*builder.seal()[:2], now=0.0)
    if not builder.empty:
        spool.append(*builder.seal()[:2], now=0.0)
    spool.sync()
    spool.release(remove_if_empty=False)  # the process is gone: its lock with it
    return spool


def _offline_run(spool_dir: pathlib.Path, project: str, run: str, steps: int) -> None:
    with curvestream.init(project=project, id=run, mode="offline", spool_dir=str(spool_dir)) as r:
        for step in range(steps):
            r.log({"x": float(step)}, step=step)
    assert r.finish().batches_left_in_spool > 0


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory, mosquitto) -> Iterator[BridgeProcess]:
    workdir = tmp_path_factory.mktemp("sync-bridge")
    server = BridgeProcess(workdir, f"duckdb:///{workdir / 'store.duckdb'}", mosquitto.url)
    server.start()
    yield server
    server.stop()


# ---------------------------------------------------------------- status


def test_status_tells_a_dead_producers_spool_from_a_live_one(spool_dir):
    dead = _left_by_a_killed_trainer(spool_dir, "proj", "killed ü", steps=120)
    live = Spool.create(spool_dir, os.urandom(16), "proj", "still running")
    live.append(1, b"batch", now=0.0)
    try:
        by_producer = {s["producer"]: s for s in spool_status(spool_dir)}
        assert by_producer[dead.producer_id.hex()] == {
            "producer": dead.producer_id.hex(), "project": "proj", "run": "killed ü", "live": False,
            "segments": 1, "bytes": (dead.dir / f"{1:020d}.seg").stat().st_size, "batches": 3, "damaged": []}
        busy = by_producer[live.producer_id.hex()]
        assert (busy["live"], busy["project"], busy["segments"], busy["batches"]) == (True, "?", 1, None)
        assert busy["bytes"] > 0
        assert (dead.dir / f"{1:020d}.seg").exists(), "looking does not consume the spool"
    finally:
        live.release()


def test_status_reports_a_damaged_record(spool_dir):
    spool = _left_by_a_killed_trainer(spool_dir, "proj", "bit rot", steps=120)
    segment = spool.dir / f"{1:020d}.seg"
    data = bytearray(segment.read_bytes())
    header_end = spool.segments[0].data_start
    second = [pos for pos, _, _ in iter_records(bytes(data), header_end, len(data))][1]
    data[second + 40] ^= 0xFF
    segment.write_bytes(bytes(data))
    (status,) = spool_status(spool_dir)
    assert status["batches"] == 2
    assert len(status["damaged"]) == 1 and "checksum mismatch" in status["damaged"][0]


def test_status_of_an_empty_or_missing_directory_is_empty(tmp_path):
    assert spool_status(tmp_path) == []
    assert spool_status(tmp_path / "never created") == []


# ---------------------------------------------------------------- sync


def test_an_offline_run_is_synced_over_the_broker_with_its_final_status(bridge, mosquitto, spool_dir):
    _offline_run(spool_dir, "sync", "offline over mqtt", steps=500)
    before = prometheus_value(bridge.url, "curvestream_batches_ingested_total", source="mqtt")
    report = sync_spool(Settings(mqtt_url=mosquitto.url, bridge_url=bridge.url, spool_dir=str(spool_dir)),
                        timeout_s=60)
    assert report["left_batches"] == 0 and report["skipped_live_producers"] == 0
    assert [(r["run"], r["left_batches"], r["marked_lost"]) for r in report["runs"]] == [
        ("offline over mqtt", 0, False)]
    assert metric_counts(bridge.url, "sync", "offline over mqtt") == {"x": 500}
    assert stored_steps(bridge.url, "sync", "offline over mqtt", "x", 499) == list(range(500))
    assert run_state(bridge.url, "sync", "offline over mqtt") == "finished"
    assert prometheus_value(bridge.url, "curvestream_batches_ingested_total", source="mqtt") > before
    assert not any(spool_dir.iterdir()), "the synced spool is gone"


def test_a_killed_runs_spool_is_synced_over_the_http_fallback_and_the_run_marked_lost(bridge, spool_dir):
    _left_by_a_killed_trainer(spool_dir, "sync", "killed, over http", steps=300)
    before = prometheus_value(bridge.url, "curvestream_batches_ingested_total", source="http")
    report = sync_spool(Settings(mqtt_url=NOWHERE, bridge_url=bridge.url, spool_dir=str(spool_dir),
                                 fallback_after_ms=0), timeout_s=60)
    assert [(r["left_batches"], r["marked_lost"]) for r in report["runs"]] == [(0, True)]
    assert metric_counts(bridge.url, "sync", "killed, over http") == {"x": 300}
    wait_until(lambda: run_state(bridge.url, "sync", "killed, over http") == "lost", 10, "the run marked lost")
    assert prometheus_value(bridge.url, "curvestream_batches_ingested_total", source="http") >= before + 6
    assert not any(spool_dir.iterdir())


def test_a_killed_runs_spool_synced_over_the_broker_is_marked_lost_too(bridge, mosquitto, spool_dir):
    _left_by_a_killed_trainer(spool_dir, "sync", "killed, over mqtt", steps=100)
    report = sync_spool(Settings(mqtt_url=mosquitto.url, bridge_url="", spool_dir=str(spool_dir)), timeout_s=60)
    assert [(r["left_batches"], r["marked_lost"]) for r in report["runs"]] == [(0, True)]
    assert metric_counts(bridge.url, "sync", "killed, over mqtt") == {"x": 100}
    wait_until(lambda: run_state(bridge.url, "sync", "killed, over mqtt") == "lost", 10, "the run marked lost")


def test_a_live_producers_spool_is_left_alone(spool_dir):
    live = Spool.create(spool_dir, os.urandom(16), "sync", "still running")
    live.append(1, b"batch", now=0.0)
    try:
        report = sync_spool(Settings(mqtt_url=NOWHERE, bridge_url="", spool_dir=str(spool_dir)), timeout_s=1)
        assert (report["skipped_live_producers"], report["runs"], report["left_batches"]) == (1, [], 0)
        assert [s.records for s in live.snapshot()] == [1]
    finally:
        live.release()


def test_a_sync_that_cannot_reach_the_bridge_keeps_every_batch_and_marks_nothing(spool_dir):
    spool = _left_by_a_killed_trainer(spool_dir, "sync", "nobody home", steps=120)
    report = sync_spool(Settings(mqtt_url=NOWHERE, bridge_url="http://127.0.0.1:1", spool_dir=str(spool_dir),
                                 fallback_after_ms=0), timeout_s=1.5)
    assert report["left_batches"] == 3
    assert [(r["left_batches"], r["marked_lost"]) for r in report["runs"]] == [(3, False)]
    assert (spool.dir / f"{1:020d}.seg").exists(), "everything waits for the next sync"
    assert spool_status(spool_dir)[0]["batches"] == 3
