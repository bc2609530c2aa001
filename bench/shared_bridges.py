"""Throughput with 1, 2 and 4 bridges splitting one stream on an MQTT 5 shared subscription.

    nice .venv/bin/python bench/shared_bridges.py [--bridges 1,2,4] [--trainers 4] [--points 2000000]
        [--store duckdb|influxdb]

``--trainers`` trainer processes (tests/paced_trainer.py, as fast as they can:
the rate asked is far above what one process logs) send ``--points`` points in
all through a real Mosquitto to N bridge processes sharing the subscription
group ``CURVESTREAM_MQTT_SHARED_GROUP``; each bridge writes its own DuckDB file
(``--store duckdb``) or all write one InfluxDB 1.6.7 (``--store influxdb``).
The clock runs from the trainers' start until every trainer's ``finish()``
has seen its last batch committed. Printed per N: points/s end to end, the
share of batches each bridge took, and the load average; everything shares
this machine's cores, so read the figure per core as well.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _page import prometheus
from _servers import BridgeProcess, Influxd, Mosquitto
from query_m4 import machine

TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests"
KEYS = 2


def one_round(tmpdir: pathlib.Path, n_bridges: int, trainers: int, points: int, store_kind: str) -> None:
    broker = Mosquitto(tmpdir / "mosquitto")
    broker.start()
    influx = None
    if store_kind == "influxdb":
        influx = Influxd(tmpdir / "influxd")
        influx.start(timeout=60)
    bridges = []
    try:
        for b in range(n_bridges):
            store = influx.store_url("shared") if influx else f"duckdb:///{tmpdir / f'store-{b}.duckdb'}"
            bridge = BridgeProcess(tmpdir / f"bridge-{b}", store, broker.url, mqtt_shared_group="bench",
                                   log_level="WARNING")
            bridge.start()
            bridges.append(bridge)
        per_trainer = points // trainers
        seconds = 5.0
        rate = per_trainer / seconds  # unreachable for one process: it logs as fast as it can
        t0 = time.monotonic()
        procs = []
        for t in range(trainers):
            settings = {"mqtt_url": broker.url, "bridge_url": "", "spool_dir": str(tmpdir / f"spool-{t}"),
                        "finish_timeout_ms": 900_000}
            procs.append(subprocess.Popen(
                [sys.executable, str(TESTS / "paced_trainer.py"), "bench", f"t{t}", "--rate", str(rate),
                 "--seconds", str(seconds), "--out", str(tmpdir / f"logged-{t}.json"),
                 "--settings", json.dumps(settings)], stdout=subprocess.DEVNULL))
        load_during = None
        while any(p.poll() is None for p in procs):
            time.sleep(1)
            if load_during is None and time.monotonic() - t0 > 10:
                load_during = os.getloadavg()[0]
        elapsed = time.monotonic() - t0
        codes = [p.returncode for p in procs]
        sent = per_trainer // KEYS * KEYS * trainers
        taken = [prometheus(b.url).get("curvestream_batches_ingested_total", 0) for b in bridges]
        share = " / ".join(f"{x / max(1, sum(taken)):.0%}" for x in taken)
        print(f"  {n_bridges} bridge(s): {sent / elapsed:>10,.0f} points/s end to end ({sent:,} points in "
              f"{elapsed:.1f} s; trainers exited {codes}); batches per bridge {share}; "
              f"load average {load_during or os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        for b in bridges:
            b.stop()
        if influx is not None:
            influx.stop()
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bridges", default="1,2,4")
    parser.add_argument("--trainers", type=int, default=4)
    parser.add_argument("--points", type=int, default=2_000_000)
    parser.add_argument("--store", choices=("duckdb", "influxdb"), default="duckdb")
    args = parser.parse_args()
    print(f"# reproduce: nice {sys.executable} bench/shared_bridges.py --bridges {args.bridges} "
          f"--trainers {args.trainers} --points {args.points} --store {args.store}")
    print(f"{args.trainers} trainer processes, {args.points:,} points, shared subscription, store {args.store}:")
    for n in [int(x) for x in args.bridges.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            one_round(pathlib.Path(tmp), n, args.trainers, args.points, args.store)
    machine("after the last round")


if __name__ == "__main__":
    main()
