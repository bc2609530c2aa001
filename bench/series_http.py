"""Series answers over HTTP: one 10M-point series at width 2000, and ten runs in one request,
as JSON and as binary columns (``Accept: application/vnd.curvestream.series``).

    nice .venv/bin/python bench/series_http.py [--runs 10] [--points 10M] [--width 2000] [--repeat 7] [--data DIR]

The runs are bench/page_overlay_10x10m.py's (``--data DIR`` reuses its DuckDB
file when it holds them), served by a bridge in its own process (MQTT off).
A client on the same machine (httpx, one kept-alive connection) times each
request from sending until the body is read, and for binary also until it is
decoded to numpy arrays (``series_binary.decode``), for JSON until
``json.loads`` is done: the whole series (M4), and zooms to 1/10, 1/100 and
1/1000 of it (x = step). Medians of ``--repeat`` after a warm-up; the machine's
load average is printed before and after. The first reads after the bridge
starts are printed on their own: they read the rollup rows from the file and
queue the series for the rollup cache's loader, which the figures after them
wait for (``curvestream_rollup_cache_entries`` in ``/metrics``).

- ``one``: ``GET /api/v1/runs/bench/run-00/series`` (goal ≤ 20 ms binary at 10M points).
- ``ten``: ``GET /api/v1/series?run=bench/run-00&…&run=bench/run-09`` (one chart of
  the page: all runs in one request), beside ten single-series requests one after
  the other (what the page sent before).

Prints figures, never asserts them.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import httpx

from _page import prometheus
from _servers import BridgeProcess
from curvestream_bridge import series_binary
from page_overlay_10x10m import KEY, PROJECT, overlay_path, run_names, write_runs
from query_m4 import count, machine

ZOOMS = (1.0, 0.1, 0.01, 0.001)
BINARY = {"Accept": series_binary.MEDIA_TYPE}


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    fn()  # warm-up
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--points", default="10M", help="points per run")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--data", default="", help="keep the DuckDB file here (reused when it holds the runs)")
    args = ap.parse_args()
    points = count(args.points)
    print("command: nice .venv/bin/python bench/series_http.py " + " ".join(sys.argv[1:]))
    path = overlay_path(args.data, "curvestream-series-http-", args.runs, points)
    data = path.parent
    try:
        write_runs(path, args.runs, points)
        machine("before")
        bridge = BridgeProcess(data / "bridge-http", f"duckdb:///{path}", "")
        try:
            bridge.start(timeout=120)
            with httpx.Client(base_url=bridge.url, timeout=120) as http:
                measure(http, run_names(args.runs), points, args.width, args.repeat)
        finally:
            bridge.stop()
            machine("after")
    finally:
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)


def measure(http: httpx.Client, names: list[str], points: int, width: int, repeat: int) -> None:
    one = f"/api/v1/runs/{PROJECT}/{names[0]}/series"

    def get(path: str, params: Any, binary: bool) -> Callable[[], tuple[int, int]]:
        def go() -> tuple[int, int]:
            resp = http.get(path, params=params, headers=BINARY if binary else None)
            resp.raise_for_status()
            if binary:
                _, cols = series_binary.decode(resp.content)
                return len(resp.content), sum(len(c["x"]) for c in cols)
            body = json.loads(resp.content)
            return len(resp.content), sum(len(s["points"]["x"]) for s in body.get("series", [body]))
        return go

    cold(http, get(one, {"key": KEY, "width": width}, True),
         get("/api/v1/series", [("run", f"{PROJECT}/{n}") for n in names] + [("key", KEY), ("width", width)], True),
         len(names))
    print(f"\n{points:,} points per series, width {width}, x = step; medians of {repeat} (ms), body size")
    print(f"  {'request':<34} {'window':>7} {'JSON':>8} {'binary':>8} {'JSON KB':>8} {'bin KB':>7} {'points':>7}")
    for frac in ZOOMS:
        lo = int((points - 1) * (0.5 - frac / 2))
        hi = int((points - 1) * (0.5 + frac / 2))
        rng = {} if frac == 1.0 else {"start": lo, "end": hi}
        label = "all" if frac == 1.0 else f"1/{round(1 / frac)}"
        single = {"key": KEY, "width": width, **rng}
        many = [("run", f"{PROJECT}/{n}") for n in names] + [("key", KEY), ("width", width)] + list(rng.items())
        rows = [
            ("one series", get(one, single, False), get(one, single, True)),
            (f"{len(names)} runs, one request", get("/api/v1/series", many, False), get("/api/v1/series", many, True)),
        ]
        for name, as_json, as_binary in rows:
            tj, (bj, nj) = timed(as_json, repeat)
            tb, (bb, nb) = timed(as_binary, repeat)
            assert nj == nb
            print(
                f"  {name:<34} {label:>7} {tj:>8.1f} {tb:>8.1f} {bj / 1024:>8.0f} {bb / 1024:>7.0f} {nb:>7}", flush=True
            )
        singles = [get(f"/api/v1/runs/{PROJECT}/{n}/series", single, False) for n in names]
        ts, _ = timed(lambda singles=singles: [s() for s in singles], repeat)
        print(f"  {f'{len(names)} single JSON requests in turn':<34} {label:>7} {ts:>8.1f}")
    print("  goal: one 10M-point series at width 2000, binary, <= 20 ms")


def cold(http: httpx.Client, one: Callable[[], Any], many: Callable[[], Any], series: int) -> None:
    """The first reads after the bridge starts (the whole view, binary), then wait for the cache's loader."""
    def ms(fn: Callable[[], Any]) -> float:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    t_one, t_many = ms(one), ms(many)
    print(f"\nfirst reads after the bridge starts (rollup rows read from the file; whole view, binary): "
          f"one series {t_one:.1f} ms, {series} runs in one request {t_many:.1f} ms")
    base = str(http.base_url).rstrip("/")
    t, entries = time.perf_counter(), 0.0
    while time.perf_counter() - t < 120:
        entries = prometheus(base).get("curvestream_rollup_cache_entries", 0.0)
        if entries >= series:
            break
        time.sleep(0.05)
    print(f"rollup cache: {entries:.0f} of {series} series kept after {time.perf_counter() - t:.1f} s"
          + ("" if entries >= series else " (not all: the figures below read some from the file)"))


if __name__ == "__main__":
    main()
