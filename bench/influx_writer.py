"""The InfluxDB store's writer alone: CPU per point of ``InfluxStore.write`` and of influxd.

    nice .venv/bin/python bench/influx_writer.py --shape 1x8 --points 2M
    nice .venv/bin/python bench/influx_writer.py --shape 200x2 --points 2M --round-points 25000
    nice .venv/bin/python bench/influx_writer.py --shape 1x8 --points 1M --profile /tmp/iw.prof

A real influxd (1.6.7) on loopback; the store's ``write()`` in this process,
given rounds as the ingest pipeline hands them (one write per round, all series
of the round in it). ``--shape PxK``: P producers (each its own run) with K keys;
a round holds one batch of every producer, ``--round-points`` points in all
(each producer's batch its share: ``round_points / P / K`` steps of each key).
Each point is 0.1 ms after the previous step of its run per producer (a
trainer at full speed), values a noisy decaying curve.

Three writers of the same points, each into a database of its own, one after
the other: the store with rollups (its default), the store with ``rollups=off``,
and a bare line-protocol writer (the lines of ``cs_scalar`` only, 5,000 a request,
gzip level 1, 2 requests in flight, made in this process: the ceiling of
InfluxDB's ingest on this machine). Printed for each: points/s (wall), and CPU
seconds per million points of this process (all its threads: the writer's
requests are sent by a pool) and of influxd, from /proc (influxd's until its
CPU stops moving after the last write: it compacts what it was sent); then the
store's share of the bare writer, in points/s and in CPU per point. Never
asserts a figure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import cProfile
import gzip
import os
import pathlib
import pstats
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _servers import Influxd
from curvestream_bridge.batch import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store
from query_m4 import count, machine

TICK = os.sysconf("SC_CLK_TCK")
T0 = 1_800_000_000_000_000_000
STEP_NS = 100_000


def cpu_s(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rounds(producers: int, keys: int, points: int, round_points: int, seed: int = 1) -> Iterator[list[DecodedBatch]]:
    """The rounds of the fleet, made up front by the caller (not timed)."""
    rng = np.random.default_rng(seed)
    steps_per_batch = max(1, round_points // producers // keys)
    total_steps = max(1, points // producers // keys)
    for r, a in enumerate(range(0, total_steps, steps_per_batch)):
        steps = np.arange(a, min(total_steps, a + steps_per_batch), dtype=np.int64)
        out = []
        for p in range(producers):
            cols = []
            for k in range(keys):
                walls = T0 + steps * STEP_NS + p * 7 + k
                values = np.exp(-steps / max(total_steps / 3, 1)) + 0.05 * rng.standard_normal(len(steps)) + k
                cols.append(ScalarColumn(f"metric/{k}", steps, walls, values))
            out.append(DecodedBatch(p.to_bytes(4, "big") + b"bench", r + 1, "bench", f"r{p}", cols, [], [], None,
                                    None, 0))
        yield out


def settle(pid: int, quiet_s: float = 1.0, limit_s: float = 120.0) -> None:
    """Wait until influxd's CPU time stops moving for ``quiet_s`` (it compacts after writes)."""
    end = time.monotonic() + limit_s
    last = cpu_s(pid)
    while time.monotonic() < end:
        time.sleep(quiet_s)
        now = cpu_s(pid)
        if now - last < 0.02 * quiet_s:
            return
        last = now


def lines_of(batches: list[DecodedBatch]) -> list[str]:
    out = []
    for b in batches:
        for c in b.scalars:
            prefix = f"cs_scalar,metric={c.key},project={b.project},run={b.run} step="
            out.extend(f"{prefix}{s}i,value={v!r} {t}" for s, v, t in zip(c.steps.tolist(), c.values.tolist(),
                                                                          c.wall_ns.tolist()))
    return out


