"""``curvestream import tensorboard DIR``: every event file under DIR becomes a
run, with every point (no reservoir sampling), its original step and wall time.

Runs are named by the event file's directory relative to DIR (DIR's own name
for files directly in it; ``<dir>/<file name>`` when one directory holds
several files); the project is ``--project`` or DIR's name.

Re-importing is harmless and an interrupted import can simply be run again:
a file's producer id is derived from the file (its name, its first record, the
project and run it goes to) and its batches are cut at fixed points, so every
batch has the same (producer, seq) each time and the bridge stores it once.
Batches go through the spool and the uploader like a live run's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from curvestream_wire.v1 import run_pb2

from curvestream import __version__
from curvestream.encode import BatchBuilder
from curvestream.http_fallback import BridgeHttp
from curvestream.mqtt import MqttLink
from curvestream.settings import Settings
from curvestream.spool import Spool, SpoolLocked
from curvestream.tensorboard.events import EventDecoder, Histogram, Scalar, Text
from curvestream.tensorboard.records import read_records
from curvestream.uploader import Uploader
from curvestream.values import HistogramItem, TextItem

__all__ = ["import_tensorboard", "find_event_files", "EventFile"]

BATCH_POINTS = 10_000  # fixed, never from settings: the same file must always give the same batches
MAX_PENDING_BATCHES = 64  # spooled and not yet committed, before reading on
_TAG = "tensorboard-import"


@dataclasses.dataclass
class EventFile:
    path: Path
    project: str
    run: str

    @property
    def producer_id(self) -> bytes:
        with open(self.path, "rb") as fh:
            first = fh.read(4096)
        ident = "\0".join([_TAG, self.project, self.run, self.path.name]).encode() + b"\0" + first
        return hashlib.sha256(ident).digest()[:16]


def find_event_files(directory: str | Path, project: str | None = None) -> list[EventFile]:
    root = Path(directory).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"curvestream import: {directory} is not a directory")
    project = project or root.name
    by_dir: dict[Path, list[Path]] = {}
    for path in sorted(root.rglob("*tfevents*")):
        if path.is_file() and not path.name.endswith((".tmp", ".lock")):
            by_dir.setdefault(path.parent, []).append(path)
    files = []
    for folder, paths in sorted(by_dir.items()):
        rel = folder.relative_to(root).as_posix()
        base = root.name if rel == "." else rel
        for path in paths:
            files.append(EventFile(path, project, base if len(paths) == 1 else f"{base}/{path.name}"))
    return files


class _Counter:
    def __init__(self) -> None:
        self.seq = 0

    def __call__(self) -> int:
        self.seq += 1
        return self.seq


def _batches(source: EventFile, producer_id: bytes) -> Iterator[tuple[int, bytes, int, int]]:
    """``(seq, payload, points, bytes read)`` for every batch of one file, always the same."""
    decoder = EventDecoder()
    last_wall = [0]
    builder = BatchBuilder(producer_id, source.project, source.run, _Counter(), lambda: last_wall[0])
    meta = run_pb2.RunMeta(version=1, project=source.project, run=source.run, config_json="{}", tags=[_TAG],
                           producer_id=producer_id, client_version=__version__)
    offset = 0
    for offset, payload in read_records(str(source.path)):
        event = decoder.parse(payload)
        wall_ns = round(event.wall_time * 1e9)  # as seconds_to_ns, inline: this loop runs per event
        if not meta.started_ns and wall_ns:
            meta.started_ns = wall_ns
            builder.add(meta)
        last_wall[0] = max(last_wall[0], wall_ns)
        step = event.step
        for item in decoder.items(event):
            if type(item) is Scalar:
                builder.add_scalars(step, wall_ns, {item.key: item.value})
            elif type(item) is Histogram:
                builder.add(HistogramItem(item.key, step, wall_ns, item.buckets, 0))
            elif type(item) is Text:
                builder.add(TextItem(item.key, step, wall_ns, item.text, 0))
        if builder.points >= BATCH_POINTS:
            yield (*builder.seal(), offset)
    final = run_pb2.RunMeta()
    final.CopyFrom(meta)
    final.config_json = _config_json(decoder.hparams)
    builder.add(final)
    builder.add(run_pb2.RunStatus(version=1, project=source.project, run=source.run,
                                  state=run_pb2.RUN_STATE_FINISHED, reason="imported from TensorBoard",
                                  updated_ns=last_wall[0] + 1, producer_id=producer_id))
    yield (*builder.seal(), os.path.getsize(source.path))


def _config_json(hparams: dict[str, Any]) -> str:
    import json

    return json.dumps(hparams, ensure_ascii=False, sort_keys=True)


def _fresh_spool(settings: Settings, producer_id: bytes, project: str, run: str) -> Spool:
    """This file's spool, emptied of what an interrupted import left (it is made again, batch for batch)."""
    leftover = settings.spool_path / producer_id.hex()
    if leftover.is_dir():
        try:
            old = Spool.adopt(leftover)
        except SpoolLocked:
            raise RuntimeError(f"curvestream import: another import of {project}/{run} is running") from None
        for seg in old.segments:
            seg.path.unlink(missing_ok=True)
        old.release()
    return Spool.create(settings.spool_path, producer_id, project, run)


def import_tensorboard(directory: str | Path, settings: Settings, project: str | None = None,
                       timeout_s: float = 600.0,
                       progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Import every event file under ``directory``; ``progress(done_bytes, total_bytes)``."""
    files = find_event_files(directory, project)
    total = sum(f.path.stat().st_size for f in files)
    report: dict[str, Any] = {"directory": str(directory), "runs": [], "left_batches": 0}
    if not files:
        return report
    http = BridgeHttp(settings.bridge_url, settings.write_token) if settings.bridge_url else None
    uploader: Uploader
    link = MqttLink(settings, f"cs-import-{os.getpid()}-{os.urandom(3).hex()}",
                    on_commit=lambda c: uploader.on_commit(c))
    uploader = Uploader(settings, link, http)
    link.start()
    uploader.start()
    spools: list[Spool] = []
    done_before = 0
    try:
        for source in files:
            producer_id = source.producer_id
            spool = _fresh_spool(settings, producer_id, source.project, source.run)
            spools.append(spool)
            uploader.track(spool)
            points = batches = 0
            for seq, payload, n, read in _batches(source, producer_id):
                _wait_for_room(uploader)
                spool.append(seq, payload, time.monotonic())
                spool.rotate_if_due(time.monotonic(), settings.segment_max_bytes,
                                    settings.segment_max_age_ms / 1000)
                uploader.wake()
                points += n
                batches += 1
                if progress is not None:
                    progress(done_before + read, total)
            spool.close_for_writing()
            uploader.wake()
            done_before += source.path.stat().st_size
            report["runs"].append({"file": str(source.path), "project": source.project, "run": source.run,
                                   "producer": producer_id.hex(), "points": points, "batches": batches})
        uploader.wait_committed([s.producer_id for s in spools], time.monotonic() + timeout_s)
    finally:
        uploader.stop()
        link.stop()
        for spool in spools:
            spool.drop_committed(uploader._tracked[spool.producer_id].committed.covers)
            left = sum(s.records for s in spool.segments)
            report["left_batches"] += left
            spool.release()
    return report


def _wait_for_room(uploader: Uploader) -> None:
    while uploader.outstanding_batches() >= MAX_PENDING_BATCHES:
        uploader.wake()
        with uploader.progress:
            uploader.progress.wait(0.2)
