"""What the declared metrics cost the ingest writer: CPU µs per call of the
calls it makes per batch (a labelled counter, an unlabelled counter, a gauge)
and per round (the write time into a histogram), beside prometheus_client's
equivalent calls when it can be imported (it is not a dependency: put it on
``PYTHONPATH`` to compare, e.g. ``pip install --target /tmp/pc prometheus-client``).

    nice .venv/bin/python bench/metrics_cost.py [--calls 1000000]

CPU time of this process (``time.process_time``), best of 5; prints, never asserts.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Callable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from curvestream_bridge.metrics import (
    BATCHES_INGESTED,
    INGEST_LAG,
    POINTS_INGESTED,
    STORE_WRITE_SECONDS,
    Metrics,
)
from query_m4 import machine

BRIDGE_US_PER_POINT = 1.26  # the bridge's CPU s per 1M points end to end, DuckDB (bench/README.md, ingest_e2e.py)


def best_us(fn: Callable[[int], None], calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        fn(calls)
        best = min(best, time.process_time() - started)
    return best / calls * 1e6


def ours() -> dict[str, Callable[[int], None]]:
    m = Metrics()

    def labelled(n: int) -> None:
        for _ in range(n):
            m.inc(BATCHES_INGESTED, source="mqtt")

    def plain(n: int) -> None:
        for _ in range(n):
            m.inc(POINTS_INGESTED, 500)

    def gauge(n: int) -> None:
        for _ in range(n):
            m.set(INGEST_LAG, 0.25)

    def histogram(n: int) -> None:
        for _ in range(n):
            m.observe(STORE_WRITE_SECONDS, 0.004)

    return {"counter with a label": labelled, "counter": plain, "gauge set": gauge, "histogram observe": histogram}


def prometheus_client_calls() -> dict[str, Callable[[int], None]] | None:
    try:
        import prometheus_client as pc
    except ImportError:
        return None
    registry = pc.CollectorRegistry()
    batches = pc.Counter("batches_ingested", "h", ["source"], registry=registry)
    points = pc.Counter("points_ingested", "h", registry=registry)
    lag = pc.Gauge("ingest_lag_seconds", "h", registry=registry)
    seconds = pc.Histogram("store_write_seconds", "h", registry=registry, buckets=STORE_WRITE_SECONDS.buckets)

    def labelled(n: int) -> None:
        for _ in range(n):
            batches.labels(source="mqtt").inc()

    def plain(n: int) -> None:
        for _ in range(n):
            points.inc(500)

    def gauge(n: int) -> None:
        for _ in range(n):
            lag.set(0.25)

    def histogram(n: int) -> None:
        for _ in range(n):
            seconds.observe(0.004)

    return {"counter with a label": labelled, "counter": plain, "gauge set": gauge, "histogram observe": histogram}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/metrics_cost.py " + " ".join(sys.argv[1:]))
    machine("before")
    theirs = prometheus_client_calls()
    print(f"\nCPU µs per call, best of 5 × {args.calls:,} calls")
    print(f"{'call':<22}{'metrics.py':>12}{'prometheus_client':>20}")
    per_batch = {"metrics.py": 0.0, "prometheus_client": 0.0}
    for name, fn in ours().items():
        mine = best_us(fn, args.calls)
        other = best_us(theirs[name], args.calls) if theirs is not None else float("nan")
        print(f"{name:<22}{mine:>12.2f}{other:>20.2f}")
        if name != "histogram observe":
            per_batch["metrics.py"] += mine
            per_batch["prometheus_client"] += other
    share = per_batch["metrics.py"] / (BRIDGE_US_PER_POINT * 1000) * 100
    print(f"\nper batch stored (the three calls above the histogram): {per_batch['metrics.py']:.2f} µs "
          f"(prometheus_client {per_batch['prometheus_client']:.2f} µs): {share:.2f} % of what the bridge spends on "
          f"a 1,000-point batch ({BRIDGE_US_PER_POINT} CPU µs a point, bench/README.md, ingest_e2e.py)")
    machine("after")


if __name__ == "__main__":
    main()
