"""What keeping the runs table fresh costs the bridge with 10,000 runs: a read of
every run against a read of the runs that changed.

    nice .venv/bin/python bench/runs_table_refresh.py [--runs 10000] [--keys 10] [--repeat 20]

The store is DuckDB, its rows written straight into its tables
(``tests/browser/fleet_store.py``: 10,000 runs with metadata, config, tags,
group, host, a status) plus ``--keys`` scalar series per run with point counts.
The runs table (``runs_table.RunsTable`` over ``store.runs``) then answers the
page's default query (``-started``, the first 100 rows) after:

- **every run read** (what any change cost before: a new run, a status, an
  edit, and every 5 s while runs grow);
- **one run changed** (a status): that run read alone, its row replaced;
- **100 runs grew** (points stored): those read alone, as the refresh every
  5 s does in the background.

Printed: CPU ms of this process (``time.process_time``: DuckDB's threads
included) and wall ms per refresh plus the query after it, median of
``--repeat``; the load average and the speed probe. Prints figures, never
asserts them.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import duckdb

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "browser"))  # fleet_store

from curvestream_bridge.runs_table import RunsFilter, RunsTable
from curvestream_bridge.store import open_store
from fleet_store import add_runs, fleet_run_name
from query_m4 import machine

PROJECT = "table"


def _add_series(path: pathlib.Path, n: int, keys: int) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute("""INSERT INTO series (sid, project, run, key, kind, count)
                       SELECT row_number() OVER (), $p, printf('run-%05d', i), printf('key%d', k), 'scalar', 1000 + i
                       FROM range($n) r(i), range($keys) s(k)""", {"p": PROJECT, "n": n, "keys": keys})
    finally:
        con.close()


def _measure(table: RunsTable, change: Callable[[int], None], repeat: int) -> tuple[float, float]:
    cpu, wall = [], []
    for i in range(repeat):
        change(i)
        c, w = time.process_time(), time.perf_counter()
        table.snapshot().matching(RunsFilter(), {}, "-started")[:100]
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "store.duckdb"
        add_runs(path, PROJECT, args.runs)
        _add_series(path, args.runs, args.keys)
        store = open_store(f"duckdb:///{path}")
        try:
            table = RunsTable(store.runs, max_age_s=1e9, full_every_s=1e9)  # refreshes driven by the bench
            table.snapshot()
            machine(f"{args.runs:,} runs × {args.keys} series, DuckDB")
            refs = [(PROJECT, fleet_run_name(i)) for i in range(args.runs)]
            cases = {
                "every run read": lambda i: table.invalidate(),
                "one run changed": lambda i: table.changed({refs[(i * 7919) % len(refs)]}),
                "100 runs grew": lambda i: table.changed(set(refs[i * 100 % len(refs):][:100])),
            }
            print(f"{'refresh, then the default query':<34} {'CPU ms':>8} {'wall ms':>8}")
            for name, change in cases.items():
                cpu, wall = _measure(table, change, args.repeat)
                print(f"{name:<34} {cpu:8.1f} {wall:8.1f}")
            c = time.process_time()
            for _ in range(args.repeat):
                table.snapshot().matching(RunsFilter(), {}, "-started")[:100]
            print(f"{'nothing changed (the query alone)':<34} {(time.process_time() - c) * 1000 / args.repeat:8.1f}")
        finally:
            store.close()


if __name__ == "__main__":
    main()
