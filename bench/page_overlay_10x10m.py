"""10 runs × 10M points overlaid in one chart of the page: first full render and zoom.

    nice .venv/bin/python bench/page_overlay_10x10m.py [--runs 10] [--points 10M] [--repeat 5] [--data DIR]

The runs are written straight through the bridge's store API (``open_store(...)
.write(DecodedBatch ...)``, the bridge's 200,000-point rounds, generated as
bench/query_m4.py generates its series: step = i, wall time 1 ms apart, a
decaying noisy curve with a +1000 spike and a -1000 dip, a seed per run) into
one DuckDB file; then a bridge (its own process, MQTT off: nothing streams)
serves that file and Debian's Chromium opens the page with the 10 runs
selected through the URL state (``/?run=bench/run-00&run=…``), 1280×800 at 1×.

- **First full render**: navigation start -> the chart's own state says all 10
  series are drawn (``data-state`` "ready" with 10 non-empty series in
  ``data-points``, written in the task that called ECharts' ``setOption``).
  Each repetition is a fresh browser context (empty cache) on the same
  bridge; the first repetition is also the bridge's first query of the file.
  Goal ≤ 1 s.
- **Zoom**: wheel notches over the plot (Chromium's notch zooms ECharts 1.1×),
  one gesture to about 1/10 of the whole run, the next to 1/100, the next to
  1/1000, then the reset button back to the whole run; timed from the last wheel event (the click) until the
  chart is "ready" again with the new window's answers drawn, split into the
  wait until the query is sent (ECharts' zoom throttle and the next animation
  frame: the page asks in the frame the gesture moved) and query + draw.
  Goal ≤ 200 ms. The page asks for all runs of the chart in one request
  (``/api/v1/series``, binary columns).

Printed: per repetition and medians, with where the time goes (Resource
Timing of the /series requests: queueing, server time to first byte,
download; the page's share after the last answer: JSON, model, ECharts).
Prints figures, never asserts them. ``--data DIR`` keeps the DuckDB file
there and reuses it when it already holds the runs.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _page import chromium, get_json, machine, med, page_url, recorded, recorded_page, resource_timings
from _servers import BridgeProcess
from curvestream_bridge.store import open_store
from query_m4 import count
from query_m4 import write_runs as write_rounds

PROJECT = "bench"
KEY = "loss"


def run_names(runs: int) -> list[str]:
    return [f"run-{i:02d}" for i in range(runs)]


def overlay_path(data: str, prefix: str, runs: int, points: int) -> pathlib.Path:
    """The DuckDB file of ``runs`` × ``points`` in folder ``data`` (made if missing; empty: a new
    temporary folder named ``prefix``…). :func:`write_runs` fills it."""
    folder = pathlib.Path(data or tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"overlay-{runs}x{points}.duckdb"


def write_runs(path: pathlib.Path, runs: int, points: int) -> None:
    """Every run's points into the DuckDB file, unless it already holds them all."""
    if path.exists():
        store = open_store(f"duckdb:///{path}")
        try:
            have = {(r.run, r.points) for r in store.runs() if r.project == PROJECT}
        finally:
            store.close()
        if have == {(name, points) for name in run_names(runs)}:
            print(f"reusing {path} ({runs} runs × {points:,} points, {path.stat().st_size / 1e9:.2f} GB)")
            return
        path.unlink()
    store = open_store(f"duckdb:///{path}")
    try:
        took = write_rounds(store, PROJECT, run_names(runs), points, "overlay")
    finally:
        store.close()
    print(f"wrote {runs} runs × {points:,} points in {took:.0f} s "
          f"({runs * points / took / 1e6:.2f} M points/s), {path.stat().st_size / 1e9:.2f} GB")


# The first draw after `after` (ms since navigation start) that leaves the chart "ready" with `n` non-empty
# series (with wantLoading: after a query that started after `after`), once the frame that rasterized it ran.
READY_JS = """([n, after, wantLoading]) => {
  const log = window.__bench;
  let loading = null;
  for (const d of log.draws) {
    if (d.t <= after) continue;
    if (d.state === 'loading' && loading === null) loading = d.t;
    if (d.state !== 'ready' || (wantLoading && loading === null)) continue;
    const points = Object.values(JSON.parse(d.points || '{}'));
    if (points.length !== n || !points.every((p) => p > 0)) continue;
    const paint = log.paints.find((p) => p.frame > d.t);
    return paint ? { loading, ready: d.t, painted: paint.t, points } : null;
  }
  return null;
}"""


