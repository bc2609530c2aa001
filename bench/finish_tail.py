"""A training script that logs faster than the store takes points, then exits:
is everything stored when it returns, and if not, does the bridge say so?

    nice .venv/bin/python bench/finish_tail.py [--steps 1000000] [--finish-timeout-ms 30000]

Mosquitto + bridge + InfluxDB 1.x on loopback. The trainer is its own process:
it logs ``--steps`` steps × 3 keys as fast as it can and exits without calling
finish() (the exit hook finishes the run). Printed: how long the script ran,
how many points were stored when it returned, the run's ``pending_batches``
then, and, when anything was left, how long ``curvestream sync`` took until
the mark went away.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import TypeVar

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _servers import BridgeProcess, Influxd, Mosquitto, wait_until
from helpers import get_json, metric_counts

T = TypeVar("T")

TRAINER = textwrap.dedent("""
    import sys
    import curvestream
    run = curvestream.init(project="tail", id="r1", mqtt_url=sys.argv[1], bridge_url="", spool_dir=sys.argv[2],
                           finish_timeout_ms=int(sys.argv[4]), spool_max_bytes=8 * 1024**3)
    for step in range(int(sys.argv[3])):
        run.log({"loss": 1.0 / (step + 1), "acc": step * 1e-6, "lr": 0.1}, step=step)
""")


def row(bridge: BridgeProcess) -> dict:
    return next((r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["run"] == "r1"), {})


def pending(bridge: BridgeProcess) -> object:
    return row(bridge).get("pending_batches")


def retried(fn: Callable[[], T], attempts: int = 10) -> T:
    for attempt in range(attempts):
        try:
            return fn()
        except OSError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--finish-timeout-ms", type=int, default=30_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cs-finish-tail-") as tmp:
        work = pathlib.Path(tmp)
        broker, influx = Mosquitto(work / "mosquitto"), Influxd(work / "influxd")
        broker.start()
        influx.start()
        bridge = BridgeProcess(work / "bridge", influx.store_url("tail"), broker.url)
        bridge.start()
        try:
            script = work / "train.py"
            script.write_text(TRAINER)
            env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(script), broker.url, str(work / "spool"), str(args.steps),
                            str(args.finish_timeout_ms)], env=env, check=True, stderr=subprocess.PIPE)
            ran = time.perf_counter() - t0
            print(f"script: {args.steps:,} steps x 3 keys, returned after {ran:.1f} s", flush=True)
            # the API's answers at the moment the script returned (queries into a busy InfluxDB may be slow)
            then = retried(lambda: row(bridge))
            stored = retried(lambda: sum(metric_counts(bridge.url, "tail", "r1").values()))
            print(f"then: state {then.get('state')}, pending_batches {then.get('pending_batches')}; "
                  f"stored {stored:,} of {3 * args.steps:,} points", flush=True)
            if stored < 3 * args.steps:
                # the final status reaches the bridge behind what the broker still holds for it
                wait_until(lambda: row(bridge).get("state") == "finished", 600, "the final status")
                print(f"once the bridge has the final status: pending_batches {pending(bridge)}", flush=True)
            if stored < 3 * args.steps:
                env.update(CURVESTREAM_MQTT_URL=broker.url, CURVESTREAM_BRIDGE_URL="")
                t1 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "curvestream.cli", "sync", str(work / "spool")], env=env,
                               check=True, stdout=subprocess.DEVNULL)
                wait_until(lambda: pending(bridge) == 0, 600, "the pending mark gone")
                print(f"sync: the rest stored and pending_batches 0 after {time.perf_counter() - t1:.1f} s")
        finally:
            bridge.stop()
            influx.stop()
            broker.stop()
    print(f"load average: {os.getloadavg()[0]:.1f}; command: nice .venv/bin/python bench/finish_tail.py "
          f"--steps {args.steps} --finish-timeout-ms {args.finish_timeout_ms}")


if __name__ == "__main__":
    main()
