"""log() -> pixel with 100 live runs on one chart of the page, over one WebSocket.

    nice .venv/bin/python bench/page_live_fleet.py [--processes 4] [--runs-each 25] [--rate 100] [--seconds 20]

``--processes`` trainer processes each drive ``--runs-each`` runs with the real
client (each run its own producer, spool and MQTT connection, over a real
Mosquitto), each run logging one key at ``--rate`` steps/s for ``--seconds``;
every logged value *is* its ``log()`` wall time in ms since the epoch. A
bridge on DuckDB (its own process) stores them; Debian's Chromium has the
page open on all the runs (one chart, one socket subscribed to every run),
and the page-side recorder (bench/_page.py) notes when the chart's drawn data
grows per run (the attributes the page writes in the task that calls ECharts'
``setOption``) and the next animation frame.

A point's latency is the time its run's curve first holds it drawn minus its
``log()`` time (same machine, same clock). Printed: p50 / p95 / max over every
point of every run (goal: p95 ≤ 300 ms), where the time goes (log() ->
the live message at the page, message -> drawn, drawn -> painted), and the
socket count. Prints figures, never asserts them.
"""

from __future__ import annotations

import argparse
import bisect
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

from _page import chromium, get_json, latency_row, machine, page_url, painted, recorded, recorded_page
from _servers import BridgeProcess, Mosquitto, wait_until

PROJECT = "fleet"
KEY = "latency"
WARMUP = 10

SOCKETS_JS = """(() => {
  let n = 0;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native { constructor(...a) { super(...a); n++; } };
  Object.defineProperty(window, '__sockets', { get: () => n });
})();"""


def trainer(mqtt_url: str, bridge_url: str, spool: str, prefix: str, runs: int, rate: float, seconds: float) -> None:
    """A trainer process: ``runs`` runs, WARMUP points each, "ready", then on a line from stdin ``rate``
    steps/s per run for ``seconds``, round-robin from one thread, each valued at its log() wall time."""
    import curvestream

    started = [curvestream.init(project=PROJECT, run=f"{prefix}-{j:02d}", mqtt_url=mqtt_url, bridge_url=bridge_url,
                                spool_dir=f"{spool}/{j}") for j in range(runs)]
    wait_until(lambda: all(r.link.connected for r in started), 60, "the trainers' MQTT connections")
    for run in started:
        for step in range(WARMUP):
            run.log({KEY: time.time() * 1000}, step=step)
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    for i in range(round(rate * seconds)):
        ahead = t0 + i / rate - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)
        for run in started:
            run.log({KEY: time.time() * 1000}, step=WARMUP + i)
    for run in started:
        run.finish()
    print("done", flush=True)


def run_path(run: str) -> str:
    return f"/api/v1/runs/{quote(PROJECT, safe='')}/{quote(run, safe='')}"


def stored(bridge: BridgeProcess, run: str) -> int:
    try:
        return {m["key"]: m["count"] for m in get_json(bridge.url, run_path(run) + "/metrics")["metrics"]}.get(KEY, 0)
    except OSError:
        return 0


