"""Fifty runs in one trainer process share one MQTT connection and a few
threads, and each stays exact through a broker restart and a ``kill -9``:
the connection's Last Will (its session's) marks every run lost, and
``curvestream sync`` delivers what the spool still held. Real Mosquitto, a
real bridge process on DuckDB."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import metric_counts, run_state, stored_steps
from servers import Mosquitto, wait_until

pytestmark = pytest.mark.slow

RUNS = 50
MAX_THREADS = 6  # the main thread, the recorder, the uploader, paho's network thread; a little room

TRAINER = textwrap.dedent("""
    import sys, time
    import curvestream
    runs = [curvestream.init(project="fleet", id=f"r{j}", mqtt_url=sys.argv[1], bridge_url="", spool_dir=sys.argv[2],
                             flush_interval_ms=100, ack_timeout_ms=3000)
            for j in range(int(sys.argv[3]))]
    step, started = 0, time.monotonic()
    while True:
        for run in runs:
            run.log({"x": step * 0.5}, step=step)
        step += 1
        if step % 20 == 0:
            print(step, flush=True)  # every run has logged steps 0 .. step-1
        time.sleep(max(0.0, started + step / 100 - time.monotonic()))  # 100 steps/s per run
""")


def _connections_to(pid: int, port: int) -> int:
    """Established TCP connections of process ``pid`` to ``port`` on loopback."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    with open(f"/proc/{pid}/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].split(":")[1], 16)
            if remote_port == port and fields[3] == "01" and fields[9] in inodes:  # 01: ESTABLISHED
                count += 1
    return count


def test_fifty_runs_of_one_process_share_one_connection_and_stay_exact_through_a_broker_restart_and_kill_9(
        tmp_path, bridge_factory, spool_dir):
    broker = Mosquitto(tmp_path / "mosquitto")
    broker.start()
    proc = None
    try:
        bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", broker.url)
        script = tmp_path / "trainer.py"
        script.write_text(TRAINER)
        proc = subprocess.Popen([sys.executable, str(script), broker.url, str(spool_dir), str(RUNS)],
                                stdout=subprocess.PIPE, text=True)
        logged = 0

        def logged_at_least(n: int) -> None:
            nonlocal logged
            while logged < n:
                line = proc.stdout.readline()
                assert line, "the trainer died"
                logged = int(line)

        logged_at_least(100)
        wait_until(lambda: all(run_state(bridge.url, "fleet", f"r{j}") == "running" for j in range(RUNS)), 60,
                   "every run listed as running")
        assert _connections_to(proc.pid, broker.port) == 1, "one MQTT connection for all the runs"
        threads = len(os.listdir(f"/proc/{proc.pid}/task"))
        assert threads <= MAX_THREADS, f"{threads} threads for {RUNS} runs"

        broker.kill()
        logged_at_least(logged + 100)  # logging goes on while the broker is away
        broker.start()
        wait_until(lambda: _connections_to(proc.pid, broker.port) == 1, 60, "the connection back")
        first = metric_counts(bridge.url, "fleet", "r0").get("x", 0)
        wait_until(lambda: metric_counts(bridge.url, "fleet", "r0").get("x", 0) > first + 50, 60,
                   "points stored again after the restart")
        spooled = logged  # logged a second (ten flush intervals) before the kill: in the spool by then
        logged_at_least(logged + 100)
        proc.kill()  # what was logged in the last flush interval is only in memory: a kill -9 may take it
        proc.wait(10)
        wait_until(lambda: all(run_state(bridge.url, "fleet", f"r{j}") == "lost" for j in range(RUNS)), 60,
                   "every run of the killed process lost (the Last Will of its session)")

        env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
        env.update(CURVESTREAM_MQTT_URL=broker.url, CURVESTREAM_BRIDGE_URL="")
        sync = subprocess.run([sys.executable, "-m", "curvestream.cli", "sync", str(spool_dir), "--timeout", "120"],
                              env=env, capture_output=True, text=True, timeout=300)
        assert sync.returncode == 0, sync.stdout + sync.stderr
        assert '"left_batches": 0' in sync.stdout
        for j in range(RUNS):
            count = metric_counts(bridge.url, "fleet", f"r{j}").get("x", 0)
            assert count >= spooled, f"r{j}: {count} points stored of at least {spooled} spooled"
            assert stored_steps(bridge.url, "fleet", f"r{j}", "x", count - 1) == list(range(count)), \
                f"r{j}: each step exactly once"
        assert not list(spool_dir.rglob("*.seg")), "sync emptied the spool"
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc is not None:
            proc.stdout.close()
        broker.stop()
