"""The runs table with 1,000 and 10,000 runs: first paint, filter change, sort, page change.

    nice .venv/bin/python bench/page_runs_table.py [--runs 1000,10000] [--repeat 5] [--data DIR]

Each run is written through the bridge's real ingest path: one protobuf batch
per run (its metadata — config ``lr``/``seed``, a tag, a group, a host — a
status and 10 points of ``loss``) posted to ``POST /api/v1/ingest`` of a
bridge on DuckDB, 8 at a time; ``--data DIR`` keeps the file and reuses it.
A bridge (its own process, MQTT off) serves it and Debian's Chromium opens
the page, 1280×800 at 1×, each repetition in a fresh context.

- **First paint**: navigation start -> the table holds its first page of rows
  (the count says every run), and the next frame has run.
- **Filter change**: a search typed into the box (one ``fill``) -> the rows
  of the matching runs shown (the count says how many), and painted.
- **Sort**: a click on the Run header -> the first row is the first run by
  name, painted.
- **Page change**: a click on "next" -> the second page's rows, painted.

Printed: medians and maxima of each, and the bridge's share (Resource Timing:
request sent -> first byte of ``/api/v1/runs/table``). Goals: first
paint ≤ 300 ms, a filter change ≤ 150 ms. Prints figures, never asserts them.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from curvestream_wire.v1 import batch_pb2, run_pb2

from _page import chromium, machine, med, recorded_page, resource_timings
from _servers import BridgeProcess

PROJECT = "table"
T0 = 1_700_000_000_000_000_000

# when the table's rows or count change, and the frame after (the rows painted)
TABLE_JS = r"""
(() => {
  const log = { changes: [] };
  Object.defineProperty(window, '__table', { value: log });
  new MutationObserver(() => {
    const count = document.querySelector('[data-testid="runs-count"]')?.textContent ?? '';
    const first = document.querySelector('[data-testid="run-row"]')?.dataset.run ?? '';
    const rows = document.querySelectorAll('[data-testid="run-row"]').length;
    const range = document.querySelector('[data-testid="runs-range"]')?.textContent ?? '';
    const entry = { t: performance.now(), count, first, rows, range, painted: null };
    log.changes.push(entry);
    requestAnimationFrame(() => setTimeout(() => { entry.painted = performance.now(); }, 0));
  }).observe(document, { subtree: true, childList: true, characterData: true });
})();
"""


def run_name(i: int) -> str:
    return f"run-{i:05d}"


def batch(i: int) -> bytes:
    name = run_name(i)
    b = batch_pb2.Batch(version=1, producer_id=f"table-{i}".encode().ljust(16, b"."), seq=1, project=PROJECT,
                        run=name)
    b.meta.CopyFrom(run_pb2.RunMeta(project=PROJECT, run=name, config_json=json.dumps(
        {"lr": [0.1, 0.01, 0.001][i % 3], "seed": i % 10}), tags=[f"t{i % 5}"], group=f"sweep-{i % 20}",
        started_ns=T0 + i * 10**9, host=f"gpu-{i % 8}"))
    steps = list(range(10))
    b.scalars.add(key="loss", steps=steps, wall_ns=[T0 + i * 10**9 + s * 10**6 for s in steps],
                  values=[1.0 / (s + 1) for s in steps])
    b.status.CopyFrom(run_pb2.RunStatus(project=PROJECT, run=name, state=run_pb2.RUN_STATE_FINISHED,
                                        updated_ns=T0 + i * 10**9 + 10**8, last_seq=1,
                                        producer_id=f"table-{i}".encode().ljust(16, b".")))
    return b.SerializeToString()


def write_runs(folder: pathlib.Path, n: int) -> pathlib.Path:
    """The DuckDB file of ``n`` runs, written through a bridge's ingest endpoint (reused when it holds them)."""
    path = folder / f"runs-{n}.duckdb"
    if path.exists():
        bridge = BridgeProcess(folder / "check", f"duckdb:///{path}", "")
        bridge.start(timeout=900)
        try:
            have = httpx.get(bridge.url + "/api/v1/runs/table", params={"limit": 0}, timeout=60).json()["total"]
        finally:
            bridge.stop()
        if have == n:
            print(f"reusing {path} ({n:,} runs)")
            return path
        path.unlink()
    bridge = BridgeProcess(folder / "write", f"duckdb:///{path}", "", log_level="WARNING")
    bridge.start(timeout=120)
    t0 = time.perf_counter()
    try:
        with httpx.Client(base_url=bridge.url, timeout=120) as http, ThreadPoolExecutor(8) as pool:
            def post(i: int) -> None:
                resp = http.post("/api/v1/ingest", content=batch(i), headers={"Content-Type": "application/x-protobuf"})
                resp.raise_for_status()
            list(pool.map(post, range(n)))
    finally:
        bridge.stop()
    took = time.perf_counter() - t0
    print(f"wrote {n:,} runs through POST /api/v1/ingest in {took:.0f} s ({n / took:.0f} runs/s)")
    return path


