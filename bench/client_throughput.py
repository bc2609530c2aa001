"""Sustained throughput of one trainer process into spool + broker, the memory it
adds, and its memory through a broker outage.

    .venv/bin/python bench/client_throughput.py [--points 20000000] [--outage-s 60]

Starts a real Mosquitto and a real bridge (DuckDB) on loopback. Prints:
- log + spool rate: points/s from the first log() until the recorder has spooled all;
- delivered rate: until the bridge has committed all (the client deletes its spool);
- RSS added by the run at its peak;
- RSS sampled every second while logging at a steady rate with the broker down.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import curvestream
from _servers import BridgeProcess, Mosquitto


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=20_000_000)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--outage-s", type=float, default=60.0)
    parser.add_argument("--outage-rate", type=int, default=200_000, help="points/s logged during the outage")
    args = parser.parse_args()
    print(f"# reproduce: {sys.executable} bench/client_throughput.py --points {args.points} "
          f"--keys {args.keys} --outage-s {args.outage_s:g}")
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        broker = Mosquitto(tmpdir / "mosquitto")
        broker.start()
        bridge = BridgeProcess(tmpdir / "bridge", f"duckdb:///{tmpdir / 'store.duckdb'}", broker.url)
        bridge.start()
        try:
            base = rss_mb()
            run = curvestream.init(project="bench", id="throughput", mqtt_url=broker.url, bridge_url="",
                                   spool_dir=str(tmpdir / "spool"), spool_max_bytes=16 * 1024**3,
                                   finish_timeout_ms=600_000)
            values = {f"metric/{k}": 0.5 for k in range(args.keys)}
            calls = args.points // args.keys
            peak = base
            t0 = time.perf_counter()
            for i in range(calls):
                run.log(values, step=i)
                if i % 100_000 == 0:
                    peak = max(peak, rss_mb())
            t_logged = time.perf_counter()
            while run._queue:
                time.sleep(0.001)
                peak = max(peak, rss_mb())
            t_spooled = time.perf_counter()
            run.uploader.wait_committed([run.producer_id], time.monotonic() + 600)
            t_committed = time.perf_counter()
            points = calls * args.keys
            print(f"log() loop:        {points / (t_logged - t0):>12,.0f} points/s  ({points:,} points, "
                  f"dicts of {args.keys})")
            print(f"log + spool:       {points / (t_spooled - t0):>12,.0f} points/s")
            print(f"delivered:         {points / (t_committed - t0):>12,.0f} points/s  (committed by the bridge)")
            print(f"RSS added at peak: {peak - base:>12.1f} MB")

            # a broker outage while logging at a steady rate: memory must stay flat (the spool takes it)
            broker.kill()
            step = calls
            per_tick = args.outage_rate // args.keys // 10
            samples = []
            end = time.monotonic() + args.outage_s
            next_sample = time.monotonic()
            while time.monotonic() < end:
                tick = time.monotonic()
                for _ in range(per_tick):
                    run.log(values, step=step)
                    step += 1
                if tick >= next_sample:
                    samples.append(rss_mb())
                    next_sample += 1.0
                time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            spooled_mb = run.spool.bytes_on_disk / 1e6
            print(f"outage {args.outage_s:g}s at {args.outage_rate:,} points/s: RSS min {min(samples):.1f} MB, "
                  f"max {max(samples):.1f} MB, first {samples[0]:.1f}, last {samples[-1]:.1f}; "
                  f"spool grew to {spooled_mb:.0f} MB")
            broker.start()
            t_back = time.perf_counter()
            report = run.finish()
            print(f"after the outage: all committed in {time.perf_counter() - t_back:.1f}s, "
                  f"complete={report.complete}")
        finally:
            bridge.stop()
            broker.stop()


if __name__ == "__main__":
    main()