def wait_ready(page: Any, n: int, after: float, want_loading: bool, what: str) -> dict:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        return page.wait_for_function(READY_JS, arg=[n, after, want_loading], timeout=120_000, polling=20).json_value()
    except PlaywrightTimeout:
        draws = [(round(d["t"]), d["state"], d["points"]) for d in recorded(page)["draws"]][-6:]
        message = page.evaluate("k => document.querySelector(`[data-key='${k}'] .chart-message`)?.textContent", KEY)
        raise AssertionError(f"{what}: not drawn after {after:.0f} ms; chart message {message!r}; "
                             f"last draws {draws}") from None


def cdp_metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def request_split(timings: list[dict], after: float = 0.0) -> dict[str, float]:
    """Where the /series requests sent after `after` spent their time (ms)."""
    mine = [r for r in timings if r["start"] > after]
    if not mine:
        raise AssertionError(f"no /series request after {after:.0f} ms")
    return {
        "requests": len(mine),
        "queued": max(r["requestStart"] - r["start"] for r in mine),  # waiting for a connection (6 per host)
        "server": med([r["responseStart"] - r["requestStart"] for r in mine]),  # the bridge: query + JSON
        "server_max": max(r["responseStart"] - r["requestStart"] for r in mine),
        "first_sent": min(r["start"] for r in mine),
        "last_end": max(r["responseEnd"] for r in mine),
        "kb": med([r["bytes"] for r in mine]) / 1024,
    }


def first_renders(browser: Any, url: str, n: int, repeat: int) -> None:
    print(f"\nFirst full render: navigation start -> all {n} series drawn, and painted (ms since navigation start)")
    print(f"  {'rep':>3} {'painted':>7} {'drawn':>6} {'app.js':>6} {'runs':>5} {'keys':>7} {'1st query':>9} "
          f"{'last answer':>11} {'server med/max':>14} {'queued':>6} {'answer->drawn':>13} {'->painted':>9} "
          f"{'script':>6}")
    painted, drawn = [], []
    for rep in range(repeat):
        with recorded_page(browser) as page:
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")
            page.goto(url)
            got = wait_ready(page, n, 0.0, False, "the first full render")
            script = cdp_metrics(cdp)["ScriptDuration"] * 1e3
            app_js = resource_timings(page, "assets/app.js")[0]["responseEnd"]
            runs = min(r["responseEnd"] for r in resource_timings(page, "api/v1/runs/table"))
            meta = min(r["responseEnd"] for r in resource_timings(page, "api/v1/keys"))
            series = resource_timings(page, "/series?")
            s = request_split(series)
            assert not page.page_errors, page.page_errors
        painted.append(got["painted"])
        drawn.append(got["ready"])
        print(f"  {rep + 1:>3} {got['painted']:>7.0f} {got['ready']:>6.0f} {app_js:>6.0f} {runs:>5.0f} {meta:>7.0f} "
              f"{s['first_sent']:>9.0f} {s['last_end']:>11.0f} {s['server']:>7.0f}/{s['server_max']:<6.0f} "
              f"{s['queued']:>6.0f} {got['ready'] - s['last_end']:>13.0f} {got['painted'] - got['ready']:>9.0f} "
              f"{script:>6.0f}")
    width = series[0]["name"].split("width=")[1].split("&")[0]
    print(f"  median: painted {med(painted):.0f} ms, drawn {med(drawn):.0f} ms (goal <= 1000 ms); without the first "
          f"(cold bridge) repetition: painted {med(painted[1:] or painted):.0f} ms. {s['requests']} /series requests "
          f"at width={width}, {s['kb']:.0f} KB and {got['points'][0]} points drawn per series")


def settle(page: Any) -> None:
    """Wait until the chart is ready and nothing changed for half a second."""
    def state() -> Any:
        return page.evaluate("""k => [window.__curvestream.chart(k).state, window.__curvestream.zoom,
            window.__bench.draws.length, performance.getEntriesByType('resource').length]""", KEY)

    last = state()
    while True:
        time.sleep(0.5)
        now = state()
        if now == last and now[0] == "ready":
            return
        last = now


def fraction_of(page: Any, total_points: int) -> float:
    window = page.evaluate("window.__curvestream.zoom")
    return 1.0 if window is None else (window[1] - window[0]) / (total_points - 1)