def changes(page: Any) -> list[dict]:
    return page.evaluate("() => window.__table.changes.map(c => ({...c}))")


def wait_for(page: Any, after: float, test: Any, what: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in changes(page):
            if c["t"] > after and test(c) and c["painted"] is not None:
                return c
        time.sleep(0.01)
    raise AssertionError(f"{what}: not shown within {timeout} s; last {changes(page)[-3:]}")


def server_ms(page: Any, after: float) -> float | None:
    mine = [r for r in resource_timings(page, "/api/v1/runs/table") if r["start"] > after]
    return max(r["responseStart"] - r["requestStart"] for r in mine) if mine else None


def measure(browser: Any, url: str, n: int, repeat: int) -> None:
    searched = [i for i in range(n) if i % 20 == 7 and i % 8 == 3]
    first_by_name = run_name(min(searched))
    rows: dict[str, list[tuple[float, float | None]]] = {k: [] for k in ("first paint", "filter change", "sort",
                                                                         "page change")}
    for _ in range(repeat):
        with recorded_page(browser) as page:
            page.add_init_script(TABLE_JS)
            page.goto(url)
            got = wait_for(page, 0, lambda c: c["count"].startswith(f"{n} of {n} runs") and c["rows"] > 0,
                           "the first page")
            rows["first paint"].append((got["painted"], server_ms(page, 0)))
            time.sleep(0.5)

            now = page.evaluate("performance.now()")
            page.get_by_test_id("run-search").fill("sweep-7 gpu-3")
            got = wait_for(page, now, lambda c: c["count"].startswith(f"{len(searched)} of {n}")
                           and c["rows"] == min(100, len(searched)), "the search")
            rows["filter change"].append((got["painted"] - now, server_ms(page, now)))
            time.sleep(0.5)

            now = page.evaluate("performance.now()")
            page.locator("th[data-sort='run']").click()
            got = wait_for(page, now, lambda c: c["first"] == first_by_name, "the sort by name")
            rows["sort"].append((got["painted"] - now, server_ms(page, now)))
            page.get_by_test_id("run-search").fill("")
            wait_for(page, now, lambda c: c["count"].startswith(f"{n} of {n}") and c["first"] == run_name(0), "all")
            time.sleep(0.5)

            now = page.evaluate("performance.now()")
            page.get_by_test_id("runs-next").click()
            got = wait_for(page, now, lambda c: c["range"].startswith("101–") and c["first"] == run_name(100),
                           "the next page")
            rows["page change"].append((got["painted"] - now, server_ms(page, now)))
            assert not page.page_errors, page.page_errors
    print(f"\n{n:,} runs (ms, median / max of {repeat}; the bridge's share: request -> first byte, median)")
    goals = {"first paint": "goal <= 300 ms", "filter change": "goal <= 150 ms"}
    for what, values in rows.items():
        total = [v for v, _ in values]
        server = [s for _, s in values if s is not None]
        print(f"  {what:<14} {med(total):>6.0f} / {max(total):<6.0f} bridge {med(server) if server else 0:>5.0f}   "
              f"{goals.get(what, '')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default="", help="keep the DuckDB files here (reused when they hold the runs)")
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/page_runs_table.py " + " ".join(sys.argv[1:]))
    folder = pathlib.Path(args.data or tempfile.mkdtemp(prefix="curvestream-runs-table-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for n in (int(x) for x in args.runs.split(",")):
            path = write_runs(folder, n)
            machine(f"before {n:,} runs")
            bridge = BridgeProcess(folder / "serve", f"duckdb:///{path}", "", log_level="WARNING")
            bridge.start(timeout=900)  # a file just written opens with its write-ahead log replayed
            try:
                with chromium() as browser:
                    measure(browser, bridge.url + "/", n, args.repeat)
            finally:
                bridge.stop()
            machine(f"after {n:,} runs")
    finally:
        if not args.data:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
