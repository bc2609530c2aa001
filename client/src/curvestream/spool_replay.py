"""Replaying spools: ``curvestream sync`` and ``curvestream status``.

Every producer directory whose lock is free (its process is gone: an offline
run, a killed one) is adopted and sent like a live run's spool, over MQTT or
the HTTP fallback, keeping each batch's own (producer, seq) so nothing is
stored twice. A run whose spool ends without a final status is marked
``lost`` afterwards: it never finished.

A spool may still hold batches the bridge has stored: a process killed before
their commit came, or a ``finish()`` that stopped waiting before the bridge got
to them. ``status`` asks the bridge which (``stored`` below) and counts them
apart, so it never lists a stored batch as pending.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curvestream_wire.seqset import SeqSet
from curvestream_wire.topics import Topics
from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream.delivery import Delivery
from curvestream.http_fallback import BridgeHttp, Permanent, Retryable
from curvestream.mqtt import MqttLink
from curvestream.settings import Settings
from curvestream.spool import Spool, SpoolLocked, list_producers

__all__ = ["sync_spool", "spool_status"]

_TERMINAL = (run_pb2.RUN_STATE_FINISHED, run_pb2.RUN_STATE_FAILED)


def spool_status(spool_dir: Path, stored: Callable[[bytes], SeqSet | None] | None = None) -> list[dict[str, Any]]:
    """Each producer directory: its run, whether its process lives, its batches and,
    when ``stored`` (the bridge's stored seqs of a producer, None when unknown) is
    given and answers, how many of them the bridge has stored (``stored_batches``)."""
    out = []
    for directory in list_producers(spool_dir):
        try:
            spool = Spool.adopt(directory)
            live = False
        except SpoolLocked:
            spool, live = None, True
        if spool is None:
            segs = sorted(directory.glob("*.seg"))
            out.append({"producer": directory.name, "project": "?", "run": "?", "live": True,
                        "segments": len(segs), "bytes": sum(s.stat().st_size for s in segs), "batches": None})
            continue
        entry = {"producer": directory.name, "project": spool.project, "run": spool.run, "live": live,
                 "segments": len(spool.segments), "bytes": spool.bytes_on_disk,
                 "batches": sum(s.records for s in spool.segments), "damaged": [str(d) for d in spool.damage]}
        known = stored(spool.producer_id) if stored is not None and entry["batches"] else None
        if known is not None:
            entry["stored_batches"] = sum(seq in known for seg in spool.segments
                                          for _, seq, _ in spool.read_from(seg, seg.data_start))
        out.append(entry)
        spool.release()
    return out


def _final_state(spool: Spool) -> int:
    """The state in the newest status a spool carries (UNSPECIFIED when none)."""
    state = run_pb2.RUN_STATE_UNSPECIFIED
    newest = -1
    for seg in spool.segments:
        for _, _, payload in spool.read_from(seg, seg.data_start):
            batch = batch_pb2.Batch()
            try:
                batch.ParseFromString(payload)
            except Exception:
                continue
            if batch.HasField("status") and batch.status.updated_ns >= newest:
                newest, state = batch.status.updated_ns, batch.status.state
    return state


def sync_spool(settings: Settings, timeout_s: float = 600.0,
               progress: Callable[[str, int], Callable[[int], None]] | None = None) -> dict[str, Any]:
    spools: list[Spool] = []
    busy = 0
    for directory in list_producers(settings.spool_path):
        try:
            spool = Spool.adopt(directory)
        except SpoolLocked:
            busy += 1
            continue
        if spool.segments:
            spools.append(spool)
        else:
            spool.release()
    report: dict[str, Any] = {"spool": str(settings.spool_path), "runs": [], "left_batches": 0,
                              "skipped_live_producers": busy, "damaged_records": []}
    if not spools:
        return report
    unfinished = {s.producer_id: (s.project, s.run) for s in spools if _final_state(s) not in _TERMINAL}
    total = sum(s.records for sp in spools for s in sp.segments)
    delivery = Delivery(settings, f"cs-sync-{os.getpid()}-{os.urandom(3).hex()}")
    uploader, link, http = delivery.uploader, delivery.link, delivery.http
    for spool in spools:
        delivery.track(spool)
    delivery.start()
    show = progress("curvestream sync", total) if progress is not None else None
    ok = uploader.wait_committed([s.producer_id for s in spools], time.monotonic() + timeout_s, show)
    marked_lost: set[bytes] = set()
    for producer, (project, run) in unfinished.items():
        if (ok or uploader.outstanding_batches() == 0) and _mark_lost(project, run, producer, link, http):
            marked_lost.add(producer)
    delivery.stop()
    for spool in spools:
        spool.drop_committed(delivery.untrack(spool.producer_id).covers)
        report["runs"].append({"project": spool.project, "run": spool.run, "producer": spool.producer_id.hex(),
                               "left_batches": sum(s.records for s in spool.segments),
                               "marked_lost": spool.producer_id in marked_lost})
        report["damaged_records"].extend(str(d) for d in spool.damage)
        spool.release()
    report["left_batches"] = sum(r["left_batches"] for r in report["runs"])
    return report


def _mark_lost(project: str, run: str, producer: bytes, link: MqttLink, http: BridgeHttp | None) -> bool:
    """Tell the bridge the run is lost; True when the status got through."""
    status = run_pb2.RunStatus(version=1, project=project, run=run, state=run_pb2.RUN_STATE_LOST,
                               reason="the trainer stopped without finishing; its spool was synced",
                               updated_ns=time.time_ns(), producer_id=producer)
    if link.publish_and_wait(Topics.status(project, run), status.SerializeToString(), retain=True, timeout=5.0):
        return True
    if http is None:
        return False
    batch = batch_pb2.Batch(version=1, producer_id=os.urandom(16), seq=1, project=project, run=run,
                            sealed_ns=time.time_ns(), status=status)
    try:
        http.ingest(batch.SerializeToString())
    except (Retryable, Permanent):
        return False
    return True
