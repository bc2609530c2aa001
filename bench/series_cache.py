"""DuckDB series reads with and without the in-memory rollup rows
(``?rollup_cache_mb=``), in process: one series and ``series_many`` of all runs,
the whole view and zooms of 1/10, 1/100 and 1/1000, the first read (from the
tables) and how long the loader thread then takes to load every series' rows.

    nice .venv/bin/python bench/series_cache.py --runs 10 --points 10M --data /tmp/ovl

The file is the one ``page_overlay_10x10m.py`` writes (written here when
``--data`` does not hold it yet). Both stores are opened in turn on the same
file, rounds alternating, so that a change of load on the machine touches both.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery
from page_overlay_10x10m import KEY, PROJECT, overlay_path, run_names, write_runs
from query_m4 import count

ZOOMS = (1.0, 0.1, 0.01, 0.001)


def views(names: list[str], points: int, width: int) -> list[tuple[float, list[SeriesQuery]]]:
    out = []
    for z in ZOOMS:
        start, end = (None, None) if z == 1 else (points * 0.3, points * 0.3 + points * z)
        out.append((z, [SeriesQuery(PROJECT, n, KEY, "step", start, end, width) for n in names]))
    return out


def measure(path: pathlib.Path, cache_mb: int, names: list[str], points: int, width: int,
            repeat: int) -> dict[str, float]:
    store = open_store(f"duckdb:///{path}?rollup_cache_mb={cache_mb}")
    try:
        out = {}
        whole = views(names, points, width)[0][1]
        t = time.perf_counter()
        store.series_many(whole)  # cold: from the tables, queueing the loads of every series' rows
        out["first series_many"] = (time.perf_counter() - t) * 1e3
        store.rollup_cache.settle()  # type: ignore[attr-defined]
        out["… until every series' rows are loaded"] = (time.perf_counter() - t) * 1e3
        for z, qs in views(names, points, width):
            one = []
            for _ in range(repeat):
                t = time.perf_counter()
                store.series(qs[0])
                one.append((time.perf_counter() - t) * 1e3)
            many = []
            for _ in range(max(repeat // 2, 1)):
                t = time.perf_counter()
                store.series_many(qs)
                many.append((time.perf_counter() - t) * 1e3)
            out[f"one {z:g}"] = statistics.median(one)
            out[f"many {z:g}"] = statistics.median(many)
        return out
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--points", default="10M", help="points per run")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of (no cache, cache), alternating")
    ap.add_argument("--cache-mb", type=int, default=512)
    ap.add_argument("--data", required=True, help="the DuckDB file's folder (kept, reused)")
    args = ap.parse_args()
    points = count(args.points)
    path = overlay_path(args.data, "", args.runs, points)  # --data is required: never a temporary folder
    write_runs(path, args.runs, points)
    names = run_names(args.runs)
    results: dict[int, list[dict[str, float]]] = {0: [], args.cache_mb: []}
    for _ in range(args.rounds):
        for mb in results:
            results[mb].append(measure(path, mb, names, points, args.width, args.repeat))
    print(f"{args.runs} runs × {points:,} points, width {args.width}, x = step, load average "
          f"{os.getloadavg()[0]:.1f}; ms, medians of {args.repeat} (series_many: of {max(args.repeat // 2, 1)}), "
          f"per round")
    print(f"| what | rollup_cache_mb=0 | rollup_cache_mb={args.cache_mb} |")
    print("| --- | --- | --- |")
    for what in results[0][0]:
        cells = [" / ".join(f"{r[what]:.1f}" for r in results[mb]) for mb in results]
        print(f"| {what} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
