"""What alerts cost: embedded ingest with the default rules on vs. off, and
how soon a webhook receiver hears of a NaN.

    .venv/bin/python bench/alerts.py [--points 3000000] [--rounds 2] [--events 40]

1. amqtt + bridge + DuckDB (what `curvestream up` runs), one trainer logging
   8 keys (two of them `*loss*`, so the default plateau rule watches them),
   end to end (first log() until every batch is committed), alternating
   CURVESTREAM_ALERTS=1 and 0 runs; the median of each.
2. The engine alone, in this process: CPU seconds to evaluate the default rules
   over the same 8 keys in batches of 1,000 and 8,000 points per key (no
   servers, so the least noisy of the figures on a shared machine).
3. Mosquitto + bridge + DuckDB with a webhook to a local receiver; the
   trainer logs a NaN every 0.25 s among finite points; the latency is from
   the NaN's log() (its wall time, the alert's startsAt) to the receiver's
   arrival, so it includes the client's batching and the store write: an upper
   bound on "from stored to delivered".
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _servers import Amqtt, BridgeProcess, Mosquitto, free_port, wait_until
from ingest_e2e import committed_rate

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import curvestream
from webhook_receiver import WebhookReceiver

KEYS = ["train/loss", "val/loss", "acc", "lr", "grad_norm", "epoch", "throughput", "gpu_mem"]


def ingest_rate(mqtt_url: str, spool: pathlib.Path, points: int) -> float:
    run = curvestream.init(project="bench", id=f"alerts {time.time_ns()}", mqtt_url=mqtt_url, bridge_url="",
                           spool_dir=str(spool), spool_max_bytes=32 * 1024**3, finish_timeout_ms=900_000,
                           mqtt_protocol="3.1.1")
    wait_until(lambda: run.link.connected, 30, "the trainer's MQTT connection")
    t0 = time.perf_counter()
    for i in range(points // len(KEYS)):
        run.log({k: 1.0 / (i + 1) + j for j, k in enumerate(KEYS)}, step=i)
    return committed_rate(run, t0, points // len(KEYS) * len(KEYS))


def overhead(tmpdir: pathlib.Path, points: int, rounds: int) -> None:
    broker = Amqtt(tmpdir / "amqtt")
    broker.start()
    rates: dict[str, list[float]] = {"1": [], "0": []}
    try:
        for r in range(rounds):
            for alerts in ("1", "0"):
                name = f"bridge-{alerts}-{r}"
                bridge = BridgeProcess(tmpdir / name, f"duckdb:///{tmpdir / name / 'store.duckdb'}", broker.url,
                                       mqtt_protocol="3.1.1", alerts=alerts, mqtt_client_id=name)
                bridge.start()
                try:
                    rates[alerts].append(ingest_rate(broker.url, tmpdir / f"spool-{name}", points))
                finally:
                    bridge.stop()
                print(f"  alerts {'on ' if alerts == '1' else 'off'} round {r + 1}: {rates[alerts][-1]:>12,.0f} "
                      "points/s", flush=True)
    finally:
        broker.stop()
    on, off = statistics.median(rates["1"]), statistics.median(rates["0"])
    print(f"embedded ingest, default rules on:  {on:>12,.0f} points/s (median of {rounds})")
    print(f"embedded ingest, alerts off:        {off:>12,.0f} points/s (median of {rounds})")
    print(f"  with alerts: {100 * (on / off - 1):+.1f} % (goal: no more than 10 % slower)")


def engine_cpu(points: int) -> None:
    import numpy as np

    from curvestream_bridge.alerts.engine import AlertEngine
    from curvestream_bridge.alerts.rules import default_rules
    from curvestream_bridge.decode import DecodedBatch, ScalarColumn

    for per_key in (1000, 8000):
        engine = AlertEngine(default_rules())
        batches = []
        for b in range(max(1, points // (per_key * len(KEYS)))):
            st = np.arange(b * per_key, (b + 1) * per_key, dtype=np.int64)
            batches.append(DecodedBatch(b"bench", b + 1, "bench", "engine", [
                ScalarColumn(k, st, st * 1000, 1.0 / (st + 1) + j) for j, k in enumerate(KEYS)], [], [], None, None, 0))
        t0 = time.process_time()
        for batch in batches:
            engine.evaluate([batch])
        cpu = time.process_time() - t0
        total = len(batches) * per_key * len(KEYS)
        print(f"engine alone, {per_key:>5,} points per key per batch: {total / cpu:>12,.0f} points per CPU second")


def webhook_latency(tmpdir: pathlib.Path, events: int) -> None:
    mosq = Mosquitto(tmpdir / "mosquitto")
    mosq.start()
    hook = WebhookReceiver(free_port()).start()
    arrivals: dict[str, float] = {}
    original = hook.bodies

    class Stamped(list):
        def append(self, body: dict) -> None:  # the receiver's thread, as each body arrives
            arrivals[body["alerts"][0]["startsAt"] + body["alerts"][0]["status"]] = time.time()
            super().append(body)

    hook.bodies = Stamped(original)
    bridge = BridgeProcess(tmpdir / "bridge-hook", f"duckdb:///{tmpdir / 'hook.duckdb'}", mosq.url,
                           alert_webhook_url=hook.url)
    bridge.start()
    try:
        with curvestream.init(project="bench", id="webhook latency", mqtt_url=mosq.url, bridge_url=bridge.url,
                              spool_dir=str(tmpdir / "spool-hook"), flush_interval_ms=50) as run:
            step = 0
            for _ in range(events):
                for _ in range(50):
                    run.log({"train/loss": 1.0}, step=step)
                    step += 1
                run.log({"train/loss": float("nan")}, step=step)
                step += 1
                time.sleep(0.25)
            run.log({"train/loss": 1.0}, step=step)
        wait_until(lambda: sum(a["status"] == "firing" for a in hook.alerts(alertname="nonfinite")) >= events, 60,
                   "every alert")
    finally:
        bridge.stop()
        hook.stop()
        mosq.stop()
    latencies = []
    for key, arrived in arrivals.items():
        if key.endswith("firing"):
            starts = datetime.datetime.fromisoformat(key[: -len("firing")].replace("Z", "+00:00")).timestamp()
            latencies.append(arrived - starts)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    print(f"webhook latency, NaN log() -> receiver: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
          f"max {latencies[-1] * 1000:.0f} ms over {len(latencies)} alerts (goal: p95 <= 1 s from stored)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--events", type=int, default=40)
    args = parser.parse_args()
    print(f"# reproduce: {sys.executable} bench/alerts.py --points {args.points} --rounds {args.rounds} "
          f"--events {args.events}")
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        overhead(pathlib.Path(tmp), args.points, args.rounds)
        engine_cpu(args.points)
        webhook_latency(pathlib.Path(tmp), args.events)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
