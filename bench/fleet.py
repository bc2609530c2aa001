"""The bridge fed by a synthetic fleet: many producers, few connections.

    nice .venv/bin/python bench/fleet.py --producers 1,100,1000 --rate 200000 --seconds 30
    nice .venv/bin/python bench/fleet.py --producers 10000 --rate 200000 --interval-ms 1000 --seconds 30
    nice .venv/bin/python bench/fleet.py --producers 1000 --seconds 10 --py-spy /tmp/fleet-prof

For each producer count: a fresh Mosquitto and a fresh bridge process (DuckDB,
or InfluxDB 1.6.7 with ``--store influxdb``); ``--connections`` publisher
processes (bench/fleet_publisher.py) share the producers and send pre-encoded
batches of ``--keys`` keys every ``--interval-ms``, ``--rate`` points/s in
total, for ``--seconds``, through Mosquitto; a WebSocket on ``/api/v1/live``
watches ``--watch`` runs. Printed per count:

- points/s stored while the stream ran, and the drain: seconds from the end of
  the stream until the bridge had stored every point (``points_ingested_total``);
- live latency p50/p99 at the WebSocket (arrival minus the point's wall time,
  the schedule's: a publisher that falls behind counts against it too);
- bridge RSS (peak, sampled every 0.5 s) and CPU seconds per million points
  (utime + stime from /proc, stream start to drain), per message too;
- runs finished, and the load average and speed probe (``machine()``).

Goals (issue fan-in): 1,000 producers at 200k points/s into DuckDB drained
≤ 5 s after the stream, live p99 ≤ 1 s, RSS ≤ 1 GB, CPU per million points
≤ 1.5× the one-producer figure. Never asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _live import LiveListener, rss_mb
from _page import pct, prometheus
from _servers import BridgeProcess, Influxd, Mosquitto
from query_m4 import machine

HERE = pathlib.Path(__file__).resolve().parent
PROJECT = "fleet"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def stage_seconds(url: str) -> str:
    """The ingest pipeline's time per stage so far, from /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    found = re.findall(r'curvestream_ingest_stage_seconds_total\{stage="(\w+)"\} (\S+)', text)
    return " ".join(f"{stage} {float(v):.1f}" for stage, v in found)


def runs_finished(url: str) -> int:
    with urllib.request.urlopen(url + "/api/v1/runs", timeout=300) as resp:
        runs = json.loads(resp.read())
    runs = runs["runs"] if isinstance(runs, dict) else runs
    return sum(1 for r in runs if r["project"] == PROJECT and r["state"] == "finished")


