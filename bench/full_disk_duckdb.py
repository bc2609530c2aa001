"""A disk that fills up under the bridge's DuckDB mid-run, then gets space back.

    sudo nice .venv/bin/python bench/full_disk_duckdb.py [--steps 1000000] [--full-s 30]

A real Mosquitto and a real bridge on loopback; the bridge's DuckDB file and
parked set on a tmpfs (mounting needs root) that is filled when the trainer
has logged a fifth of its steps, leaving the WAL room to reach its checkpoint
but not the checkpoint room (so DuckDB invalidates the database, as a disk
filling up mid-stream does), and freed ``--full-s`` seconds later. The
trainer's spool is on another disk. Prints the steps stored per key, the
store errors the bridge waited out, and how long the run took to be
committed after space returned. No restart, no ``curvestream sync``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from _servers import BridgeProcess, Mosquitto, wait_until
from disks import SmallDisk
from trainers import TrainerThread

KEYS = ("loss", "acc", "lr")


def metric(base: str, name: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
        return sum(float(line.split()[-1]) for line in resp.read().decode().splitlines()
                   if line.startswith((name + " ", name + "{")))


def counts(base: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{base}/api/v1/runs/bench/full%20disk/metrics", timeout=30) as resp:
        return {m["key"]: m["count"] for m in json.loads(resp.read())["metrics"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--full-s", type=float, default=30.0)
    parser.add_argument("--disk-mb", type=int, default=512)
    args = parser.parse_args()
    print(f"command: {' '.join(sys.argv)}  (load average {os.getloadavg()[0]:.2f})")
    with tempfile.TemporaryDirectory(prefix="cs-full-disk-") as tmp:
        work = pathlib.Path(tmp)
        disk = SmallDisk(work / "disk", args.disk_mb)
        disk.mount()
        broker = Mosquitto(work / "mosquitto")
        broker.start()
        bridge = BridgeProcess(work / "bridge", f"duckdb:///{disk.path / 'store.duckdb'}", broker.url,
                               parked_dir=str(disk.path / "parked"))
        bridge.start()
        try:
            trainer = TrainerThread(args.steps, lambda i: dict.fromkeys(KEYS, i * 0.5), project="bench",
                                    run="full disk", mqtt_url=broker.url, bridge_url="",
                                    spool_dir=str(work / "spool"), finish_timeout_ms=1_800_000)
            trainer.start()
            wait_until(lambda: trainer.logged >= args.steps // 5, 600, "a fifth of the steps")
            wal = disk.path / "store.duckdb.wal"
            disk.fill(leave_bytes=(17 << 20) - (wal.stat().st_size if wal.exists() else 0))
            full_at = time.monotonic()
            time.sleep(args.full_s)
            errors_while_full = metric(bridge.url, "curvestream_store_errors_total")
            disk.free()
            freed_at = time.monotonic()
            trainer.done(timeout=1800)
            committed_s = time.monotonic() - freed_at
            stored = counts(bridge.url)
            log = bridge.log_path.read_text()
            print(f"disk full for {freed_at - full_at:.0f} s; store errors waited out meanwhile: "
                  f"{errors_while_full:.0f}; database invalidated and reopened: {'invalidated' in log}")
            print("steps stored per key: " + ", ".join(f"{k} {stored.get(k, 0):,}" for k in KEYS)
                  + f" of {args.steps:,}")
            print(f"rejected {metric(bridge.url, 'curvestream_rejected_total'):.0f}, parked "
                  f"{metric(bridge.url, 'curvestream_batches_parked_total'):.0f}; run committed "
                  f"{committed_s:.0f} s after space returned (the trainer's finish() report complete: "
                  f"{trainer.report.complete})")
        finally:
            bridge.stop()
            broker.stop()
            disk.unmount()


if __name__ == "__main__":
    main()
