"""An honest end of run: finish() gives up only when commits stop coming, and a
run whose tail is still in the trainer's spool is shown as finished with the
missing batches counted, until the rest arrives.

Lean stand-in for "1M steps × 3 keys into InfluxDB, then exit": a smaller run
into real InfluxDB, with the bridge stopped (SIGSTOP) while finish() waits, so
the store path is as stuck as a slow one and finish() gives up after its
1.5 s without progress; SIGCONT then lets the bridge store what the broker
holds and the final status, and `curvestream sync` sends the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import curvestream
from helpers import get_json, metric_counts
from servers import wait_until

STEPS = 20_000
KEYS = ("loss", "acc", "lr")


def _run_row(base: str, project: str, run: str) -> dict | None:
    return next((r for r in get_json(base, "/api/v1/runs", project=project)["runs"] if r["run"] == run), None)


def test_a_run_whose_tail_waits_in_the_spool_is_finished_but_pending_until_sync_delivers_it(
        influxd, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(influxd.store_url("tail"), mosquitto.url)
    run = curvestream.init(project="tail", id="r1", mqtt_url=mosquitto.url, bridge_url="", spool_dir=str(spool_dir),
                           finish_timeout_ms=1500, max_batch_points=600, max_inflight_batches=4)
    for step in range(STEPS):
        run.log({k: step * (i + 1) * 0.5 for i, k in enumerate(KEYS)}, step=step)
    wait_until(lambda: sum(metric_counts(bridge.url, "tail", "r1").values()) > 0, 60, "the first points stored")
    os.kill(bridge.pid, signal.SIGSTOP)
    try:
        report = run.finish()
    finally:
        os.kill(bridge.pid, signal.SIGCONT)
    assert report.batches_left_in_spool > 0 and not report.complete

    def pending() -> int | None:
        row = _run_row(bridge.url, "tail", "r1")
        return row["pending_batches"] if row is not None and row["state"] == "finished" else None

    wait_until(lambda: (pending() or 0) > 0, 60, "the run shown finished with batches pending")
    assert sum(metric_counts(bridge.url, "tail", "r1").values()) < STEPS * len(KEYS)

    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    env.update(CURVESTREAM_MQTT_URL=mosquitto.url, CURVESTREAM_BRIDGE_URL="")
    sync = subprocess.run([sys.executable, "-m", "curvestream.cli", "sync", str(spool_dir)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert sync.returncode == 0, sync.stderr
    wait_until(lambda: pending() == 0, 60, "the pending mark gone once the tail is stored")
    assert metric_counts(bridge.url, "tail", "r1") == dict.fromkeys(KEYS, STEPS)