def bare(base_url: str, db: str, all_rounds: list[list[DecodedBatch]]) -> None:
    httpx.post(f"{base_url}/query", params={"q": f'CREATE DATABASE "{db}"'})
    client = httpx.Client(base_url=base_url, timeout=60)

    def send(lines: list[str]) -> None:
        body = gzip.compress("\n".join(lines).encode(), compresslevel=1)
        client.post("/write", params={"db": db, "precision": "ns"}, content=body,
                    headers={"Content-Encoding": "gzip"}).raise_for_status()

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = []
        pending: list[str] = []
        for items in all_rounds:
            pending.extend(lines_of(items))
            while len(pending) >= 5000:
                futures.append(pool.submit(send, pending[:5000]))
                del pending[:5000]
        if pending:
            futures.append(pool.submit(send, pending))
        for f in futures:
            f.result()
    client.close()


def measure(name: str, influx: Influxd, points: int, fn, profile: str = "") -> dict:
    settle(influx.pid)
    c0, i0, t0 = time.process_time(), cpu_s(influx.pid), time.perf_counter()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    fn()
    if prof:
        prof.disable()
        prof.dump_stats(profile)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    wall = time.perf_counter() - t0
    mine = time.process_time() - c0
    settle(influx.pid)
    theirs = cpu_s(influx.pid) - i0
    r = {"name": name, "rate": points / wall, "mine": mine / points * 1e6, "influxd": theirs / points * 1e6}
    print(f"  {name:<22} {r['rate']:>10,.0f} points/s   CPU s per 1M points: writer {r['mine']:.2f}, "
          f"influxd {r['influxd']:.2f} (load {os.getloadavg()[0]:.1f})", flush=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1x8", help="PRODUCERSxKEYS")
    ap.add_argument("--points", default="2M")
    ap.add_argument("--round-points", type=int, default=40_000, help="points in one write (round)")
    ap.add_argument("--writers", default="rollups,off,bare", help="which of rollups, off, bare, in order")
    ap.add_argument("--profile", default="", help="cProfile the rollups writer into this file")
    ap.add_argument("--params", default="", help="extra store URL parameters for the store writers")
    args = ap.parse_args()
    producers, keys = (int(x) for x in args.shape.lower().split("x"))
    points = count(args.points)
    print(f"# reproduce: nice {sys.executable} bench/influx_writer.py " + " ".join(sys.argv[1:]))
    all_rounds = list(rounds(producers, keys, points, args.round_points))
    points = sum(b.points for r in all_rounds for b in r)
    print(f"{points:,} points: {producers} producers x {keys} keys, {len(all_rounds)} writes of "
          f"{points // len(all_rounds):,} points ({len(all_rounds[0])} batches each)")
    machine("before")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        influx = Influxd(pathlib.Path(tmp) / "influxd")
        influx.start(timeout=60)
        try:
            for which in args.writers.split(","):
                if which == "bare":
                    results.append(measure("bare line protocol", influx, points,
                                           lambda: bare(influx.url, "bare", all_rounds)))
                    continue
                extra = "&".join(p for p in (args.params, "rollups=off" if which == "off" else "") if p)
                store = open_store(influx.store_url(f"w_{which}") + (f"?{extra}" if extra else ""))

                def write_all(store=store) -> None:
                    for items in all_rounds:
                        store.write(items)

                try:
                    results.append(measure(f"store, {'rollups' if which == 'rollups' else 'rollups=off'}", influx,
                                           points, write_all, args.profile if which == "rollups" else ""))
                finally:
                    store.close()
        finally:
            influx.stop()
    machine("after")
    by = {r["name"]: r for r in results}
    if "bare line protocol" in by and "store, rollups" in by:
        store, bare_ = by["store, rollups"], by["bare line protocol"]
        cpu_share = (bare_["mine"] + bare_["influxd"]) / (store["mine"] + store["influxd"])
        print(f"store with rollups: {store['rate'] / bare_['rate']:.0%} of the bare writer's points/s; the bare "
              f"writer's CPU per point (writer + influxd) is {cpu_share:.0%} of the store's")


if __name__ == "__main__":
    main()
