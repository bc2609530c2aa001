"""A run with 10,000 keys in the page: open, search, scroll through every section, page memory.

    nice .venv/bin/python bench/page_many_keys.py [--layers 100] [--stats 100] [--steps 50] [--data DIR]

The run (``keys/wide``) logs ``layer.<i>/stat<j>`` for ``--layers`` × ``--stats``
keys, ``--steps`` points each, written straight through the bridge's store
API (``store.write``, one batch per layer; ``--data DIR`` keeps the DuckDB
file and reuses it); a bridge (its own process, MQTT off) serves it and
Debian's Chromium opens the page on that run, 1280×800 at 1×, in a fresh
context.

- **Open**: navigation start -> the first chart drawn and painted (the
  sections listed by ``GET /api/v1/keys``, the first charts' series queried).
  Goal ≤ 500 ms.
- **Search**: one key typed into the chart filter -> its chart drawn, painted.
- **Scroll through all sections**: each section's header scrolled to the top
  of the screen in turn -> every chart then on screen drawn and painted;
  median, p95 and max over the sections.
- **Memory**: after every section, the page's JS heap and DOM nodes (CDP
  ``Performance.getMetrics``), the chart cards and canvases in the page, and
  the resident memory of the Chromium processes (renderer, GPU, browser);
  the largest of each. Goal ≤ 500 MB.

Prints figures, never asserts them.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _page import chromium, machine, med, page_url, pct, recorded, recorded_page
from _servers import BridgeProcess
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store

PROJECT, RUN = "keys", "wide"
T0 = 1_700_000_000_000_000_000


def keys_of(layers: int, stats: int) -> list[str]:
    return [f"layer.{i}/stat{j:02d}" for i in range(layers) for j in range(stats)]


def write_run(path: pathlib.Path, layers: int, stats: int, steps: int) -> None:
    if path.exists():
        store = open_store(f"duckdb:///{path}")
        try:
            have = len(store.metrics(PROJECT, RUN))
        finally:
            store.close()
        if have == layers * stats:
            print(f"reusing {path} ({have:,} keys)")
            return
        path.unlink()
    store = open_store(f"duckdb:///{path}")
    t0 = time.perf_counter()
    rng = np.random.default_rng(3)
    try:
        s = np.arange(steps, dtype=np.int64)
        for i in range(layers):
            columns = [ScalarColumn(f"layer.{i}/stat{j:02d}", s, T0 + s * 1_000_000,
                                    np.cumsum(rng.standard_normal(steps))) for j in range(stats)]
            store.write([DecodedBatch(b"wide-keys", i + 1, PROJECT, RUN, columns, [], [], None, None, 0)])
    finally:
        store.close()
    print(f"wrote {layers * stats:,} keys × {steps} points in {time.perf_counter() - t0:.0f} s")


def drawn_after(page: Any, keys: list[str], after: float) -> float | None:
    """When the last of these charts was drawn ready after ``after`` and painted (ms since navigation); None if
    not yet. A chart that was ready before ``after`` and has not changed since counts as painted at ``after``."""
    log = recorded(page)
    last = after
    for key in keys:
        mine = [d for d in log["draws"] if d["key"] == key]
        ready = next((d["t"] for d in mine if d["t"] > after and d["state"] == "ready"), None)
        if ready is None:
            if mine and mine[-1]["t"] <= after and mine[-1]["state"] == "ready":
                continue  # on screen already, drawn
            return None
        paint = next((p["t"] for p in log["paints"] if p["frame"] > ready), None)
        if paint is None:
            return None
        last = max(last, paint)
    return last


def wait_drawn(page: Any, keys: list[str], after: float, what: str, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = drawn_after(page, keys, after)
        if got is not None:
            return got
        time.sleep(0.02)
    raise AssertionError(f"{what}: {keys[:3]}… not drawn within {timeout} s")


ON_SCREEN_JS = """() => [...document.querySelectorAll('.chart-card')].filter(c => {
    const r = c.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }).map(c => c.dataset.key)"""


def chromium_rss_mb() -> tuple[float, float]:
    """Resident memory of this bench's Chromium (the processes under this one): the page's renderer, and all."""
    renderer = total = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" not in proc.name():
                continue
            rss = proc.memory_info().rss
            total += rss
            if "--type=renderer" in " ".join(proc.cmdline()):
                renderer = max(renderer, rss)
        except psutil.Error:
            continue
    return renderer / 2**20, total / 2**20


def measure(url: str, keys: list[str], layers: int) -> None:
    with chromium() as browser, recorded_page(browser) as page:
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url)
        first = wait_drawn(page, [keys[0]], 0, "the first chart")
        print(f"\nOpen: the first chart painted {first:.0f} ms after navigation start (goal <= 500 ms)")
        time.sleep(1)

        target = keys[len(keys) * 57 // 100 + 42]
        now = page.evaluate("performance.now()")
        page.get_by_test_id("metric-filter").fill(target)
        found = wait_drawn(page, [target], now, "the searched key")
        print(f"Search: {target!r} typed -> its chart painted in {found - now:.0f} ms "
              f"(the filter's typing pause {150} ms included)")
        page.get_by_test_id("metric-filter").fill("")
        page.wait_for_function("n => window.__curvestream.sections.length === n", arg=layers, timeout=60_000)
        time.sleep(1)

        per_section: list[float] = []
        peaks = {"heap": 0.0, "nodes": 0.0, "cards": 0, "canvases": 0, "renderer": 0.0, "rss": 0.0}
        for i in range(layers):
            now = page.evaluate("performance.now()")
            page.evaluate("""n => document.querySelector(`[data-testid="chart-section"][data-section="${n}"]`)
                .scrollIntoView({block: 'start'})""", f"layer.{i}")
            # the section's first charts made, then those of them on screen drawn
            page.wait_for_function("i => window.__curvestream.sections[i].charts.length > 0", arg=i, timeout=60_000)
            shown = [k for k in page.evaluate(ON_SCREEN_JS) if k.startswith(f"layer.{i}/")]
            per_section.append(wait_drawn(page, shown, now, f"section layer.{i}") - now)
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            peaks["heap"] = max(peaks["heap"], metrics["JSHeapUsedSize"] / 2**20)
            peaks["nodes"] = max(peaks["nodes"], metrics["Nodes"])
            peaks["cards"] = max(peaks["cards"], page.locator(".chart-card").count())
            peaks["canvases"] = max(peaks["canvases"], page.locator(".chart-card canvas").count())
            renderer, everything = chromium_rss_mb()
            peaks["renderer"] = max(peaks["renderer"], renderer)
            peaks["rss"] = max(peaks["rss"], everything)
        assert not page.page_errors, page.page_errors
    print(f"Scroll through all {layers} sections (a section's header to the top -> the charts then on screen painted): "
          f"median {med(per_section):.0f} ms, p95 {pct(per_section, 0.95):.0f} ms, max {max(per_section):.0f} ms")
    print(f"Memory while scrolling (largest): JS heap {peaks['heap']:.0f} MB, DOM nodes {peaks['nodes']:.0f}, "
          f"chart cards {peaks['cards']}, canvases {peaks['canvases']}; the page's renderer process RSS "
          f"{peaks['renderer']:.0f} MB (goal <= 500 MB), all of Chromium's processes {peaks['rss']:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=100)
    ap.add_argument("--stats", type=int, default=100)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--data", default="", help="keep the DuckDB file here (reused when it holds the keys)")
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/page_many_keys.py " + " ".join(sys.argv[1:]))
    folder = pathlib.Path(args.data or tempfile.mkdtemp(prefix="curvestream-many-keys-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"keys-{args.layers}x{args.stats}x{args.steps}.duckdb"
    try:
        write_run(path, args.layers, args.stats, args.steps)
        machine("before")
        bridge = BridgeProcess(folder / "bridge", f"duckdb:///{path}", "", log_level="WARNING")
        bridge.start(timeout=120)
        try:
            measure(page_url(bridge.url, [(PROJECT, RUN)]), keys_of(args.layers, args.stats), args.layers)
        finally:
            bridge.stop()
            machine("after")
    finally:
        if not args.data:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