def one(producers: int, args: argparse.Namespace, tmp: pathlib.Path) -> dict:
    steps_per_s = args.rate / args.keys / producers
    steps = max(1, round(steps_per_s * args.interval_ms / 1000))
    batches = max(2, round(args.seconds * 1000 / args.interval_ms))
    total = producers * batches * steps * args.keys
    offered = producers * steps * args.keys * 1000 / args.interval_ms
    broker = Mosquitto(tmp / "mosquitto", max_queued=0)
    broker.start()
    influx = None
    if args.store == "influxdb":
        influx = Influxd(tmp / "influxd")
        influx.start(timeout=60)
        store = influx.store_url("fleet")
    else:
        store = f"duckdb:///{tmp / 'store.duckdb'}"
    bridge = BridgeProcess(tmp / "bridge", store, broker.url, log_level="WARNING", mqtt_protocol="5",
                           **dict(kv.split("=", 1) for kv in args.bridge_setting))
    bridge.start(timeout=120)
    pubs: list[subprocess.Popen] = []
    sampler = None
    try:
        watched = [f"f{i}" for i in range(min(args.watch, producers))]
        watcher = LiveListener(bridge.url.replace("http://", "ws://") + "/api/v1/live", PROJECT, watched)
        watcher.start()
        watcher.subscribed.wait(30)
        share = [producers // args.connections + (1 if c < producers % args.connections else 0)
                 for c in range(args.connections)]
        first = 0
        for n in share:
            if n == 0:
                continue
            pubs.append(subprocess.Popen(
                [sys.executable, str(HERE / "fleet_publisher.py"), "--mqtt-port", str(broker.port), "--project",
                 PROJECT, "--first", str(first), "--producers", str(n), "--keys", str(args.keys),
                 "--steps-per-batch", str(steps), "--interval-ms", str(args.interval_ms), "--batches", str(batches)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            first += n
        for p in pubs:
            assert p.stdout.readline().strip() == "hello"
        encode_s = 5 + total / 150_000 / max(1, len(pubs))  # the publishers encode before t0
        t0 = time.time() + encode_s
        for p in pubs:
            p.stdin.write(f"{int(t0 * 1e9)}\n")
            p.stdin.flush()
        for p in pubs:
            line = p.stdout.readline().strip()
            assert line == "ready", line
        if time.time() > t0:
            print(f"  (the publishers were ready {time.time() - t0:.1f} s after t0)")
        while time.time() < t0:
            time.sleep(0.01)
        cpu0 = cpu_s(bridge.pid)
        if args.py_spy:
            from _pyspy import Sampler

            sampler = Sampler(pathlib.Path(args.py_spy) / f"p{producers}", {"bridge": bridge.pid}).__enter__()
        end = t0 + batches * args.interval_ms / 1000
        rss_peak, stored_at_end, done_at = 0.0, None, None
        deadline = end + args.drain_timeout
        last_print = 0.0
        while time.time() < deadline:
            try:
                figures = prometheus(bridge.url)
            except OSError:  # a bridge starved of CPU may not answer /metrics in time: ask again
                continue
            stored = figures.get("curvestream_points_ingested_total", 0)
            if args.timeline and time.time() - last_print >= args.timeline:
                last_print = time.time()
                print(f"  t={last_print - t0:6.1f}s stored {stored:>10,.0f} window "
                      f"{figures.get('curvestream_ingest_queue_depth', 0):>6.0f} rounds "
                      f"{figures.get('curvestream_ingest_rounds_total', 0):>5.0f} messages "
                      f"{figures.get('curvestream_ingest_round_messages_total', 0):>8,.0f} cpu "
                      f"{cpu_s(bridge.pid) - cpu0:6.1f} s; stages (s): {stage_seconds(bridge.url)}", flush=True)
            rss_peak = max(rss_peak, rss_mb(bridge.pid))
            now = time.time()
            if stored_at_end is None and now >= end:
                stored_at_end = stored
            if stored >= total:
                done_at = now
                break
            time.sleep(0.5)
        cpu = cpu_s(bridge.pid) - cpu0
        if sampler is not None:
            sampler.__exit__(None, None, None)
        late = [float(p.stdout.readline().split()[1]) for p in pubs]
        watcher.stop.set()
        watcher.join(5)
        stored = prometheus(bridge.url).get("curvestream_points_ingested_total", 0)
        messages = producers * batches
        lat = watcher.latencies_ms
        res = {
            "producers": producers, "points": total, "messages": messages, "offered": offered,
            "points_per_message": steps * args.keys, "stored": stored,
            "stored_per_s_during": (stored_at_end or stored) / max(end - t0, 1e-9),
            "drain_s": (done_at - end) if done_at else None,
            "live_p50_ms": pct(lat, 0.5) if lat else None, "live_p99_ms": pct(lat, 0.99) if lat else None,
            "live_points": len(lat), "gaps": watcher.gaps, "rss_peak_mb": rss_peak,
            "cpu_s": cpu, "cpu_s_per_m_points": cpu / (stored / 1e6) if stored else None,
            "cpu_us_per_message": cpu / messages * 1e6, "publisher_late_s": max(late),
            "finished": runs_finished(bridge.url), "load": os.getloadavg()[0],
        }
        if sampler is not None:
            print(sampler.report(("ingest", "store", "duckdb", "alerts", "live", "decode", "paho", "mqtt",
                                  "settle", "notify", "dedupe", "write", "points", "seriesstats", "many_partials",
                                  "batchlog", "engine", "Subscriber")))
        return res
    finally:
        for p in pubs:
            if p.poll() is None:
                p.kill()
        bridge.stop()
        broker.stop()
        if influx is not None:
            influx.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--producers", default="1,100,1000")
    parser.add_argument("--rate", type=float, default=200_000, help="points/s offered, all producers together")
    parser.add_argument("--keys", type=int, default=2)
    parser.add_argument("--interval-ms", type=float, default=200, help="each producer publishes a batch this often")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--watch", type=int, default=100, help="runs the live WebSocket watches")
    parser.add_argument("--store", choices=("duckdb", "influxdb"), default="duckdb")
    parser.add_argument("--drain-timeout", type=float, default=300)
    parser.add_argument("--bridge-setting", action="append", default=[], help="name=value, a CURVESTREAM_* setting")
    parser.add_argument("--py-spy", default="", help="profile the bridge into this folder")
    parser.add_argument("--keep", action="store_true", help="keep the broker's and the bridge's files and logs")
    parser.add_argument("--timeline", type=float, default=0, help="print the bridge's progress every this many s")
    args = parser.parse_args()
    print(f"# reproduce: nice {sys.executable} bench/fleet.py --producers {args.producers} --rate {args.rate:g} "
          f"--keys {args.keys} --interval-ms {args.interval_ms:g} --seconds {args.seconds:g} "
          f"--connections {args.connections} --watch {args.watch} --store {args.store}"
          + "".join(f" --bridge-setting {s}" for s in args.bridge_setting))
    results = []
    for n in [int(x) for x in args.producers.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            if args.keep:
                tmp = tempfile.mkdtemp(prefix=f"fleet-{n}-")
                print(f"  (files kept in {tmp})")
            machine(f"before {n} producers")
            r = one(n, args, pathlib.Path(tmp))
            results.append(r)
            drain = f"{r['drain_s']:.1f} s" if r["drain_s"] is not None else f"not drained in {args.drain_timeout:g} s"
            p99 = f"{r['live_p99_ms']:.0f}" if r["live_p99_ms"] is not None else "-"
            p50 = f"{r['live_p50_ms']:.0f}" if r["live_p50_ms"] is not None else "-"
            print(f"{n} producers ({r['points_per_message']} points a message, {r['messages']:,} messages, "
                  f"{r['offered']:,.0f} points/s offered): stored {r['stored']:,.0f} of {r['points']:,}; "
                  f"{r['stored_per_s_during']:,.0f} points/s stored during the stream; drain {drain}; "
                  f"live p50 {p50} ms p99 {p99} ms ({r['live_points']:,} points, {r['gaps']} gaps); "
                  f"RSS peak {r['rss_peak_mb']:.0f} MB; CPU {r['cpu_s']:.1f} s = "
                  f"{r['cpu_s_per_m_points']:.2f} s per M points, {r['cpu_us_per_message']:.0f} us per message; "
                  f"runs finished {r['finished']}/{n}; publishers late by {r['publisher_late_s']:.2f} s at most; "
                  f"load {r['load']:.2f}", flush=True)
            machine(f"after {n} producers")
    print("\n| producers | points/message | stored points/s (offered) | drain s | live p99 ms | RSS MB | "
          "CPU s per M points | CPU µs per message |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['producers']:,} | {r['points_per_message']} | {r['stored_per_s_during']:,.0f} "
              f"({r['offered']:,.0f}) | {r['drain_s'] if r['drain_s'] is None else round(r['drain_s'], 1)} | "
              f"{r['live_p99_ms'] if r['live_p99_ms'] is None else round(r['live_p99_ms'])} | "
              f"{r['rss_peak_mb']:.0f} | {r['cpu_s_per_m_points']:.2f} | {r['cpu_us_per_message']:.0f} |")


if __name__ == "__main__":
    main()
