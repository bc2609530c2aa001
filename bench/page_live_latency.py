"""log() -> pixel: how long a logged point takes to be drawn in an open page.

    nice .venv/bin/python bench/page_live_latency.py [--points 300] [--interval-ms 50] [--flush-ms 200,50]

A trainer process (the real client, over a real Mosquitto) logs one point every
``--interval-ms`` into a bridge on DuckDB (its own process); Debian's Chromium
has the page open on that run, subscribed live. Each logged value *is* its
``log()`` wall time in ms since the epoch (read with ``time.time()`` just
before the call); the page draws it through the WebSocket, and a page-side
recorder (bench/_page.py) notes when the chart's drawn data grows (the
attributes the page writes in the task that calls ECharts' ``setOption``) and
the next animation frame. A point's latency is its draw time minus its
``log()`` time (same machine, same clock).

Printed per client flush interval (``--flush-ms``; the client's default is
200 ms): p50 / p95 / max over ``--points`` points (goal: p95 ≤ 300 ms), and
where the time goes: log() -> the live message reaches the page (client
batching, MQTT, the bridge's store write, its live frame), message -> drawn
(the page's draw coalescing and ECharts), drawn -> painted. Prints
figures, never asserts them.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _page import chromium, get_json, latency_row, machine, page_url, painted, prometheus, recorded, recorded_page
from _servers import BridgeProcess, Mosquitto, wait_until

PROJECT = "bench"
KEY = "latency"
WARMUP = 20  # points logged before the page opens (the chart's first query)


def trainer(mqtt_url: str, bridge_url: str, spool: str, run_name: str, points: int, interval_ms: float,
            flush_ms: int) -> None:
    """The trainer process: WARMUP points, "ready" on stdout, then on a line from stdin
    ``points`` points, one every ``interval_ms``, each valued at its log() wall time."""
    import curvestream

    run = curvestream.init(project=PROJECT, id=run_name, mqtt_url=mqtt_url, bridge_url=bridge_url,
                           spool_dir=spool, flush_interval_ms=flush_ms)
    wait_until(lambda: run.link.connected, 30, "the trainer's MQTT connection")
    for step in range(WARMUP):
        run.log({KEY: time.time() * 1000}, step=step)
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    for i in range(points):
        ahead = t0 + i * interval_ms / 1000 - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)
        run.log({KEY: time.time() * 1000}, step=WARMUP + i)
    report = run.finish()
    print(f"done {report.complete}", flush=True)


DRAWN_JS = """([key, total]) => window.__bench.draws.some((d) => d.key === key
    && Object.values(JSON.parse(d.points || '{}')).reduce((a, b) => a + b, 0) >= total)"""


def first_at_or_after(times: list[tuple[float, float]], value: float) -> float | None:
    """The time of the first (count_or_step, time) pair whose first member is >= value (times ascending)."""
    for v, t in times:
        if v >= value:
            return t
    return None


def measure(browser: Any, broker: Mosquitto, bridge: BridgeProcess, spool: pathlib.Path, points: int,
            interval_ms: float, flush_ms: int) -> None:
    run_name = f"live flush={flush_ms}ms {time.time_ns()}"
    proc = subprocess.Popen([sys.executable, __file__, "--trainer", broker.url, bridge.url, str(spool), run_name,
                             str(points), str(interval_ms), str(flush_ms)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the trainer did not start")
        run_path = f"/api/v1/runs/{quote(PROJECT, safe='')}/{quote(run_name, safe='')}"

        def stored() -> int:
            try:
                return {m["key"]: m["count"] for m in get_json(bridge.url, run_path + "/metrics")["metrics"]}.get(
                    KEY, 0
                )
            except OSError:
                return 0

        wait_until(lambda: stored() == WARMUP, 60, "the warm-up points stored")
        metrics_before = prometheus(bridge.url)
        with recorded_page(browser) as page:
            page.goto(page_url(bridge.url, [(PROJECT, run_name)]))
            page.wait_for_function("() => window.__curvestream !== undefined")
            wait_until(lambda: (page.evaluate("k => window.__curvestream.chart(k)", KEY) or {}).get("state") == "ready"
                       and page.evaluate("k => window.__curvestream.chart(k)", KEY)["series"][0]["points"] == WARMUP,
                       60, "the chart with the warm-up points")
            wait_until(lambda: page.evaluate("window.__curvestream.live") == "open", 30, "the live socket")
            time.sleep(1.0)  # the page settles
            proc.stdin.write("go\n")
            proc.stdin.flush()
            total = WARMUP + points
            # the page's snapshot counts points received; the recorder's draws count points drawn
            page.wait_for_function(DRAWN_JS, arg=[KEY, total], timeout=(points * interval_ms / 1000 + 60) * 1000)
            log = recorded(page)
            drawn_now = page.evaluate("k => window.__curvestream.drawnSeries(k)", KEY)
            errors = list(page.page_errors)
        line = proc.stdout.readline().strip()
        proc.wait(60)
        metrics_after = prometheus(bridge.url)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    # what was logged: each value is its log() wall time (ms since the epoch)
    series = get_json(bridge.url, run_path + f"/series?key={KEY}&width=20000")
    assert series["raw"] and series["points"]["step"] == list(range(total)), "every point stored once, in order"
    logged = dict(zip(series["points"]["step"], series["points"]["y"]))

    draws = [(sum(json_points(d["points"]).values()), d["wall"], d["t"]) for d in log["draws"] if d["key"] == KEY]
    drawn = [(n, wall) for n, wall, _ in draws]
    arrivals = [(w["last"], w["wall"]) for w in log["ws"] if w["key"] == KEY]
    lat, wire, page_part, frame_part, on_screen = [], [], [], [], []
    for step in range(WARMUP, total):
        t_log = logged[step]
        t_drawn = first_at_or_after(drawn, step + 1)  # `step + 1` points drawn: steps 0..step
        t_ws = first_at_or_after(arrivals, step)
        t_draw_perf = next(t for n, _, t in draws if n >= step + 1)
        t_frame = painted(log["paints"], t_draw_perf, "wall")
        lat.append(t_drawn - t_log)
        wire.append(t_ws - t_log)
        page_part.append(t_drawn - t_ws)
        if t_frame is not None:
            frame_part.append(t_frame - t_drawn)
            on_screen.append(t_frame - t_log)

    writes = metrics_after.get("curvestream_store_write_seconds_count", 0) - metrics_before.get(
        "curvestream_store_write_seconds_count", 0)
    write_s = metrics_after.get("curvestream_store_write_seconds_sum", 0) - metrics_before.get(
        "curvestream_store_write_seconds_sum", 0)
    frames_with_points = len({w["wall"] for w in log["ws"] if w["key"] == KEY and w["last"] >= WARMUP})
    draws_with_points = len({n for n, _ in drawn if n > WARMUP})

    print(f"\nclient flush interval {flush_ms} ms, a point every {interval_ms:g} ms, {len(lat)} points "
          f"(trainer: {line}):")
    print(latency_row("log() -> drawn in the page (goal p95 <= 150)", lat))
    print(latency_row("log() -> painted (the next frame rasterized it)", on_screen))
    print("  where the time goes:")
    print(latency_row("  log() -> live message at the page", wire))
    print(latency_row("  live message -> drawn", page_part))
    print(latency_row("  drawn -> painted", frame_part))
    print(f"    bridge store writes meanwhile: {writes:.0f}, mean {write_s / max(writes, 1) * 1e3:.1f} ms; "
          f"{frames_with_points} live messages, {draws_with_points} draws; ECharts holds "
          f"{[s['points'] for s in drawn_now if s['id'].endswith('|raw')]} points; page errors: {errors or 'none'}")


def json_points(text: str | None) -> dict[str, int]:
    return json.loads(text) if text else {}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--trainer":
        mqtt_url, bridge_url, spool, run_name, points, interval_ms, flush_ms = sys.argv[2:9]
        trainer(mqtt_url, bridge_url, spool, run_name, int(points), float(interval_ms), int(flush_ms))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=300, help="points timed per flush interval")
    ap.add_argument("--interval-ms", type=float, default=50.0, help="the trainer logs a point this often")
    ap.add_argument("--flush-ms", default="200,50",
                    help="client flush intervals to measure, comma-separated (the client's default: 200)")
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/page_live_latency.py " + " ".join(sys.argv[1:]))
    machine("before")
    work = pathlib.Path(tempfile.mkdtemp(prefix="curvestream-page-live-"))
    broker = Mosquitto(work / "mosquitto")
    bridge = BridgeProcess(work / "bridge", f"duckdb:///{work / 'live.duckdb'}", broker.url)
    try:
        broker.start()
        bridge.start(timeout=60)
        with chromium() as browser:
            for flush_ms in [int(s) for s in args.flush_ms.split(",") if s.strip()]:
                spool = work / f"spool-{flush_ms}"
                spool.mkdir()
                measure(browser, broker, bridge, spool, args.points, args.interval_ms, flush_ms)
    finally:
        bridge.stop()
        broker.stop()
        machine("after")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
