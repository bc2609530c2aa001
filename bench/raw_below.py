"""Where deep zooms should stop reading rollups: the DuckDB series query of one
run and of ten runs read together (bench/page_overlay_10x10m.py's runs), in
process, with the rollup rows in memory, at zoom depths around the bound
``RAW_BELOW`` (points per pixel column at or below which a range is answered
from its raw points), for several values of it.

    nice .venv/bin/python bench/raw_below.py [--runs 10] [--points 10M] [--width 1142] [--bounds 128,64,32] \
        [--repeat 7] [--data DIR]

Each row is a window about the series' middle, of ``points / depth`` points;
the bounds take turns twice (two figures each), so that a drift of the
machine's speed shows as a difference between the two. Prints medians;
never asserts them.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.duckdb import many as duck_many
from curvestream_bridge.store.duckdb import points as duck_points
from curvestream_bridge.store.duckdb.store import DuckDBStore
from page_overlay_10x10m import KEY, PROJECT, overlay_path, run_names, write_runs
from query_m4 import count, machine

DEPTHS = (60, 117, 170, 250, 500)


def timed(read, repeat: int) -> float:  # type: ignore[no-untyped-def]
    read()  # the first read of a window fills nothing the next one needs
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        read()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--points", default="10M", help="points per run")
    ap.add_argument("--width", type=int, default=1142, help="pixel columns (the page's, at 1280 px)")
    ap.add_argument("--bounds", default="128,64,32", help="values of RAW_BELOW to compare")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--data", default="", help="keep the DuckDB file here (reused when it holds the runs)")
    args = ap.parse_args()
    points = count(args.points)
    bounds = [int(b) for b in args.bounds.split(",")]
    print("command: nice .venv/bin/python bench/raw_below.py " + " ".join(sys.argv[1:]))
    path = overlay_path(args.data, "curvestream-raw-below-", args.runs, points)
    write_runs(path, args.runs, points)
    machine("before")
    store = DuckDBStore(str(path))
    try:
        runs = run_names(args.runs)
        whole = [store.series(SeriesQuery(PROJECT, r, KEY, width=args.width)) for r in runs]
        store.rollup_cache.settle()  # the rows in memory, as after each series' first read
        x0, x1 = float(whole[0].x[0]), float(whole[0].x[-1])
        print(f"\nmedian of {args.repeat} queries (ms) per RAW_BELOW value, twice each in turn; width {args.width}")
        for label, many in (("one series", False), (f"{args.runs} series, one read", True)):
            print(f"  {label}")
            for depth in DEPTHS:
                mid, half = (x0 + x1) / 2, (x1 - x0) / depth / 2
                qs = [SeriesQuery(PROJECT, r, KEY, start=mid - half, end=mid + half, width=args.width)
                      for r in (runs if many else runs[:1])]
                got: dict[int, list[float]] = {b: [] for b in bounds}
                read = (lambda qs=qs: store.series_many(qs)) if many else (lambda qs=qs: store.series(qs[0]))
                for _ in range(2):
                    for b in bounds:
                        duck_points.RAW_BELOW = duck_many.RAW_BELOW = b  # imported by name there
                        got[b].append(timed(read, args.repeat))
                cells = "  ".join(f"{b:>4}: {v[0]:6.1f} {v[1]:6.1f}" for b, v in got.items())
                print(f"    1/{depth:<4} ({points / depth / args.width:5.0f} per column)  {cells}", flush=True)
    finally:
        store.close()
    machine("after")


if __name__ == "__main__":
    main()
