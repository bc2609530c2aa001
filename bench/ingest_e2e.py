"""End-to-end ingest: trainer -> broker -> bridge -> store, in points/s.

    .venv/bin/python bench/ingest_e2e.py [--points 10000000] [--influx-points 3000000] [--repeat 5]
    .venv/bin/python bench/ingest_e2e.py --skip-influx --points 4000000 --repeat 1 --py-spy /tmp/prof

1. embedded: amqtt + bridge + DuckDB (what `curvestream up` runs);
2. Mosquitto + bridge + InfluxDB 1.x, beside InfluxDB's own ceiling measured in
   the same run by a bare writer (gzip'd line protocol, 5,000-line requests,
   the same points) — the bridge's figure as a share of that ceiling.

The clock starts at the first log() and stops when the bridge has committed
every batch (the trainer's spool is empty). Servers are real, on loopback.
The embedded figure is the median of ``--repeat`` runs (each a new run into the
same broker and bridge); the load average is printed beside it. ``--py-spy DIR``
samples the trainer (this process), the broker and the bridge during the last
run and prints where each spends its time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import os
import pathlib
import statistics
import sys
import tempfile
import time

import httpx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import curvestream
from _pyspy import Sampler
from _servers import Amqtt, BridgeProcess, Influxd, Mosquitto, wait_until

KEYS = 8


def stream(mqtt_url: str, spool: pathlib.Path, points: int, **settings: object) -> float:
    values = {f"metric/{k}": 0.25 * k for k in range(KEYS)}
    run = curvestream.init(project="bench", id=f"ingest {time.time_ns()}", mqtt_url=mqtt_url, bridge_url="",
                           spool_dir=str(spool), spool_max_bytes=32 * 1024**3, finish_timeout_ms=900_000,
                           **settings)
    wait_until(lambda: run.link.connected, 30, "the trainer's MQTT connection")
    t0 = time.perf_counter()
    for i in range(points // KEYS):
        run.log(values, step=i)
    return committed_rate(run, t0, points // KEYS * KEYS)


def committed_rate(run: curvestream.Run, t0: float, points: int) -> float:
    """Points per second from ``t0`` until the bridge has committed every batch of the run; finishes it."""
    run.recorder.wake()
    while run._queue:
        time.sleep(0.001)
    run.uploader.wait_committed([run.producer_id], time.monotonic() + 900)
    elapsed = time.perf_counter() - t0
    report = run.finish()
    assert report.complete, report
    return points / elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def store_writes(bridge: BridgeProcess) -> float:
    """How many store writes (rounds) the bridge has made so far, from its /metrics."""
    text = httpx.get(f"{bridge.url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("curvestream_store_write_seconds_count"))


def bare_influx_ceiling(base_url: str, points: int, workers: int = 2) -> float:
    """Line protocol straight to /write: gzip, 5,000 lines a request, `workers` requests in flight."""
    httpx.post(f"{base_url}/query", params={"q": "CREATE DATABASE bare"})
    prefix = [f"cs_scalar,metric=metric/{k},project=bench,run=bare step=" for k in range(KEYS)]
    t_base = 1_800_000_000_000_000_000

    def body(chunk: int) -> bytes:
        lines = []
        start = chunk * 5000
        for j in range(start, min(start + 5000, points)):
            step, k = divmod(j, KEYS)
            lines.append(f"{prefix[k]}{step}i,value={0.25 * k!r} {t_base + step * 1000}")
        return gzip.compress("\n".join(lines).encode(), compresslevel=1)

    client = httpx.Client(base_url=base_url, timeout=60)

    def send(chunk: int) -> None:
        resp = client.post("/write", params={"db": "bare", "precision": "ns"}, content=body(chunk),
                           headers={"Content-Encoding": "gzip"})
        resp.raise_for_status()

    chunks = range((points + 4999) // 5000)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(send, chunks))
    elapsed = time.perf_counter() - t0
    client.close()
    return points / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--influx-points", type=int, default=3_000_000)
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--skip-influx", action="store_true")
    parser.add_argument("--influx-params", default="", help="store URL parameters, e.g. rollups=off")
    parser.add_argument("--bridge", action="append", default=[], metavar="SETTING=VALUE",
                        help="a bridge setting for the embedded run, e.g. write_max_points=1000000")
    parser.add_argument("--repeat", type=int, default=5, help="embedded runs; the median is reported")
    parser.add_argument("--py-spy", default="", help="directory: sample the processes during the last embedded run")
    args = parser.parse_args()
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    try:
        run(args)
    finally:
        print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def run(args: argparse.Namespace) -> None:
    print(f"# reproduce: nice {sys.executable} bench/ingest_e2e.py " + " ".join(sys.argv[1:]))
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        if not args.skip_embedded:
            broker = Amqtt(tmpdir / "amqtt")
            broker.start()
            bridge = BridgeProcess(tmpdir / "bridge-duckdb", f"duckdb:///{tmpdir / 'store.duckdb'}", broker.url,
                                   mqtt_protocol="3.1.1", **dict(kv.split("=", 1) for kv in args.bridge))
            bridge.start()
            try:
                rates = []
                pids = {"trainer": os.getpid(), "amqtt": broker.pid, "bridge": bridge.pid}
                cpu: dict[str, list[float]] = {name: [] for name in pids}
                for i in range(args.repeat):
                    load = os.getloadavg()[0]
                    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                    writes_before = store_writes(bridge)
                    if args.py_spy and i == args.repeat - 1:
                        with Sampler(pathlib.Path(args.py_spy), pids) as sampler:
                            rates.append(stream(broker.url, tmpdir / f"spool1-{i}", args.points, mqtt_protocol="3.1.1"))
                        print(sampler.report(("Ingest.", "Store.", "Writer.", "batch_partials", "merge", "decode",
                                              "Spool.", "Recorder.", "Uploader.", "Run.log", "Broker.", "Handler.",
                                              "Client._loop", "on_round", "Live")))
                    else:
                        rates.append(stream(broker.url, tmpdir / f"spool1-{i}", args.points, mqtt_protocol="3.1.1"))
                    for name, pid in pids.items():
                        cpu[name].append((cpu_seconds(pid) - cpu_before[name]) / args.points * 1e6)
                    writes = store_writes(bridge) - writes_before
                    print(f"  run {i + 1}: {rates[-1]:>12,.0f} points/s (load average {load:.1f} at its start); "
                          "CPU s per 1M points: " + ", ".join(f"{n} {c[-1]:.2f}" for n, c in cpu.items())
                          + f"; {writes:.0f} store writes of {args.points / max(writes, 1):,.0f} points on average",
                          flush=True)
                print(f"embedded (amqtt + DuckDB):   {statistics.median(rates):>12,.0f} points/s end to end, median "
                      f"of {len(rates)} ({args.points:,} points each; load average now {os.getloadavg()[0]:.1f})")
                medians = {n: statistics.median(c) for n, c in cpu.items()}
                print("CPU seconds per 1M points, medians (steadier than points/s on a shared machine): "
                      + ", ".join(f"{n} {c:.2f}" for n, c in medians.items())
                      + f"; all three {sum(medians.values()):.2f} -> at most {2e6 / sum(medians.values()):,.0f} "
                      "points/s on 2 idle cores")
            finally:
                bridge.stop()
                broker.stop()
        if not args.skip_influx:
            mosq = Mosquitto(tmpdir / "mosquitto")
            mosq.start()
            influx = Influxd(tmpdir / "influxd")
            influx.start(timeout=60)
            store = influx.store_url("bench") + (f"?{args.influx_params}" if args.influx_params else "")
            bridge = BridgeProcess(tmpdir / "bridge-influx", store, mosq.url)
            bridge.start()
            try:
                ceiling = bare_influx_ceiling(influx.url, args.influx_points)
                print(f"InfluxDB bare writer:        {ceiling:>12,.0f} points/s (gzip line protocol, 5,000-line "
                      "requests, 2 in flight)")
                rate = stream(mosq.url, tmpdir / "spool2", args.influx_points)
                print(f"Mosquitto + InfluxDB{' (' + args.influx_params + ')' if args.influx_params else ''}: "
                      f"{rate:>12,.0f} points/s end to end = {rate / ceiling:.0%} of the bare writer")
            finally:
                bridge.stop()
                influx.stop()
                mosq.stop()


if __name__ == "__main__":
    main()