def measure(browser: Any, bridge: BridgeProcess, names: list[str], total: int, go: Any) -> tuple[dict, int, list]:
    """Open the page on every run, wait until it is drawn and live, ``go()`` (the trainers start), and
    wait until every run's curve holds ``total`` points; the recorder's log, the sockets opened, page errors."""
    with recorded_page(browser) as page:
        page.add_init_script(SOCKETS_JS)
        page.goto(page_url(bridge.url, [(PROJECT, n) for n in names]))
        page.wait_for_function("() => window.__curvestream !== undefined")
        wait_until(lambda: (page.evaluate("k => window.__curvestream.chart(k)", KEY) or {}).get("state") == "ready"
                   and len(page.evaluate("k => window.__curvestream.chart(k)", KEY)["series"]) == len(names), 120,
                   "the chart of every run")
        wait_until(lambda: page.evaluate("window.__curvestream.live") == "open", 30, "the live socket")
        time.sleep(1.0)  # the page settles
        go()
        page.wait_for_function(
            """([key, total, n]) => { const d = window.__bench.draws.filter(d => d.key === key);
                const last = d.length ? JSON.parse(d[d.length - 1].points || '{}') : {};
                return Object.keys(last).length === n && Object.values(last).every(p => p >= total); }""",
            arg=[KEY, total, len(names)], timeout=600_000, polling=200)
        return recorded(page), page.evaluate("window.__sockets"), list(page.page_errors)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--trainer":
        mqtt_url, bridge_url, spool, prefix, runs, rate, seconds = sys.argv[2:9]
        trainer(mqtt_url, bridge_url, spool, prefix, int(runs), float(rate), float(seconds))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--runs-each", type=int, default=25)
    ap.add_argument("--rate", type=float, default=100, help="steps/s of each run")
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    print("command: nice .venv/bin/python bench/page_live_fleet.py " + " ".join(sys.argv[1:]))
    work = pathlib.Path(tempfile.mkdtemp(prefix="curvestream-page-live-fleet-"))
    broker = Mosquitto(work / "mosquitto")
    bridge = BridgeProcess(work / "bridge", f"duckdb:///{work / 'live.duckdb'}", broker.url, log_level="WARNING")
    procs: list[subprocess.Popen] = []
    names = [f"p{p}-{j:02d}" for p in range(args.processes) for j in range(args.runs_each)]
    total = WARMUP + round(args.rate * args.seconds)
    try:
        broker.start()
        bridge.start(timeout=60)
        for p in range(args.processes):
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--trainer", broker.url, bridge.url, str(work / f"spool-{p}"), f"p{p}",
                 str(args.runs_each), str(args.rate), str(args.seconds)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", "a trainer did not start"
        wait_until(lambda: all(stored(bridge, n) == WARMUP for n in names), 120, "the warm-up points stored")
        machine("before")
        def go() -> None:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()

        with chromium() as browser:
            log, sockets, errors = measure(browser, bridge, names, total, go)
        for proc in procs:
            proc.wait(300)
        machine("after")
        report(bridge, names, total, log, sockets, errors, args)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        bridge.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(bridge: BridgeProcess, names: list[str], total: int, log: dict, sockets: int, errors: list,
           args: argparse.Namespace) -> None:
    draws = [d for d in log["draws"] if d["key"] == KEY and d["points"]]
    counts = [(json.loads(d["points"]), d["wall"], d["t"]) for d in draws]
    lat, wire, page_part, frame_part = [], [], [], []
    for name in names:
        series = get_json(bridge.url, run_path(name) + f"/series?key={KEY}&width=20000")
        logged = dict(zip(series["points"]["step"], series["points"]["y"]))
        drawn = [(c.get(name, 0), wall, t) for c, wall, t in counts]
        drawn_n = [n for n, _, _ in drawn]
        arrivals = sorted((w["last"], w["wall"]) for w in log["ws"] if w["key"] == KEY and w["run"] == name)
        arrived_steps = [s for s, _ in arrivals]
        for step in range(WARMUP, total):
            i = bisect.bisect_left(drawn_n, step + 1)
            if i >= len(drawn) or step not in logged:
                continue
            _, wall, t = drawn[i]
            lat.append(wall - logged[step])
            j = bisect.bisect_left(arrived_steps, step)
            if j < len(arrivals):
                wire.append(arrivals[j][1] - logged[step])
                page_part.append(wall - arrivals[j][1])
            frame = painted(log["paints"], t, "wall")
            if frame is not None:
                frame_part.append(frame - wall)

    print(f"\n{len(names)} runs ({args.processes} processes × {args.runs_each}) × {args.rate:g} steps/s × "
          f"{args.seconds:g} s, one chart, {sockets} WebSocket(s); {len(lat):,} points timed")
    print(latency_row("log() -> drawn in the page (goal p95 <= 300)", lat))
    print("  where the time goes:")
    print(latency_row("  log() -> live message at the page", wire))
    print(latency_row("  live message -> drawn", page_part))
    print(latency_row("  drawn -> painted", frame_part))
    print(f"  {len(draws)} drawings of the chart; page errors: {errors or 'none'}")


if __name__ == "__main__":
    main()
