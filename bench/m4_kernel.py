"""The M4 kernel over raw points (``store/m4/kernel.py``: what answers a range
from its raw points — a series with ``?rollups=off`` or still under 64 points,
InfluxDB ranges read raw): time per call at several sizes, for a noisy curve
with NaN and ±Inf sprinkled in.

    nice .venv/bin/python bench/m4_kernel.py [--points 85k,1M,10M] [--width 2000] [--repeat 7]

Prints medians; never asserts them. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import numpy as np

from curvestream_bridge.store.m4.kernel import m4_indices
from query_m4 import count, machine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", default="85k,1M,10M")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/m4_kernel.py " + " ".join(sys.argv[1:]))
    machine("before")
    rng = np.random.default_rng(0)
    print(f"\nM4 of n raw points at width {args.width}; medians of {args.repeat} (ms)")
    for n in (count(p) for p in args.points.split(",")):
        x = np.arange(n, dtype=np.float64)
        y = np.exp(-x / max(n, 1)) + rng.normal(0, 0.1, n)
        y[rng.integers(0, n, max(n // 10_000, 1))] = rng.choice([np.nan, np.inf, -np.inf])
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            picked = m4_indices(x, y, 0.0, float(n - 1), args.width)
            times.append((time.perf_counter() - t) * 1e3)
        print(f"  {n:>12,} points: {statistics.median(times):9.2f} ms  ({len(picked):,} points kept)")
    machine("after")


if __name__ == "__main__":
    main()
