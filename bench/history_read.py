"""Reading a whole run back: ``curvestream.Api(...).run(...).history()`` of a
10M-point series, and its Parquet export, from a bridge on DuckDB.

    nice .venv/bin/python bench/history_read.py [--points 10000000] [--repeat 5] [--data DIR]

The series is written straight through the store API as bench/page_overlay_10x10m.py
writes its runs (one run here; ``--data DIR`` keeps and reuses the file); a
bridge (its own process, MQTT off) serves it. Each repetition reads every
point over HTTP from the export endpoint (binary frames, read while the
bridge reads its store), in this process:

- ``points()``: numpy arrays only (step, time_ns, value);
- ``history()`` as a pandas DataFrame, and as a polars one;
- ``export()``: the Parquet file written by the bridge (DuckDB) and sent.

Printed per read: the median wall time and points/s (goal for ``history()``:
>= 5M points/s), and the CPU seconds per million points of this process and
of the bridge's (from /proc), which hold under load where wall time does not.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import curvestream
from _servers import BridgeProcess
from ingest_e2e import cpu_seconds
from page_overlay_10x10m import PROJECT, overlay_path, run_names, write_runs
from query_m4 import machine


def measure(label: str, read: Callable[[], Any], points: int, bridge_pid: int, repeat: int) -> None:
    walls, mine, theirs = [], [], []
    for _ in range(repeat):
        c0, b0, t0 = time.process_time(), cpu_seconds(bridge_pid), time.perf_counter()
        read()
        walls.append(time.perf_counter() - t0)
        mine.append(time.process_time() - c0)
        theirs.append(cpu_seconds(bridge_pid) - b0)
    wall = statistics.median(walls)
    m = points / 1e6
    print(f"  {label:<28} {wall:7.2f} s  {points / wall / 1e6:6.2f} M points/s   CPU s per M points: "
          f"reader {statistics.median(mine) / m:.3f}, bridge {statistics.median(theirs) / m:.3f}   "
          f"(best {min(walls):.2f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", default="", help="keep the DuckDB file here (reused when it holds the run)")
    args = parser.parse_args()
    points = args.points
    print(f"# reproduce: {sys.executable} bench/history_read.py --points {points} --repeat {args.repeat}")
    path = overlay_path(args.data, "curvestream-history-", 1, points)
    write_runs(path, 1, points)
    machine("before")
    with tempfile.TemporaryDirectory() as tmp:
        bridge = BridgeProcess(pathlib.Path(tmp) / "bridge", f"duckdb:///{path}", "")  # MQTT off: nothing streams
        bridge.start(timeout=120)
        try:
            run = curvestream.Api(bridge.url).run(PROJECT, run_names(1)[0])
            assert len(run.points()["loss"][0]) == points  # also the bridge's first read of the file
            print(f"\n{points:,} points of one series, median of {args.repeat}:")
            measure("points() (numpy)", lambda: run.points(), points, bridge.pid, args.repeat)
            measure("history() pandas", lambda: run.history(library="pandas"), points, bridge.pid, args.repeat)
            measure("history() polars", lambda: run.history(library="polars"), points, bridge.pid, args.repeat)
            target = pathlib.Path(tmp) / "run.parquet"
            measure("export() Parquet", lambda: run.export(target), points, bridge.pid, args.repeat)
            print(f"  (Parquet file: {target.stat().st_size / 1e6:.0f} MB)")
        finally:
            bridge.stop()
    machine("after")


if __name__ == "__main__":
    main()
