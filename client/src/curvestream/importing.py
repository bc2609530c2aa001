"""What every ``curvestream import …`` shares: runs made of fixed batches, sent
through the spool and the uploader like a live run's, each stored once.

An importer (TensorBoard, W&B, MLflow) describes each run it found as an
:class:`ImportRun`: where it comes from, its project and run, a producer id
derived from the source alone, and its batches, which :class:`ImportBatches`
makes the same way every time (seqs from 1, cut every ``BATCH_POINTS``
points, the run's metadata first and its final metadata and status in the
last). Running the same import again makes the same (producer, seq) pairs,
which the bridge stores once; so an interrupted import is simply run again.

Before sending a run, :func:`import_runs` asks the bridge which of its batches
it holds (``GET /api/v1/producers/{id}/batches``) and sends only the others:
a second import sends nothing and says "nothing new". When the bridge cannot
be asked (no bridge URL, an older bridge), everything is sent and the bridge
still stores each batch once. A run's source should be complete: a run that
grew after an import ends in a batch already stored, so its new points are
not added by importing again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from curvestream_wire.seqset import SeqSet

from curvestream.delivery import Delivery
from curvestream.encode import BatchBuilder
from curvestream.http_fallback import BridgeHttp, Retryable
from curvestream.settings import Settings
from curvestream.spool import Spool, SpoolLocked
from curvestream.uploader import Uploader

__all__ = ["ImportRun", "ImportBatches", "import_runs", "producer_id_of", "stored_batches", "BATCH_POINTS"]

BATCH_POINTS = 10_000  # fixed, never from settings: the same source must always give the same batches
MAX_PENDING_BATCHES = 64  # spooled and not yet committed, before reading on

Batches = Iterator[tuple[int, bytes, int, int]]
"""``(seq, payload, points, bytes of the source read so far)`` for each batch."""


@dataclasses.dataclass
class ImportRun:
    source: str  # what the report names: a file or directory
    project: str
    run: str
    producer_id: bytes
    size: int  # bytes of the source, for the progress bar
    batches: Callable[[], Batches]


def producer_id_of(kind: str, *parts: str | bytes) -> bytes:
    """A producer id that depends on ``kind`` and ``parts`` only (16 bytes of SHA-256)."""
    digest = hashlib.sha256(kind.encode())
    for part in parts:
        digest.update(b"\0" + (part if isinstance(part, bytes) else part.encode()))
    return digest.digest()[:16]


class ImportBatches(BatchBuilder):
    """A batch builder whose seqs count from 1 and whose seal time is the newest
    wall time added, so a source makes the same batches every time."""

    def __init__(self, producer_id: bytes, project: str, run: str) -> None:
        self._seq = 0
        super().__init__(producer_id, project, run, self._next_seq_of_import, lambda: self._last_ns)

    def _next_seq_of_import(self) -> int:
        self._seq += 1
        return self._seq

    @property
    def full(self) -> bool:
        return self.points >= BATCH_POINTS

    @property
    def last_wall_ns(self) -> int:
        return self._last_ns


def import_runs(runs: list[ImportRun], settings: Settings, timeout_s: float = 600.0,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Send every run's batches that the bridge does not hold yet and wait until
    they are committed; ``progress(done_bytes, total_bytes)`` as sources are read.
    The report names each run with its points and batches, new and already stored."""
    report: dict[str, Any] = {"runs": [], "left_batches": 0}
    if not runs:
        report["summary"] = "found nothing to import"
        return report
    total = sum(r.size for r in runs)
    delivery = Delivery(settings, f"cs-import-{os.getpid()}-{os.urandom(3).hex()}")
    uploader = delivery.uploader
    delivery.start()
    asker = BridgeHttp(settings.bridge_url, settings.read_token) if settings.bridge_url else None  # own connection
    spools: list[Spool] = []
    done_before = 0
    asked_all = True
    try:
        for r in runs:
            stored = stored_batches(asker, r.producer_id)
            asked_all = asked_all and stored is not None
            spool: Spool | None = None
            entry: dict[str, Any] = {"source": r.source, "project": r.project, "run": r.run,
                                     "producer": r.producer_id.hex(),
                                     "points": 0, "batches": 0, "new_points": 0, "new_batches": 0}
            for seq, payload, n, read in r.batches():
                entry["points"] += n
                entry["batches"] += 1
                if stored is None or seq not in stored:
                    if spool is None:
                        spool = _fresh_spool(settings, r.producer_id, r.project, r.run)
                        spools.append(spool)
                        delivery.track(spool)
                    _wait_for_room(uploader)
                    spool.append(seq, payload, time.monotonic())
                    spool.rotate_if_due(time.monotonic(), settings.segment_max_bytes,
                                        settings.segment_max_age_ms / 1000)
                    uploader.spooled([r.producer_id])
                    entry["new_points"] += n
                    entry["new_batches"] += 1
                if progress is not None:
                    progress(done_before + read, total)
            if spool is not None:
                spool.close_for_writing()
                uploader.spooled([r.producer_id])
            done_before += r.size
            report["runs"].append(entry)
        uploader.wait_committed([s.producer_id for s in spools], time.monotonic() + timeout_s)
    finally:
        if asker is not None:
            asker.close()
        delivery.stop()
        for spool in spools:
            spool.drop_committed(delivery.untrack(spool.producer_id).covers)
            report["left_batches"] += sum(s.records for s in spool.segments)
            spool.release()
    report["summary"] = _summary(report["runs"], asked_all)
    return report


def _summary(runs: list[dict[str, Any]], asked_all: bool) -> str:
    new = sum(r["new_points"] for r in runs)
    if asked_all and not any(r["new_batches"] for r in runs):
        return f"nothing new: the {len(runs)} run(s) were stored already ({sum(r['points'] for r in runs):,} points)"
    changed = sum(1 for r in runs if r["new_batches"])
    said = "" if asked_all else " (the bridge could not be asked what it held: all sent, each stored once)"
    return f"sent {new:,} points of {changed} of {len(runs)} run(s){said}"


def stored_batches(http: BridgeHttp | None, producer_id: bytes) -> SeqSet | None:
    """The producer's batches the bridge holds; None when it cannot be asked."""
    if http is None:
        return None
    path = f"/api/v1/producers/{urllib.parse.quote(producer_id.hex())}/batches"
    try:
        answer = http.get_json(path)
    except Retryable:
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("stored"), list):
        return None
    return SeqSet((int(a), int(b)) for a, b in answer["stored"])


def _fresh_spool(settings: Settings, producer_id: bytes, project: str, run: str) -> Spool:
    """This run's spool, emptied of what an interrupted import left (it is made again, batch for batch)."""
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


def _wait_for_room(uploader: Uploader) -> None:
    while uploader.outstanding_batches() >= MAX_PENDING_BATCHES:
        uploader.wake()
        with uploader.progress:
            uploader.progress.wait(0.2)
