"""Import speed: ``curvestream import tensorboard`` of an event directory beside
TensorBoard's own loader told to keep every event.

    .venv/bin/python bench/import_tensorboard.py [--scalars 10000000] [--tags 10]

The directory holds one run of ``--scalars`` scalar events over ``--tags`` tags,
written as TensorBoard writes them (one record per event, both checksums).
Measured in one process on the same files:

- reading: the record reader and event decoder alone (no sending);
- import: the whole command, end to end through Mosquitto into a bridge on
  DuckDB, until the bridge has committed every batch;
- TensorBoard's ``EventAccumulator`` with keep-everything size guidance
  (its default keeps 10,000 scalars per tag), ``Reload()`` until done.
"""

from __future__ import annotations

import argparse
import os
import platform
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _servers import BridgeProcess, Mosquitto


def write_events(path: Path, scalars: int, tags: int) -> int:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from curvestream.tensorboard.records import masked_crc32c

    names = [f"metric/{k}" for k in range(tags)]
    t0 = 1.7e9
    with open(path, "wb") as fh:
        def record(data: bytes) -> None:
            head = struct.pack("<Q", len(data))
            fh.write(head + struct.pack("<I", masked_crc32c(head)) + data + struct.pack("<I", masked_crc32c(data)))

        record(event_pb2.Event(wall_time=t0, file_version="brain.Event:2").SerializeToString())
        for i in range(scalars):
            step, tag = divmod(i, tags)
            value = summary_pb2.Summary.Value(tag=names[tag], simple_value=1.0 / (step + 1))
            record(event_pb2.Event(wall_time=t0 + i * 1e-4, step=step,
                                   summary=summary_pb2.Summary(value=[value])).SerializeToString())
    return path.stat().st_size


def time_reading(path: Path) -> float:
    from curvestream.tensorboard.events import EventDecoder
    from curvestream.tensorboard.records import read_records

    decoder = EventDecoder()
    t0 = time.perf_counter()
    n = 0
    for _, payload in read_records(str(path)):
        for _ in decoder.items(decoder.parse(payload)):
            n += 1
    return time.perf_counter() - t0


def through_bridge(work: Path, run_import: Callable[[Any], dict]) -> tuple[dict, float, float, float]:
    """``run_import(settings)`` into a bridge on DuckDB behind Mosquitto, until committed: its report,
    wall seconds, this process's CPU seconds and the bridge's (from /proc)."""
    from curvestream.settings import Settings
    from ingest_e2e import cpu_seconds

    broker = Mosquitto(work / "mosquitto")
    broker.start()
    bridge = BridgeProcess(work / "bridge", f"duckdb:///{work / 'store.duckdb'}", broker.url)
    bridge.start()
    try:
        settings = Settings.from_env(mqtt_url=broker.url, bridge_url=bridge.url, spool_dir=str(work / "spool"))
        b0, c0, t0 = cpu_seconds(bridge.pid), time.process_time(), time.perf_counter()
        report = run_import(settings)
        return report, time.perf_counter() - t0, time.process_time() - c0, cpu_seconds(bridge.pid) - b0
    finally:
        bridge.stop()
        broker.stop()


def time_import(logdir: Path, work: Path) -> tuple[float, dict]:
    from curvestream.tensorboard.importer import import_tensorboard

    report, wall, _, _ = through_bridge(work, lambda s: import_tensorboard(logdir, s, project="bench", timeout_s=3600))
    return wall, report


def time_tensorboard(logdir: Path) -> float:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    keep = {"scalars": 0, "histograms": 0, "tensors": 0, "images": 0, "audio": 0, "compressedHistograms": 0}
    t0 = time.perf_counter()
    acc = EventAccumulator(str(logdir / "run"), size_guidance=keep)
    acc.Reload()
    sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scalars", type=int, default=10_000_000)
    parser.add_argument("--tags", type=int, default=10)
    args = parser.parse_args()
    n = args.scalars
    print(f"# TensorBoard import, {n:,} scalars over {args.tags} tags; Python {platform.python_version()} on "
          f"{platform.machine()}, load average {os.getloadavg()[0]:.2f}")
    print(f"# reproduce: {sys.executable} bench/import_tensorboard.py --scalars {n} --tags {args.tags}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "tb" / "run").mkdir(parents=True)
        size = write_events(work / "tb" / "run" / "events.out.tfevents.1700000000.bench", n, args.tags)
        print(f"event directory: {size / 1e6:.0f} MB")
        read = time_reading(work / "tb" / "run" / "events.out.tfevents.1700000000.bench")
        print(f"curvestream reader + decoder alone          {read:8.1f} s   {n / read:12,.0f} points/s")
        took, report = time_import(work / "tb", work)
        stored = sum(r["points"] for r in report["runs"])
        assert report["left_batches"] == 0, report
        print(f"curvestream import tensorboard (committed)  {took:8.1f} s   {n / took:12,.0f} points/s"
              f"   ({stored:,} points incl. run metadata)")
        tb = time_tensorboard(work / "tb")
        print(f"TensorBoard EventAccumulator, keep all      {tb:8.1f} s   {n / tb:12,.0f} points/s")


if __name__ == "__main__":
    main()
