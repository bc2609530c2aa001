"""Stage 5, settle: tell each source what became of its message, only once the
bridge owns it (stored, parked) or has refused it for good.

MQTT messages are acknowledged to the broker and their producers sent one
commit each per round (the stored seqs as ranges); an HTTP message's future
gets its own commit. A rejected message is counted by reason, logged (rate
limited), dead-lettered, acknowledged, and answered with a ``rejected``
commit so the trainer stops re-sending it.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable

from curvestream_wire.seqset import SeqSet
from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.decode import Rejected
from curvestream_bridge.ingest.message import Message
from curvestream_bridge.metrics import REJECTED, Metrics
from curvestream_bridge.parked import ParkedBatches
from curvestream_bridge.ratelog import RateLimitedLog

__all__ = ["Settler"]

PublishCommit = Callable[[bytes, run_pb2.Commit], None]
Dropped = dict[tuple[bytes, int], tuple[int, str]]  # (producer, seq) -> (points left out on purpose, why)
TakeDropped = Callable[[list[tuple[bytes, int]]], Dropped]


class Settler:
    def __init__(self, bridge_id: str, metrics: Metrics, ratelog: RateLimitedLog,
                 publish_commit: PublishCommit | None, parked: ParkedBatches | None,
                 dead_letter_path: str = "", take_dropped: TakeDropped | None = None) -> None:
        self.bridge_id = bridge_id
        self.take_dropped = take_dropped  # the store's record of points it left out (retention), told to the trainer
        self.metrics = metrics
        self.ratelog = ratelog
        self.publish_commit = publish_commit
        self.parked = parked
        self.dead_letter_path = dead_letter_path
        self._dead_letter_lock = threading.Lock()

    def commit(self, items: list[tuple[Message, DecodedBatch]]) -> None:
        """Stored, parked or re-sent: acknowledged, and committed to their producers."""
        by_producer: dict[bytes, SeqSet] = {}
        dropped = self.take_dropped([(b.producer_id, b.seq) for _, b in items]) if self.take_dropped else {}
        for m, b in items:
            if m.ack is not None:
                m.ack()
            if m.reply is not None:
                m.reply.set_result(self.commit_message(b.producer_id, SeqSet([(b.seq, b.seq)]), dropped=dropped))
            elif m.source == "mqtt":
                seqs = by_producer.get(b.producer_id)
                if seqs is None:
                    seqs = by_producer[b.producer_id] = SeqSet()
                seqs.add(b.seq, b.seq)
        if self.publish_commit is not None:
            for producer, seqs in by_producer.items():
                self.publish_commit(producer, self.commit_message(producer, seqs, dropped=dropped))

    def commit_message(self, producer: bytes, seqs: SeqSet, rejected: bool = False,
                       dropped: Dropped | None = None) -> run_pb2.Commit:
        commit = run_pb2.Commit(producer_id=producer, committed_ns=time.time_ns(), bridge_id=self.bridge_id)
        target = commit.rejected if rejected else commit.stored
        for first, last in seqs.ranges():
            target.add(first=first, last=last)
            for seq in range(first, last + 1) if dropped else ():
                if dropped is not None and (producer, seq) in dropped:
                    points, why = dropped[(producer, seq)]
                    commit.dropped.add(batches=run_pb2.SeqRange(first=seq, last=seq), points=points, reason=why)
        return commit

    def reject(self, m: Message, rej: Rejected) -> None:
        self.metrics.inc(REJECTED, reason=rej.reason)
        self.ratelog.warning(rej.reason, "curvestream bridge: rejected a %s payload from %s (%s): %s",
                             m.kind, m.source, rej.reason, rej)
        if rej.reason != "run_deleted":  # nothing wrong with the payload: not kept for inspection
            self.dead_letter(m, rej.reason, str(rej))
        if m.parked is not None and self.parked is not None:
            self.parked.remove(m.parked)  # its fate is settled: rejected, kept in the dead-letter file
        if m.ack is not None:
            m.ack()
        if m.reply is not None:
            m.reply.set_exception(rej)
        elif rej.producer_id and rej.seq and self.publish_commit is not None:
            self.publish_commit(rej.producer_id, self.commit_message(rej.producer_id, SeqSet([(rej.seq, rej.seq)]),
                                                                    rejected=True))

    def dead_letter(self, m: Message, reason: str, detail: str) -> None:
        path = self.dead_letter_path
        if not path:
            return
        head = f"{time.time_ns()} {m.source} {m.kind} {reason} {detail[:500]!r}".encode()
        try:
            with self._dead_letter_lock, open(path, "ab") as fh:
                fh.write(struct.pack("<II", len(head), len(m.payload)) + head + m.payload)
        except OSError as exc:
            self.ratelog.warning("dead_letter", "curvestream bridge: cannot write dead letters to %s: %s", path, exc)
