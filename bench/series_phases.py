"""Where one DuckDB series query spends its time: the store's phases for one
series of bench/page_overlay_10x10m.py's runs, in process (no HTTP), with the
rollup rows in memory (the rollup cache loaded first), at the whole view and
zoomed in.

    nice .venv/bin/python bench/series_phases.py [--runs 10] [--points 10M] [--width 2000] [--repeat 9] [--data DIR]

Phases (time per query, the mean of the repeats; a phase may run within
another): ``frame`` (pixel columns and the buckets that cover them, of which
``column_intervals`` and ``plan_pieces``), ``straddler_ids`` (which chunks hold
the straddling buckets' points, from the rollup cache), ``straddler_chunks``
(those chunks, one DuckDB statement), ``assemble`` (rows and points folded per
column: ``fold_rows``, the rollup rows, and ``fold_points``, the straddlers'
points) and ``m4_result`` (the answer's points). The functions are wrapped by
name for the measurement; nothing else changes. Prints the total's median and
the phases' means; never asserts them.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.duckdb import points as duck_points
from curvestream_bridge.store.duckdb.store import DuckDBStore
from curvestream_bridge.store.m4 import query as m4_query
from curvestream_bridge.store.m4.fold import Folded
from page_overlay_10x10m import KEY, PROJECT, overlay_path, run_names, write_runs
from query_m4 import count, machine

PHASES = [  # (module, function, the name printed)
    (m4_query, "frame", "frame"), (m4_query, "column_intervals", "column_intervals"),
    (m4_query, "plan_pieces", "plan_pieces"), (duck_points, "cached_straddler_chunks", "straddler_ids"),
    (duck_points, "_chunks_by_id", "straddler_chunks"), (m4_query, "assemble", "assemble"),
    (Folded, "rows", "fold_rows"), (Folded, "points", "fold_points"), (m4_query, "m4_result", "m4_result"),
]


def wrap_phases(times: dict[str, list[float]], sizes: dict[str, list[int]]) -> None:
    """Replace each phase's function (or method), where it is looked up, by a timed one."""
    def timed(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            out = fn(*args, **kwargs)
            times.setdefault(name, []).append((time.perf_counter() - t) * 1e3)
            if name == "straddler_chunks":
                sizes.setdefault("chunks", []).append(len(args[2]))
                sizes.setdefault("points", []).append(len(out))
            return out
        return run

    for module, fn_name, name in PHASES:
        wrapped = timed(getattr(module, fn_name), name)
        setattr(module, fn_name, wrapped)
        if fn_name == "assemble":
            duck_points.assemble = wrapped  # imported by name there


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--points", default="10M", help="points per run")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--data", default="", help="keep the DuckDB file here (reused when it holds the runs)")
    args = ap.parse_args()
    points = count(args.points)
    print("command: nice .venv/bin/python bench/series_phases.py " + " ".join(sys.argv[1:]))
    path = overlay_path(args.data, "curvestream-series-phases-", args.runs, points)
    write_runs(path, args.runs, points)
    machine("before")
    store = DuckDBStore(str(path))
    try:
        run = run_names(args.runs)[0]
        whole = store.series(SeriesQuery(PROJECT, run, KEY, width=args.width))
        store.rollup_cache.settle()  # the series' rows in memory, as after its first read
        x0, x1 = float(whole.x[0]), float(whole.x[-1])
        times: dict[str, list[float]] = {}
        sizes: dict[str, list[int]] = {}
        wrap_phases(times, sizes)
        print(
            f"\none series of {points:,} points, width {args.width}; total: median of {args.repeat} queries, "
            "phases: mean per query (ms)"
        )
        for share in (1, 10, 100, 1000):
            q = SeriesQuery(PROJECT, run, KEY, start=x0, end=x0 + (x1 - x0) / share, width=args.width)
            times.clear()
            sizes.clear()
            totals = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                store.series(q)
                totals.append((time.perf_counter() - t) * 1e3)
            per_query = {name: sum(v) / args.repeat for name, v in times.items()}
            phases = "  ".join(f"{name} {per_query[name]:.1f}" for _, _, name in PHASES if name in per_query)
            read = (f"  ({statistics.median(sizes['chunks']):,.0f} chunks, {statistics.median(sizes['points']):,.0f}"
                    " points)" if sizes else "")
            print(f"  1/{share:<5} total {statistics.median(totals):6.1f}  {phases}{read}")
    finally:
        store.close()
    machine("after")


if __name__ == "__main__":
    main()
