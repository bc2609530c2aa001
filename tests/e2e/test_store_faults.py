"""The store failing under a real bridge, broker and trainer: a bug on some
batches (an injected fault: the store engine is the seam) and a disk that
fills up under DuckDB. Nothing is lost, nothing stored twice."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from test_bridge_faults import Streamer, assert_each_point_once_with_its_value

from helpers import metric_counts, prometheus_value
from servers import BridgeProcess, wait_until

pytestmark = pytest.mark.slow

TESTS = pathlib.Path(__file__).resolve().parent.parent


class FaultyBridge(BridgeProcess):
    """The real bridge over a store that raises what ``spec`` names (see tests/faulty_bridge.py)."""

    def __init__(self, workdir: pathlib.Path, store: str, mqtt_url: str, spec: pathlib.Path, **settings: str) -> None:
        super().__init__(workdir, store, mqtt_url, **settings)
        self.spec = spec

    def command(self) -> list[str]:
        return [sys.executable, str(TESTS / "faulty_bridge.py")]

    def env(self) -> dict[str, str]:
        return {**super().env(), "FAULTY_STORE_SPEC": str(self.spec)}


def readyz(bridge: BridgeProcess) -> dict:
    try:
        with urllib.request.urlopen(f"{bridge.url}/readyz", timeout=5) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return json.loads(err.read())


def replay_dead_letters(bridge: BridgeProcess) -> dict:
    done = subprocess.run([sys.executable, "-m", "curvestream_bridge", "replay-dead-letters"],
                          env=bridge.env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_a_store_bug_on_some_batches_parks_them_frees_the_spool_and_a_replay_stores_every_point_once(
        tmp_path, mosquitto, spool_dir):
    spec = tmp_path / "fault.json"
    spec.write_text(json.dumps({"exception": "TypeError", "steps": [20_000, 20_999]}))
    bridge = FaultyBridge(tmp_path / "bridge", f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url, spec,
                          unexpected_error_attempts="3")
    bridge.start()
    try:
        streamer = Streamer(60_000, project="bug", run="poison", mqtt_url=mosquitto.url, bridge_url="",
                            spool_dir=str(spool_dir))
        streamer.start()
        streamer.done()  # complete: nothing rejected, nothing left in the spool
        parked = prometheus_value(bridge.url, "curvestream_parked_batches")
        assert parked >= 1
        assert prometheus_value(bridge.url, "curvestream_batches_parked_total") == parked
        assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0
        assert prometheus_value(bridge.url, "curvestream_store_unexpected_errors_total") >= 3
        stored = metric_counts(bridge.url, "bug", "poison")
        assert all(1_000 <= 60_000 - n < 60_000 for n in stored.values()), stored  # the poisoned batches, no more
        ready = readyz(bridge)
        assert ready["parked_batches"] == parked and ready["unexpected_store_error"].startswith("TypeError")
        assert len(list((tmp_path / "bridge" / "parked").iterdir())) == parked

        spec.unlink()  # the fix
        report = replay_dead_letters(bridge)
        assert report["replayed"] == parked and report["still_parked"] == 0, report
        assert_each_point_once_with_its_value(bridge.url, "bug", "poison", 60_000)
        assert list((tmp_path / "bridge" / "parked").iterdir()) == []
        assert replay_dead_letters(bridge)["replayed"] == 0
        assert prometheus_value(bridge.url, "curvestream_parked_batches") == 0
    finally:
        bridge.stop()


def test_a_full_disk_under_duckdb_stops_the_acknowledgements_and_every_point_arrives_once_space_returns(
        mosquitto, bridge_factory, small_disk, spool_dir):
    bridge = bridge_factory(f"duckdb:///{small_disk.path / 'store.duckdb'}?checkpoint_mb=16", mosquitto.url,
                            parked_dir=str(small_disk.path / "parked"))
    streamer = Streamer(300_000, project="disk", run="full", mqtt_url=mosquitto.url, bridge_url="",
                        spool_dir=str(spool_dir))
    streamer.start()
    wait_until(lambda: streamer.logged >= 40_000, 120, "40,000 steps logged")
    # room for the WAL to reach DuckDB's 16 MB checkpoint threshold, not for the checkpoint:
    # the failure that makes DuckDB invalidate the database
    wal = small_disk.path / "store.duckdb.wal"
    small_disk.fill(leave_bytes=(17 << 20) - (wal.stat().st_size if wal.exists() else 0))
    wait_until(lambda: prometheus_value(bridge.url, "curvestream_store_errors_total") >= 5, 180,
               "store writes waiting on the full disk")
    ready = readyz(bridge)
    assert ready["store"] is False or ready["ingest_healthy"] is False, ready
    small_disk.free()
    streamer.done()
    assert_each_point_once_with_its_value(bridge.url, "disk", "full", 300_000)
    assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0
    assert prometheus_value(bridge.url, "curvestream_batches_parked_total") == 0
    assert "invalidated" in bridge.log_path.read_text(), "the disk filled during a checkpoint: DuckDB reopened"
