"""The bridge's ``/series`` on InfluxDB 1.x over HTTP: one series of 1M or 30M points, and ten runs
in one request, whole and zoomed, JSON and binary, x = step and x = time.

    nice .venv/bin/python bench/series_influx.py [--points 1M,30M] [--runs 10] [--width 2000] [--repeat 7] [--data DIR]

Each series is bench/query_m4.py's (step = i, wall time 1 ms apart with jitter, a decaying noisy
curve with a +1000 spike and a -1000 dip), written through the store's ``write()`` in the bridge's
200,000-point rounds into a real ``influxd`` (its points moved to TSM files before any read: an
hour-old series). ``--data DIR`` keeps the server's data there and reuses what it holds.

A bridge process then serves the database (MQTT off; the API's default: columns snapped to rollup
buckets, the range widened by at most 1/16), and a client on the same machine (httpx, one kept-alive
connection) times each request from sending until the body is decoded (``json.loads``, or
``series_binary.decode``): the whole series, and windows of 1/10, 1/100 and 1/1000 of it in the
middle. Printed per view:

- ``first``: the first request of that view after the bridge started (the rows a view needs are read
  from InfluxDB once per level and range, then kept: bridge/src/curvestream_bridge/store/influx/rowcache.py);
- ``median``: of ``--repeat`` requests after it;
- InfluxDB's CPU time for the first and for one later request (``/proc/<pid>/stat``).

Goals (issue: the page on InfluxDB): ≤ 100 ms at 1M points, ≤ 200 ms at 30M, every view, JSON and
binary. The machine's load average and speed probe are printed before and after. Prints figures,
never asserts them.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import httpx

from _servers import BridgeProcess
from curvestream_bridge import series_binary
from curvestream_bridge.store import open_store
from query_m4 import SnapshottingInfluxd, count, machine, write_runs

ZOOMS = (1.0, 0.1, 0.01, 0.001)
BINARY = {"Accept": series_binary.MEDIA_TYPE}
PROJECT, KEY = "bench", "loss"


def cpu_s(pid: int) -> float:
    """CPU seconds process ``pid`` has used (user + system, /proc/<pid>/stat)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_series(url: str, runs: list[str], points: int, marker: pathlib.Path) -> None:
    """The runs' points into the database, unless the marker says they are there."""
    if marker.exists():
        print(f"reusing {marker.parent.name}/{marker.name}: {len(runs)} × {points:,} points")
        return
    store = open_store(url)
    try:
        took = write_runs(store, PROJECT, runs, points, "influx")
    finally:
        store.close()
    marker.write_text("done")
    print(f"wrote {len(runs)} × {points:,} points in {took:.0f} s")


def fetch(http: httpx.Client, path: str, params: Any, binary: bool) -> Callable[[], int]:
    def go() -> int:
        resp = http.get(path, params=params, headers=BINARY if binary else None)
        resp.raise_for_status()
        if binary:
            _, cols = series_binary.decode(resp.content)
            return sum(len(c["x"]) for c in cols)
        body = json.loads(resp.content)
        return sum(len(s["points"]["x"]) for s in body.get("series", [body]))
    return go


def measure(http: httpx.Client, influxd_pid: int, runs: list[str], points: int, width: int, repeat: int) -> None:
    one = f"/api/v1/runs/{PROJECT}/{runs[0]}/series"
    print(f"\n{len(runs)} run(s) × {points:,} points, width {width}; ms from request to decoded body")
    print(f"  {'x':<5} {'request':<16} {'window':>7} {'first':>8} {'median':>8} {'binary':>8} {'points':>7} "
          f"{'influxd first':>14} {'influxd after':>14}")
    for x in ("step", "time"):
        whole = http.get(one, params={"key": KEY, "x": x, "width": 10, "snap": "false"}).json()
        lo, hi = whole["start"], whole["end"]
        for frac in ZOOMS:
            rng = {} if frac == 1.0 else {"start": lo + (hi - lo) * (0.5 - frac / 2),
                                          "end": lo + (hi - lo) * (0.5 + frac / 2)}
            label = "all" if frac == 1.0 else f"1/{round(1 / frac)}"
            requests = [("one series", one, {"key": KEY, "x": x, "width": width, **rng})]
            if len(runs) > 1:
                requests.append((f"{len(runs)} runs", "/api/v1/series",
                                 [("run", f"{PROJECT}/{r}") for r in runs] + [("key", KEY), ("x", x),
                                                                               ("width", width)] + list(rng.items())))
            for name, path, params in requests:
                as_json, as_binary = fetch(http, path, params, False), fetch(http, path, params, True)
                c0, t0 = cpu_s(influxd_pid), time.perf_counter()
                as_json()
                first, cpu_first = (time.perf_counter() - t0) * 1e3, (cpu_s(influxd_pid) - c0) * 1e3
                times, btimes = [], []
                c0 = cpu_s(influxd_pid)
                for _ in range(repeat):
                    t = time.perf_counter()
                    as_json()
                    times.append((time.perf_counter() - t) * 1e3)
                cpu_after = (cpu_s(influxd_pid) - c0) * 1e3 / repeat
                for _ in range(repeat):
                    t = time.perf_counter()
                    n = as_binary()
                    btimes.append((time.perf_counter() - t) * 1e3)
                print(f"  {x:<5} {name:<16} {label:>7} {first:>8.1f} {statistics.median(times):>8.1f} "
                      f"{statistics.median(btimes):>8.1f} {n:>7} {cpu_first:>11.0f} ms {cpu_after:>11.1f} ms",
                      flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", default="1M,30M", help="points per series, comma-separated sizes")
    ap.add_argument("--runs", type=int, default=10, help="runs of the ten-run request (of the smallest size)")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--data", default="", help="keep InfluxDB's data here (reused when it holds the series)")
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/series_influx.py " + " ".join(sys.argv[1:]))
    data = pathlib.Path(args.data or tempfile.mkdtemp(prefix="curvestream-series-influx-"))
    data.mkdir(parents=True, exist_ok=True)
    sizes = [count(s) for s in args.points.split(",")]
    server = SnapshottingInfluxd(data / "influxd")
    server.start(timeout=120)
    try:
        plans = []
        for n in sizes:
            runs = [f"run-{i:02d}" for i in range(args.runs if n == min(sizes) else 1)]
            database = f"series_{n}"
            write_series(server.store_url(database), runs, n, data / f"{database}-{len(runs)}.written")
            plans.append((database, runs, n))
        server.wait_for_snapshot()
        for database, runs, n in plans:
            machine("before")
            bridge = BridgeProcess(data / f"bridge-{database}", server.store_url(database), "")
            try:
                bridge.start(timeout=900)
                with httpx.Client(base_url=bridge.url, timeout=600) as http:
                    measure(http, server.proc.pid, runs, n, args.width, args.repeat)
            finally:
                bridge.stop()
            machine("after")
    finally:
        server.stop()
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
