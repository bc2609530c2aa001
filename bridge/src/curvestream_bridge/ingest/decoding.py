"""Stage 2, decode and validate: a points message becomes a :class:`DecodedBatch`
(clock-corrected, see :mod:`curvestream_bridge.clock_skew`) or raises
:class:`Rejected`. A message is decoded once: on the thread that received it
when it was submitted, else when its round is prepared. A batch of a deleted
run (:mod:`curvestream_bridge.run_lifecycle`) is rejected, each time it is
asked for: neither pushed live nor written."""

from __future__ import annotations

from collections.abc import Container

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import Rejected, decode_batch
from curvestream_bridge.ingest.message import Message

__all__ = ["Decoder"]


class Decoder:
    def __init__(self, max_payload_bytes: int, max_batch_points: int, clocks: ClockSkew,
                 deleted: Container[tuple[str, str]] = frozenset()) -> None:
        self.max_payload_bytes = max_payload_bytes
        self.max_batch_points = max_batch_points
        self.clocks = clocks
        self.deleted = deleted

    def __call__(self, m: Message) -> DecodedBatch:
        """The message's batch, decoded now unless it was before; raises Rejected."""
        batch = m.decoded
        if batch is None:
            batch = decode_batch(m.payload, self.max_payload_bytes, self.max_batch_points, m.topic_run)
            self.clocks.correct(batch, m.received_ns)
            m.decoded = batch
        if (batch.project, batch.run) in self.deleted:
            raise Rejected("run_deleted", f"run {batch.project}/{batch.run} was deleted", batch.producer_id, batch.seq)
        return batch
