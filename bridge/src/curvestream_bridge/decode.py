"""Where payloads become validated batches, or a rejection with a reason.

Nothing that arrives on the wire is trusted: every check failing here raises
:class:`Rejected` with a short machine-readable reason (counted per reason in
``/metrics``) and a human message. A rejected batch is never written in part.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from curvestream_wire import names
from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream_bridge.batch import DecodedBatch, ScalarColumn

__all__ = ["Rejected", "DecodedBatch", "ScalarColumn", "decode_batch", "decode_status", "decode_meta"]

WIRE_VERSIONS = (1,)
ALERT_LEVELS = ("info", "warning", "critical")


class Rejected(Exception):
    def __init__(self, reason: str, message: str, producer_id: bytes = b"", seq: int = 0) -> None:
        super().__init__(message)
        self.reason = reason
        self.producer_id = producer_id
        self.seq = seq


def _parse(message: Any, payload: bytes, what: str) -> None:
    try:
        message.ParseFromString(payload)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise Rejected("undecodable", f"{what}: not a protobuf message ({exc})") from None


def _name(kind: str, value: str, reason: str, pid: bytes, seq: int) -> str:
    try:
        return names.validate_name(kind, value)
    except (TypeError, ValueError) as exc:
        raise Rejected(reason, str(exc), pid, seq) from None


def decode_batch(payload: bytes, max_bytes: int, max_points: int,
                 topic_run: tuple[str, str] | None = None) -> DecodedBatch:
    if len(payload) > max_bytes:
        raise Rejected("oversized", f"payload of {len(payload)} bytes exceeds {max_bytes}")
    batch = batch_pb2.Batch()
    _parse(batch, payload, "batch")
    pid, seq = bytes(batch.producer_id), int(batch.seq)
    if batch.version not in WIRE_VERSIONS:
        raise Rejected("unknown_version", f"wire version {batch.version} is not one of {WIRE_VERSIONS}", pid, seq)
    if not 1 <= len(pid) <= 64:
        raise Rejected("bad_producer", f"producer_id must be 1..64 bytes, got {len(pid)}")
    if seq < 1:
        raise Rejected("bad_seq", "seq must be >= 1", pid, seq)
    project = _name("project name", batch.project, "bad_name", pid, seq)
    run = _name("run name", batch.run, "bad_name", pid, seq)
    if topic_run is not None and topic_run != (project, run):
        raise Rejected(
            "topic_mismatch",
            f"batch for {project}/{run} arrived on the topic of {topic_run[0]}/{topic_run[1]}",
            pid,
            seq,
        )
    scalars: list[ScalarColumn] = []
    total = 0
    seen: dict[str, int] = {}
    for series in batch.scalars:
        try:
            key = names.validate_key(series.key)
        except (TypeError, ValueError) as exc:
            raise Rejected("bad_key", str(exc), pid, seq) from None
        n = len(series.values)
        if len(series.steps) != n or len(series.wall_ns) != n:
            raise Rejected("ragged_series", f"series {key!r}: {len(series.steps)} steps, {len(series.wall_ns)} "
                           f"times, {n} values", pid, seq)
        total += n
        if total > max_points:
            raise Rejected("too_many_points", f"more than {max_points} points in one batch", pid, seq)
        if n == 0:
            continue
        column = ScalarColumn(  # fromiter: half the cost of np.array over a repeated field
            key,
            np.fromiter(series.steps, np.int64, n),
            np.fromiter(series.wall_ns, np.int64, n),
            np.fromiter(series.values, np.float64, n),
        )
        if key in seen:  # the same key twice in one batch: merge
            prev = scalars[seen[key]]
            column = ScalarColumn(key, np.concatenate([prev.steps, column.steps]),
                                  np.concatenate([prev.wall_ns, column.wall_ns]),
                                  np.concatenate([prev.values, column.values]))
            scalars[seen[key]] = column
        else:
            seen[key] = len(scalars)
            scalars.append(column)
    for h in batch.histograms:
        try:
            names.validate_key(h.key)
        except (TypeError, ValueError) as exc:
            raise Rejected("bad_key", str(exc), pid, seq) from None
        if len(h.bucket_edges) != len(h.counts) + 1:
            raise Rejected("bad_histogram", f"histogram {h.key!r}: {len(h.bucket_edges)} edges for "
                           f"{len(h.counts)} counts", pid, seq)
    for t in batch.texts:
        try:
            names.validate_key(t.key)
        except (TypeError, ValueError) as exc:
            raise Rejected("bad_key", str(exc), pid, seq) from None
    for a in batch.alerts:
        if not 0 < len(a.title) <= 256 or a.level not in ALERT_LEVELS or len(a.text) > 10_000:
            raise Rejected("bad_alert", f"an alert needs a title of 1 to 256 characters, a level of {ALERT_LEVELS} "
                           f"and at most 10,000 characters of text; got {a.title[:80]!r}, {a.level[:20]!r}", pid, seq)
    meta = None
    if batch.HasField("meta"):
        meta = batch.meta
        if (meta.project, meta.run) != (project, run):
            raise Rejected("topic_mismatch", "run metadata names another run", pid, seq)
    status = None
    if batch.HasField("status"):
        status = batch.status
        if (status.project, status.run) != (project, run):
            raise Rejected("topic_mismatch", "run status names another run", pid, seq)
    return DecodedBatch(pid, seq, project, run, scalars, list(batch.histograms), list(batch.texts),
                        meta, status, batch.sealed_ns, batch.sent_ns, list(batch.alerts))


def decode_status(payload: bytes, topic_run: tuple[str, str]) -> run_pb2.RunStatus:
    status = run_pb2.RunStatus()
    _parse(status, payload, "status")
    if (status.project, status.run) != topic_run:
        raise Rejected("topic_mismatch", "status names another run than its topic")
    return status


def decode_meta(payload: bytes, topic_run: tuple[str, str]) -> run_pb2.RunMeta:
    meta = run_pb2.RunMeta()
    _parse(meta, payload, "meta")
    if (meta.project, meta.run) != topic_run:
        raise Rejected("topic_mismatch", "metadata names another run than its topic")
    return meta
