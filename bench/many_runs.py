"""A hundred runs at once into one bridge: nothing lost, live latency, bridge memory.

    nice .venv/bin/python bench/many_runs.py [--processes 4] [--runs-each 25] [--rate 1000] [--seconds 60]
        [--store duckdb|influxdb]

``--processes`` trainer processes (tests/paced_trainer.py) drive ``--runs-each``
runs each, every run its own producer and spool, the runs of a process one
MQTT connection, each logging ``--rate`` points/s (2 keys) for ``--seconds``
through a real Mosquitto into one bridge process. Meanwhile a WebSocket client
has ``/api/v1/live`` open, subscribed to every run, and the bridge's RSS is
sampled every second.

Printed: points logged and stored per series (any difference is a loss);
live latency p50 / p99 / max over every pushed point (its arrival at the
WebSocket minus its ``log()`` wall time, same machine and clock; goal p99 ≤ 1 s)
and ``gap`` messages (points the bridge did not push); the bridge's RSS at
start, peak and end; the trainer processes' CPU (user + system, until their
runs had finished) per million points, their threads and MQTT connections at
most; the load average beside them. Never asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _live import LiveListener, rss_mb
from _page import pct
from _servers import BridgeProcess, Influxd, Mosquitto
from query_m4 import machine

TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))
from helpers import metric_counts  # noqa: E402
from paced_trainer import KEYS  # noqa: E402

PROJECT = "many"


def threads_and_sockets(pid: int) -> tuple[int, int]:
    try:
        threads = len(os.listdir(f"/proc/{pid}/task"))
        sockets = sum(1 for fd in os.listdir(f"/proc/{pid}/fd")
                      if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"))
    except OSError:
        return 0, 0
    return threads, sockets


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--runs-each", type=int, default=25)
    parser.add_argument("--rate", type=int, default=1000, help="points/s of each run")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--store", choices=("duckdb", "influxdb"), default="duckdb")
    args = parser.parse_args()
    print(f"# reproduce: nice {sys.executable} bench/many_runs.py --processes {args.processes} "
          f"--runs-each {args.runs_each} --rate {args.rate} --seconds {args.seconds:g} --store {args.store}")
    runs = [f"p{p}-{j}" for p in range(args.processes) for j in range(args.runs_each)]
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        broker = Mosquitto(tmpdir / "mosquitto")
        broker.start()
        influx = None
        if args.store == "influxdb":
            influx = Influxd(tmpdir / "influxd")
            influx.start(timeout=60)
            store = influx.store_url("many")
        else:
            store = f"duckdb:///{tmpdir / 'store.duckdb'}"
        bridge = BridgeProcess(tmpdir / "bridge", store, broker.url, log_level="WARNING")
        bridge.start()
        procs: list[subprocess.Popen] = []
        try:
            listener = LiveListener(bridge.url.replace("http://", "ws://") + "/api/v1/live", PROJECT, runs)
            listener.start()
            rss = [rss_mb(bridge.pid)]
            t0 = time.monotonic()
            for p in range(args.processes):
                settings = {"mqtt_url": broker.url, "bridge_url": bridge.url, "spool_dir": str(tmpdir / f"spool-{p}"),
                            "finish_timeout_ms": 900_000}
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            str(TESTS / "paced_trainer.py"),
                            PROJECT,
                            f"p{p}",
                            "--runs",
                            str(args.runs_each),
                            "--rate",
                            str(args.rate),
                            "--seconds",
                            str(args.seconds),
                            "--out",
                            str(tmpdir / f"logged-{p}.json"),
                            "--settings",
                            json.dumps(settings),
                        ],
                        stdout=subprocess.DEVNULL,
                    )
                )
            cpu_s: dict[int, float] = {}
            most_threads = most_sockets = 0
            while len(cpu_s) < len(procs):
                rss.append(rss_mb(bridge.pid))
                for proc in procs:
                    if proc.pid in cpu_s:
                        continue
                    threads, sockets = threads_and_sockets(proc.pid)
                    most_threads, most_sockets = max(most_threads, threads), max(most_sockets, sockets)
                    done, _, usage = os.wait4(proc.pid, os.WNOHANG)
                    if done:
                        cpu_s[proc.pid] = usage.ru_utime + usage.ru_stime
                        proc.returncode = 0
                time.sleep(1)
            elapsed = time.monotonic() - t0
            machine("while the trainers finished")
            time.sleep(1)
            listener.stop.set()
            listener.join(5)
            logged = {}
            for p in range(args.processes):
                logged.update(json.loads((tmpdir / f"logged-{p}.json").read_text()))
            lost = 0
            for run in runs:
                counts = metric_counts(bridge.url, PROJECT, run)
                lost += sum(logged[run]["keys"][k]["count"] - counts.get(k, 0) for k in KEYS)
            total = sum(logged[r]["keys"][k]["count"] for r in runs for k in KEYS)
            incomplete = [r for r in runs if not logged[r]["complete"]]
            lat = listener.latencies_ms
            print(f"\n{len(runs)} runs ({args.processes} processes × {args.runs_each}) × {args.rate} points/s × "
                  f"{args.seconds:g} s into one bridge ({args.store}); {elapsed:.0f} s until every run had finished")
            print(f"  logged {total:,} points; stored {total - lost:,}; lost {lost:,}; runs not complete at finish(): "
                  f"{len(incomplete)}")
            if lat:
                print(f"  live push to an open WebSocket (all runs subscribed): {len(lat):,} points, latency "
                      f"p50 {pct(lat, 0.5):.0f} ms, p99 {pct(lat, 0.99):.0f} ms, max {max(lat):.0f} ms "
                      f"(goal p99 <= 1000 ms); gap messages: {listener.gaps}")
            print(f"  bridge RSS: start {rss[0]:.0f} MB, peak {max(rss):.0f} MB, end {rss[-1]:.0f} MB "
                  f"(sampled every second)")
            trainer_cpu = sum(cpu_s.values())
            print(f"  trainer processes: {trainer_cpu:.1f} CPU s in all ({trainer_cpu / total * 1e6:.2f} s per M "
                  f"points, {trainer_cpu / len(procs):.1f} s per process); at most {most_threads} threads "
                  f"and {most_sockets} sockets in a process (paho's client holds 3: the connection and a wake-up pair)")
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
            bridge.stop()
            broker.stop()
            if influx is not None:
                influx.stop()


if __name__ == "__main__":
    main()
