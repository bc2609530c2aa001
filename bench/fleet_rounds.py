"""The bridge's ingest rounds at fleet shape, in process: no broker, no HTTP.

    nice .venv/bin/python bench/fleet_rounds.py --producers 1000 --rounds 12 --warm 6 --batches-per-round 8
    nice .venv/bin/python bench/fleet_rounds.py --producers 1000 --rounds 12 --warm 6 --profile /tmp/rounds.prof

A ``Bridge`` (DuckDB in a temporary folder, default alert rules, no MQTT) is
given the batches ``fleet_publisher.py`` would publish (2 keys, 200 k points/s
in all, 200 ms batches): each round, ``--batches-per-round`` batches of every
producer go through ``Ingest.submit`` (decode, clock, live push) and one
``Ingest.process`` (dedupe, store write, alerts, settle), as the round thread
and the writer do under a backlog. The first ``--warm`` rounds (runs and
series created, detectors filling their windows) are not counted; the
synthetic loss stops improving, so every run's plateau alert fires in the
counted rounds (a fleet event: a sweep's runs reach their patience together).
Printed: CPU seconds (this process, all threads, from ``time.process_time``)
per million points and per message. ``--profile``: a cProfile of the counted
rounds by CPU time. What ``fleet.py`` adds on top is paho's MQTT receive, the
HTTP side and the WebSocket. The bridge's log lines (one per alert) are
written to /dev/null.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pathlib
import pstats
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from curvestream_bridge.ingest import Kind, Message  # noqa: E402
from curvestream_bridge.service import Bridge  # noqa: E402
from curvestream_bridge.settings import BridgeSettings  # noqa: E402
from fleet_publisher import encode_batches  # noqa: E402
from query_m4 import machine  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--producers", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200_000, help="points/s, all producers together")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--warm", type=int, default=6, help="rounds not counted")
    parser.add_argument("--batches-per-round", type=int, default=8)
    parser.add_argument("--profile", default="", help="write a cProfile (CPU time) of the counted rounds here")
    args = parser.parse_args()
    n, per = args.producers, args.batches_per_round
    steps = max(1, round(args.rate / 2 / n * 0.2))
    t0 = time.time_ns() - 3600 * 10**9
    batches = [encode_batches("fleet", i, 2, steps, args.rounds * per, 200_000_000, t0) for i in range(n)]
    logging.basicConfig(level=logging.WARNING, stream=open(os.devnull, "w"))  # the alert log lines: to nowhere
    machine("before")
    with tempfile.TemporaryDirectory() as tmp:
        bridge = Bridge(BridgeSettings(store=f"duckdb:///{tmp}/fleet.duckdb", mqtt_url="", http_addr="127.0.0.1:0"))
        if bridge.alerts is not None:
            bridge.alerts.start()
            bridge.alerts.wait_ready(30)
        ingest = bridge.ingest

        def one_round(k: int) -> None:
            for j in range(k * per, (k + 1) * per):
                for i in range(n):
                    ingest.submit(Message(Kind.POINTS, batches[i][j], "mqtt", ("fleet", f"f{i}"), ack=lambda: None))
            ingest.process(ingest.receiver.take(1 << 30, 1 << 40))

        for k in range(args.warm):
            one_round(k)
        profile = cProfile.Profile(time.process_time) if args.profile else None
        cpu0 = time.process_time()
        if profile is not None:
            profile.enable()
        for k in range(args.warm, args.rounds):
            one_round(k)
        if profile is not None:
            profile.disable()
        cpu = time.process_time() - cpu0
        bridge.stop()
    messages = (args.rounds - args.warm) * n * per
    points = messages * steps * 2
    print(f"{n} producers, {per} batches of {steps * 2} points each per round: {messages:,} messages counted; "
          f"{cpu / points * 1e6:.2f} CPU s per M points, {cpu / messages * 1e6:.0f} us per message; "
          f"load {os.getloadavg()[0]:.2f}" + (" (profiled)" if profile is not None else ""))
    if profile is not None:
        profile.dump_stats(args.profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    machine("after")


if __name__ == "__main__":
    main()
