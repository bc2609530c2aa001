"""Whether a finished run's tail has arrived.

A trainer's final status names the last batch its producer sealed
(``RunStatus.last_seq``). ``finish()`` gives up when the bridge stops
answering, leaving the rest in the trainer's spool; until that rest arrives
(the next run in the spool directory, or ``curvestream sync``), the run is
finished with batches *pending*, never plainly finished.

The tails are known from statuses seen since the bridge started: the retained
status topic hands every run's status to a starting bridge again.
"""

from __future__ import annotations

import dataclasses
import threading

from curvestream_wire.seqset import SeqSet
from curvestream_wire.v1 import run_pb2

from curvestream_bridge.store.base import StoreWriter

__all__ = ["RunTails"]

_ENDED = (run_pb2.RUN_STATE_FINISHED, run_pb2.RUN_STATE_FAILED)


@dataclasses.dataclass
class _Tail:
    producer_id: bytes
    last_seq: int
    updated_ns: int
    complete: bool = False


class RunTails:
    def __init__(self, store: StoreWriter) -> None:
        self.store = store
        self._tails: dict[tuple[str, str], _Tail] = {}
        self._lock = threading.Lock()

    def on_status(self, status: run_pb2.RunStatus) -> None:
        """Any status of a run (from its topic or inside a batch), newest wins."""
        run = (status.project, status.run)
        with self._lock:
            known = self._tails.get(run)
            if known is not None and known.updated_ns > status.updated_ns:
                return
            if status.state in _ENDED and status.last_seq and status.producer_id:
                if known is None or (known.producer_id, known.last_seq) != (status.producer_id, status.last_seq):
                    self._tails[run] = _Tail(bytes(status.producer_id), status.last_seq, status.updated_ns)
                else:
                    known.updated_ns = status.updated_ns
            elif status.state == run_pb2.RUN_STATE_RUNNING:
                self._tails.pop(run, None)  # resumed: a new producer, a new tail to come

    def pending_batches(self, project: str, run: str) -> int | None:
        """Batches up to the final status's ``last_seq`` not in the store; None when no tail is known."""
        with self._lock:
            tail = self._tails.get((project, run))
        if tail is None:
            return None
        if tail.complete:
            return 0
        stored = SeqSet(self.store.stored_ranges(tail.producer_id))
        missing = tail.last_seq - stored.count_within(1, tail.last_seq)
        if missing == 0:
            tail.complete = True
        return missing
