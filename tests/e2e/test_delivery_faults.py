"""Nothing logged is lost or stored twice when the broker, the bridge or the
trainer itself dies: real Mosquitto, real bridge processes, kill -9."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import metric_counts, run_state, stored_steps
from servers import Mosquitto, wait_until
from trainers import TrainerThread

pytestmark = pytest.mark.slow


def Trainer(n: int, chunk: int, pause_s: float, **init: object) -> TrainerThread:
    return TrainerThread(n, lambda i: {"x": float(i) * 0.5}, chunk, pause_s, **init)


def assert_exactly_once(bridge_url: str, project: str, run: str, n: int) -> None:
    wait_until(lambda: metric_counts(bridge_url, project, run).get("x") == n, 120, f"{n} points of {run}")
    assert stored_steps(bridge_url, project, run, "x", n - 1) == list(range(n))


def test_a_broker_killed_twice_mid_run_loses_and_duplicates_nothing(tmp_path, bridge_factory, spool_dir):
    broker = Mosquitto(tmp_path / "mosquitto")
    broker.start()
    try:
        bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", broker.url)
        trainer = Trainer(200_000, 2000, 0.02, project="faults", run="broker killed twice", mqtt_url=broker.url,
                          bridge_url="", spool_dir=str(spool_dir), ack_timeout_ms=3000, finish_timeout_ms=120_000)
        trainer.start()
        for threshold in (50_000, 120_000):
            wait_until(lambda threshold=threshold: trainer.logged >= threshold, 60, f"{threshold} points logged")
            broker.kill()
            time.sleep(0.5)
            broker.start()
        trainer.done(180)
        assert_exactly_once(bridge.url, "faults", "broker killed twice", 200_000)
    finally:
        broker.stop()


def test_a_bridge_down_for_thirty_seconds_loses_and_duplicates_nothing(tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    trainer = Trainer(100_000, 500, 0.02, project="faults", run="bridge down", mqtt_url=mosquitto.url,
                      bridge_url="", spool_dir=str(spool_dir), ack_timeout_ms=5000, finish_timeout_ms=120_000)
    trainer.start()
    wait_until(lambda: trainer.logged >= 10_000, 60, "10,000 points logged")
    bridge.kill()
    back_at = time.monotonic() + 30
    logged_at_kill = trainer.logged
    # the outage falls in the middle of the run: points are logged while no bridge can store them
    wait_until(lambda: trainer.logged > logged_at_kill, 30, "points logged while the bridge is down")
    time.sleep(max(0.0, back_at - time.monotonic()))  # the outage lasts thirty seconds
    bridge.start()
    trainer.done(180)
    assert_exactly_once(bridge.url, "faults", "bridge down", 100_000)


def test_with_the_broker_down_points_arrive_over_http_then_over_mqtt_again(tmp_path, bridge_factory, spool_dir):
    broker = Mosquitto(tmp_path / "mosquitto")
    broker.start()
    try:
        bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", broker.url)
        trainer = Trainer(120_000, 500, 0.05, project="faults", run="fallback", mqtt_url=broker.url,
                          bridge_url=bridge.url, spool_dir=str(spool_dir), fallback_after_ms=1000,
                          ack_timeout_ms=3000, finish_timeout_ms=120_000)
        trainer.start()
        wait_until(lambda: trainer.logged >= 10_000, 60, "10,000 points logged")
        broker.stop()
        wait_until(lambda: trainer.run_obj.uploader.stats.batches_sent_http > 0, 60, "batches over HTTP")
        mqtt_before = trainer.run_obj.uploader.stats.batches_sent_mqtt
        broker.start()
        assert trainer.is_alive(), "the broker should come back in the middle of the run"
        wait_until(lambda: trainer.run_obj.uploader.stats.batches_sent_mqtt > mqtt_before, 60,
                   "batches over MQTT again")
        trainer.done(180)
        assert_exactly_once(bridge.url, "faults", "fallback", 120_000)
    finally:
        broker.stop()


def test_a_broker_that_refuses_the_connection_sends_the_points_over_http_without_waiting(tmp_path, bridge_factory,
                                                                                          spool_dir):
    with socket.socket() as s:  # nothing listens here: every connection is refused (ECONNREFUSED)
        s.bind(("127.0.0.1", 0))
        broker_url = f"mqtt://127.0.0.1:{s.getsockname()[1]}"
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", "")
    trainer = Trainer(5_000, 500, 0.01, project="faults", run="refused", mqtt_url=broker_url, bridge_url=bridge.url,
                      spool_dir=str(spool_dir), fallback_after_ms=3_600_000, finish_timeout_ms=60_000)
    trainer.start()
    trainer.done(120)  # the fallback time is an hour: only the refusal can have sent the batches over HTTP
    stats = trainer.run_obj.uploader.stats
    assert trainer.report.batches_left_in_spool == 0 and stats.batches_sent_http > 0 and stats.batches_sent_mqtt == 0
    assert_exactly_once(bridge.url, "faults", "refused", 5_000)


TRAINER_SCRIPT = textwrap.dedent("""
    import sys, time
    import curvestream
    run = curvestream.init(project="faults", id=sys.argv[1], mqtt_url=sys.argv[2], bridge_url="",
                           spool_dir=sys.argv[3], flush_interval_ms=100)
    step = 0
    while True:
        for _ in range(500):
            run.log({"x": step * 0.5}, step=step)
            step += 1
        print(step, run.recorder.stats.points_spooled, flush=True)
        time.sleep(0.01)
""")


def test_a_trainer_killed_mid_run_is_completed_by_sync_and_shows_as_lost(tmp_path, mosquitto, bridge_factory,
                                                                       spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER_SCRIPT)
    run_name = "killed trainer"
    proc = subprocess.Popen([sys.executable, str(script), run_name, mosquitto.url, str(spool_dir)],
                            stdout=subprocess.PIPE, text=True)
    logged = 0
    while logged < 30_000:
        line = proc.stdout.readline()
        assert line, "the trainer died early"
        logged = int(line.split()[0])
    wait_until(lambda: run_state(bridge.url, "faults", run_name) == "running", 30, "the run to show as running")
    os.kill(bridge.pid, signal.SIGSTOP)  # freeze the bridge so the last batches stay uncommitted
    try:
        for _ in range(20):
            logged = int(proc.stdout.readline().split()[0])
        spooled = 0
        while spooled < logged:  # until every point logged until then is in the spool, as a later line says
            spooled = int(proc.stdout.readline().split()[1])
        proc.kill()
        proc.wait(10)
    finally:
        proc.stdout.close()
        os.kill(bridge.pid, signal.SIGCONT)
    assert list(spool_dir.iterdir()), "the killed trainer left its spool"

    env = {**os.environ, "CURVESTREAM_MQTT_URL": mosquitto.url, "CURVESTREAM_BRIDGE_URL": bridge.url}
    sync = subprocess.run([sys.executable, "-m", "curvestream.cli", "sync", str(spool_dir), "--timeout", "120"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert '"left_batches": 0' in sync.stdout

    wait_until(lambda: metric_counts(bridge.url, "faults", run_name).get("x", 0) >= logged, 60,
               "every point logged before the kill")
    count = metric_counts(bridge.url, "faults", run_name)["x"]
    steps = stored_steps(bridge.url, "faults", run_name, "x", count - 1)
    assert steps == list(range(count)), "each point exactly once, none missing below the last"
    assert count >= logged
    wait_until(lambda: run_state(bridge.url, "faults", run_name) == "lost", 30, "the run to show as lost")
    assert not list(spool_dir.rglob("*.seg")), "sync emptied the spool"
