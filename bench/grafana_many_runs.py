"""The dashboards' curves query (InfluxQL) for many runs in one panel, on InfluxDB 1.x.

    nice .venv/bin/python bench/grafana_many_runs.py [--runs 100] [--points 1M] [--width 1200] [--repeat 5] [--data DIR]

``--runs`` runs of ``--points`` points each (bench/query_m4.py's curve: a point every ms with
jitter, a spike and a dip, a seed per run), all in one group, written through the bridge's
InfluxStore into a real ``influxd`` (points moved to TSM files before any read). Only the
rollup rows are written, the same rows the bridge writes, not the raw points (``cs_scalar``):
the curves query reads ``cs_rollup_time`` alone, and writing 100M raw points would take this
machine hours. ``--data DIR`` keeps the server's data and reuses it.

Then the query of the dashboards' curve panels (``grafana/queries/curves_m4.influxql``) is
run as Grafana sends it for one panel: the run variable's "All" of the group (its runs as
one alternation), one metric, ``$__interval`` for a panel ``--width`` pixels wide, the
backend's macros substituted; over the whole runs, and 1/10 and 1/100 of them. Printed: the
median of ``--repeat`` requests (wall, from sending the query to the parsed answer),
InfluxDB's CPU time per request (``/proc``), rows and series returned. Goal: ≤ 1 s per panel
for 100 runs × 1M points. Prints figures, never asserts them.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "grafana"))

import httpx

from curvestream_wire.v1 import run_pb2

import curvestream_bridge.store.influx.store as influx_store
from curvestream_bridge.store.influx.lineproto import stored_tag
from grafana_kit import influxql_macros, interpolate_variables, panel_interval_ms, query_library
from query_m4 import T0, SnapshottingInfluxd, count, machine, rounds
from series_influx import cpu_s

PROJECT, GROUP, KEY = "bench", "sweep", "loss"


def write_rollups(url: str, runs: list[str], points: int, marker: pathlib.Path) -> None:
    if marker.exists():
        print(f"reusing {len(runs)} runs × {points:,} points ({marker.name})")
        return
    raw_lines = influx_store.batch_lines
    influx_store.batch_lines = lambda b: []  # the rollup rows only (see the module docstring)
    store = influx_store.InfluxStore(url)
    t0 = time.perf_counter()
    try:
        for i, name in enumerate(runs):
            producer = f"bench-grafana-{name}".encode()
            for j, items in enumerate(rounds(points, seed=100 + i)):
                for batch in items:
                    batch.project, batch.run, batch.producer_id = PROJECT, name, producer
                if j == 0:
                    items[0].meta = run_pb2.RunMeta(project=PROJECT, run=name, group=GROUP)
                store.write(items)
            if i % 10 == 9:
                print(f"  wrote {i + 1} runs ({time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        store.close()
        influx_store.batch_lines = raw_lines
    marker.write_text("done")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--points", default="1M")
    ap.add_argument("--width", type=int, default=1200, help="the panel's width in pixels (Grafana's maxDataPoints)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default="")
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/grafana_many_runs.py " + " ".join(sys.argv[1:]))
    points = count(args.points)
    data = pathlib.Path(args.data or tempfile.mkdtemp(prefix="curvestream-grafana-many-"))
    data.mkdir(parents=True, exist_ok=True)
    runs = [f"run-{i:03d}" for i in range(args.runs)]
    server = SnapshottingInfluxd(data / "influxd")
    server.start(timeout=120)
    try:
        database = f"many_{args.runs}_{points}"
        write_rollups(server.store_url(database), runs, points, data / f"{database}.written")
        server.wait_for_snapshot()
        machine("before")
        text = interpolate_variables(query_library()["curves_m4"]["influxql"],
                                     {"project": PROJECT, "run": [stored_tag(r) for r in runs], "metric": [KEY]})
        first_ms, last_ms = T0 // 1_000_000, T0 // 1_000_000 + points  # a point every ms
        print(f"\n{args.runs} runs × {points:,} points, one panel {args.width} px wide; the curves query of the "
              f"dashboards (InfluxQL), medians of {args.repeat}")
        print(f"  {'window':>7} {'interval':>9} {'wall ms':>9} {'influxd ms':>11} {'series':>7} {'rows':>8}")
        with httpx.Client(timeout=600) as http:
            for frac in (1.0, 0.1, 0.01):
                mid = (first_ms + last_ms) / 2
                lo, hi = int(mid - (last_ms - first_ms) * frac / 2), int(mid + (last_ms - first_ms) * frac / 2)
                interval = panel_interval_ms(lo, hi, args.width)
                query = influxql_macros(text, lo, hi, interval)
                walls, cpus = [], []
                for _ in range(args.repeat + 1):  # the first one warms up
                    c0, t = cpu_s(server.proc.pid), time.perf_counter()
                    resp = http.post(f"{server.url}/query", data={"db": database, "q": query, "epoch": "ms"})
                    resp.raise_for_status()
                    series = resp.json()["results"][0].get("series", [])
                    walls.append((time.perf_counter() - t) * 1e3)
                    cpus.append((cpu_s(server.proc.pid) - c0) * 1e3)
                rows = sum(len(s["values"]) for s in series)
                label = "all" if frac == 1.0 else f"1/{round(1 / frac)}"
                print(f"  {label:>7} {interval:>7} ms {statistics.median(walls[1:]):>9.1f} "
                      f"{statistics.median(cpus[1:]):>11.0f} {len(series):>7} {rows:>8}", flush=True)
        print("  goal: <= 1 s per panel (100 runs × 1M points)")
        machine("after")
    finally:
        server.stop()
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
