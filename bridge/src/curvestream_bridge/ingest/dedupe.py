"""Stage 3, dedupe: drop re-sends by (producer, seq) before they cost a write.

Each producer's stored seqs are kept as a :class:`SeqSet` (a few ranges: a
producer's seqs are consecutive), read from the store the first time the
producer is seen, for all new producers of a round by one call. A batch
handed to the writer is *in flight* until it is stored or given up: a re-send
of it meanwhile is a duplicate too (settled after the write of the original).

Memory: at most ``max_producers`` producers are kept, least recently seen
dropped first (a dropped one is read from the store again when it comes
back), and :meth:`forget` drops a producer whose run ended.

    >>> d = Dedupe(lambda pids: {p: [(1, 3)] for p in pids})
    >>> d.is_duplicate(b"p", 2), d.is_duplicate(b"p", 4)
    (True, False)
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from curvestream_wire.seqset import SeqSet

from curvestream_bridge.ingest.retry import Stopping

__all__ = ["Dedupe"]

log = logging.getLogger("curvestream.bridge.ingest")

RangesOf = Callable[[list[bytes]], dict[bytes, list[tuple[int, int]]]]


class Dedupe:
    def __init__(self, ranges_of: RangesOf, max_producers: int = 100_000,
                 on_error: Callable[[Exception], None] | None = None) -> None:
        """``ranges_of(producer_ids)``: the stored seq ranges of each (a store read
        that waits out outages); an unexpected error from it is given to
        ``on_error`` and the producers are asked again next time (the store's own
        dedupe still holds)."""
        self.ranges_of = ranges_of
        self.max_producers = max_producers
        self.on_error = on_error
        self._seen: collections.OrderedDict[bytes, SeqSet] = collections.OrderedDict()
        self._in_flight: set[tuple[bytes, int]] = set()
        self._lock = threading.Lock()

    @property
    def producers(self) -> int:
        return len(self._seen)

    def learn(self, producer_ids: Iterable[bytes]) -> None:
        """Read the stored seqs of the producers not known yet, all at once."""
        with self._lock:
            new = list(dict.fromkeys(p for p in producer_ids if p not in self._seen))
        if not new:
            return
        try:
            found = self.ranges_of(new)
        except Stopping:
            raise
        except Exception as exc:
            if self.on_error is not None:
                self.on_error(exc)
            return
        with self._lock:
            for pid in new:
                if pid not in self._seen:
                    self._seen[pid] = SeqSet(found.get(pid, ()))
            self._trim()

    def is_duplicate(self, producer_id: bytes, seq: int) -> bool:
        """Stored, or in flight; learns the producer first when it is new."""
        if producer_id not in self._seen:
            self.learn([producer_id])
        with self._lock:
            seen = self._seen.get(producer_id)
            if seen is not None:
                self._seen.move_to_end(producer_id)
                if seq in seen:
                    return True
            return (producer_id, seq) in self._in_flight

    def is_stored(self, producer_id: bytes, seq: int) -> bool:
        with self._lock:
            seen = self._seen.get(producer_id)
            return seen is not None and seq in seen

    def claim(self, producer_id: bytes, seq: int) -> None:
        """Handed to the writer: a re-send from now on is a duplicate."""
        with self._lock:
            self._in_flight.add((producer_id, seq))

    def stored(self, batches: Sequence[tuple[bytes, int]]) -> None:
        with self._lock:
            for pid, seq in batches:
                self._in_flight.discard((pid, seq))
                seen = self._seen.get(pid)
                if seen is not None:
                    seen.add(seq, seq)

    def released(self, batches: Sequence[tuple[bytes, int]]) -> None:
        """Given up (rejected, parked, or the write failed): a re-send is fresh again."""
        with self._lock:
            for ident in batches:
                self._in_flight.discard(ident)

    def forget(self, producer_id: bytes) -> None:
        """The producer's run ended: its seqs are read from the store again if it sends more."""
        with self._lock:
            self._seen.pop(producer_id, None)

    def _trim(self) -> None:
        while len(self._seen) > self.max_producers:
            self._seen.popitem(last=False)
