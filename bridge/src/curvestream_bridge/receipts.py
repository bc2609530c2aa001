"""What the bridge has received from each producer (one trainer session), stored
or not yet: the newest seq and when it came.

A trainer's ``finish()`` that has had no commit for a while asks
(``GET /api/v1/producers/{id}``): a bridge that has its batches and is still
writing them is slow, and the trainer waits; one that never got them is not,
and the trainer stops waiting. Batches are noted as they are decoded, before
they reach the writer's queue. Kept in memory for the most recent producers
only (a restarted bridge knows nothing received before; the trainer's re-sends
tell it again).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from curvestream_bridge.decode import DecodedBatch

__all__ = ["Receipts"]


class Receipts:
    def __init__(self, max_producers: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._max = max_producers
        self._newest: collections.OrderedDict[bytes, tuple[int, float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def note(self, batches: Iterable[DecodedBatch]) -> None:
        """Batches received (any thread)."""
        now = self._clock()
        with self._lock:
            for b in batches:
                known = self._newest.pop(b.producer_id, None)
                self._newest[b.producer_id] = (max(b.seq, known[0]) if known else b.seq, now)
            while len(self._newest) > self._max:
                self._newest.popitem(last=False)

    def to_json(self, producer_id: bytes) -> dict[str, Any]:
        with self._lock:
            known = self._newest.get(producer_id)
        if known is None:
            return {"received_last_seq": None, "received_s_ago": None}
        return {"received_last_seq": known[0], "received_s_ago": round(self._clock() - known[1], 3)}
