"""Stage 1, receive: a source (the MQTT subscriber, the HTTP ingest endpoint,
a replay) submits a message; it is decoded and pushed live at once, on the
submitting thread, then waits in a bounded queue for its round.

The queue is the bridge's receive window: it holds at most ``max_messages``
messages and ``max_bytes`` of payload (one message larger than that is let in
alone); a source that finds it full waits, which is the backpressure on the
broker (paho stops reading its socket). Nothing in it is acknowledged yet:
each message is acknowledged only once its round is written.
"""

from __future__ import annotations

import collections
import queue
import threading
import time

from curvestream_bridge.decode import Rejected
from curvestream_bridge.ingest.decoding import Decoder
from curvestream_bridge.ingest.message import Kind, Message
from curvestream_bridge.ingest.notify import Notifier

__all__ = ["Receiver"]

POINTS_PER_BYTE_GUESS = 1 / 20  # a round's points guessed from its payloads before they are decoded


class Receiver:
    def __init__(self, decode: Decoder, notify: Notifier, max_messages: int, max_bytes: int) -> None:
        self.decode = decode
        self.notify = notify
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._items: collections.deque[Message] = collections.deque()
        self._bytes = 0
        self._cond = threading.Condition()

    def qsize(self) -> int:
        return len(self._items)

    @property
    def bytes(self) -> int:
        return self._bytes

    def submit(self, m: Message, timeout: float | None = None) -> None:
        """Decode, push live, queue; blocks while the queue is full (raises queue.Full after ``timeout``)."""
        if not m.received_ns:
            m.received_ns = time.time_ns()
        if m.kind == Kind.POINTS and m.decoded is None:
            try:
                batch = self.decode(m)
            except Rejected:
                pass  # left to its round, which rejects it
            else:
                self.notify.decoded([batch])
        size = len(m.payload)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._items and (len(self._items) >= self.max_messages or self._bytes + size > self.max_bytes):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise queue.Full
                self._cond.wait(left)
            self._items.append(m)
            self._bytes += size
            self._cond.notify_all()

    def take(self, max_messages: int, max_points: int, timeout: float = 0.0) -> list[Message]:
        """Up to ``max_messages`` messages and about ``max_points`` points, the oldest
        first; waits up to ``timeout`` for the first."""
        with self._cond:
            if not self._items and timeout > 0:
                self._cond.wait(timeout)
            out: list[Message] = []
            points = 0
            while self._items and len(out) < max_messages and (not out or points < max_points):
                m = self._items.popleft()
                self._bytes -= len(m.payload)
                points += m.decoded.points if m.decoded is not None else int(len(m.payload) * POINTS_PER_BYTE_GUESS)
                out.append(m)
            if out:
                self._cond.notify_all()
            return out
