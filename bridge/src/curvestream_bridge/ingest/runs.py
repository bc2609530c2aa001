"""The run messages beside the points: a run's status and its metadata, each
on its own topic (retained; the status also as the run's MQTT Last Will).
Applied after the points of the round they came with, so a run's ``finished``
follows its last stored point. One handler per kind of message."""

from __future__ import annotations

from collections.abc import Callable

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import Rejected, decode_meta, decode_status
from curvestream_bridge.ingest.message import Kind, Message
from curvestream_bridge.ingest.notify import Notifier
from curvestream_bridge.ingest.retry import Retrier
from curvestream_bridge.store.base import StoreWriter

__all__ = ["RunMessages"]


class RunMessages:
    def __init__(self, store: StoreWriter, retry: Retrier, clocks: ClockSkew, notify: Notifier) -> None:
        self.store = store
        self.retry = retry
        self.clocks = clocks
        self.notify = notify
        self.handlers: dict[str, Callable[[Message], None]] = {Kind.STATUS: self._status, Kind.META: self._meta}

    def apply(self, m: Message) -> None:
        """Apply the message to the store; raises Rejected (the caller settles it)."""
        handler = self.handlers.get(m.kind)
        if handler is None:
            raise Rejected("bad_topic", f"no handler for {m.kind} messages")
        assert m.topic_run is not None
        handler(m)

    def _status(self, m: Message) -> None:
        status = decode_status(m.payload, m.topic_run)  # type: ignore[arg-type]
        if status.state == run_pb2.RUN_STATE_LOST:
            status.updated_ns = m.received_ns  # the Last Will was composed at connect time: date it by its arrival
        else:
            self.clocks.correct_status(status)
        if self.retry(lambda: self.store.apply_status(status)):
            self.notify.status(status)

    def _meta(self, m: Message) -> None:
        meta = decode_meta(m.payload, m.topic_run)  # type: ignore[arg-type]
        self.retry(lambda: self.store.apply_meta(meta))
        self.notify.meta(meta)