def zooms(browser: Any, url: str, n: int, total_points: int, repeat: int) -> None:
    from page_helpers import plot_center

    print(f"\nZoom: one wheel notch (ECharts zooms 1.1×, in and out in turn) or the reset click -> the new window's "
          f"answers drawn for all {n} series, and painted (ms; medians of {repeat})")
    print(f"  {'level':>6} {'window':>7} {'painted':>7} {'drawn':>6} {'waiting':>7} {'answers':>7} "
          f"{'server med/max':>14} {'queued':>6} {'answers->drawn':>14} {'->painted':>9} {'script':>6} {'requests':>8}")
    with recorded_page(browser) as page:
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url)
        wait_ready(page, n, 0.0, False, "the first full render")
        x, y = plot_center(page, KEY)
        # the toolbar's "reset zoom"
        reset = page.locator("button.link-button", has_text="reset zoom")

        def timed(action: Any, events: str, label: str) -> tuple[float, ...]:
            settle(page)
            before = cdp_metrics(cdp)["ScriptDuration"]
            now = page.evaluate("performance.now()")
            action()
            gesture = max(t for t in recorded(page)[events] if t > now)
            got = wait_ready(page, n, gesture, True, f"the zoom at {label}")
            s = request_split(resource_timings(page, "/series?"), gesture)
            window = page.evaluate("window.__curvestream.zoom")
            assert page.evaluate("k => window.__curvestream.chart(k).window", KEY) == window
            return (got["painted"] - gesture, got["ready"] - gesture, s["first_sent"] - gesture,
                    s["last_end"] - s["first_sent"], s["server"], s["server_max"], s["queued"],
                    got["ready"] - s["last_end"], got["painted"] - got["ready"],
                    (cdp_metrics(cdp)["ScriptDuration"] - before) * 1e3, s["requests"], fraction_of(page, total_points))

        def notch(delta: int) -> Any:
            def go() -> None:
                page.mouse.move(x, y)
                page.mouse.wheel(0, delta)
            return go

        def show(label: str, rows: list[tuple[float, ...]]) -> None:
            m = [med([r[i] for r in rows]) for i in range(len(rows[0]))]
            window = "all" if m[11] >= 0.999 else f"1/{1 / m[11]:.0f}"
            print(f"  {label:>6} {window:>7} {m[0]:>7.0f} {m[1]:>6.0f} {m[2]:>7.0f} {m[3]:>7.0f} "
                  f"{m[4]:>7.0f}/{m[5]:<6.0f} {m[6]:>6.0f} {m[7]:>14.0f} {m[8]:>9.0f} {m[9]:>6.0f} {m[10]:>8.0f}",
                  flush=True)

        for label, target in (("all", 1.0), ("1/10", 0.1), ("1/100", 0.01), ("1/1000", 0.001)):
            while fraction_of(page, total_points) > target * 1.05:  # there, untimed, a few notches at a time
                settle(page)
                need = math.ceil(math.log(fraction_of(page, total_points) / target) / math.log(1.1))
                page.mouse.move(x, y)
                for _ in range(min(8, need)):
                    page.mouse.wheel(0, -100)
            show(label, [timed(notch(-100 if i % 2 == 0 else 100), "wheels", label) for i in range(repeat)])
        rows = []
        for _ in range(repeat):
            settle(page)
            page.mouse.move(x, y)
            for _ in range(8):  # to about 1/2, untimed
                page.mouse.wheel(0, -100)
            rows.append(timed(reset.click, "clicks", "reset"))
        show("reset", rows)
        assert not page.page_errors, page.page_errors
    print(
        "  goal <= 200 ms. waiting: the wheel event (click) -> the first query sent (ECharts' zoom "
        "throttle, the end of the task that applied it); answers: first query sent -> last answer received; "
        "answers->drawn: "
        "-> the page's last setOption; ->painted: -> the frame that rasterized it ran"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--points", default="10M", help="points per run")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default="", help="keep the DuckDB file here (reused when it holds the runs)")
    args = ap.parse_args()
    points = count(args.points)
    print("command: nice .venv/bin/python bench/page_overlay_10x10m.py " + " ".join(sys.argv[1:]))
    path = overlay_path(args.data, "curvestream-page-overlay-", args.runs, points)
    data = path.parent
    try:
        write_runs(path, args.runs, points)
        machine("before")
        bridge = BridgeProcess(data / "bridge", f"duckdb:///{path}", "")  # MQTT off: nothing streams
        try:
            bridge.start(timeout=120)
            names = run_names(args.runs)
            stored = {r["run"]: r["points"] for r in get_json(bridge.url, "/api/v1/runs")["runs"]}
            assert all(stored.get(name) == points for name in names), stored
            url = page_url(bridge.url, [(PROJECT, name) for name in names])
            print(f"page: {url}")
            with chromium() as browser:
                first_renders(browser, url, args.runs, args.repeat)
                zooms(browser, url, args.runs, points, args.repeat)
        finally:
            bridge.stop()
            machine("after")
    finally:
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
