"""A finished run whose tail has not arrived is pending, with the count, until it has (a store seam)."""

from __future__ import annotations

from curvestream_wire.seqset import SeqSet
from curvestream_wire.v1 import run_pb2

from curvestream_bridge.run_tails import RunTails

PID = b"p" * 16


class StoredRanges:
    def __init__(self) -> None:
        self.stored = SeqSet()
        self.asked = 0

    def stored_ranges(self, producer_id: bytes) -> list[tuple[int, int]]:
        self.asked += 1
        return self.stored.ranges() if producer_id == PID else []


def status(state: int, last_seq: int, updated_ns: int, producer: bytes = PID) -> run_pb2.RunStatus:
    return run_pb2.RunStatus(project="p", run="r", state=state, last_seq=last_seq, updated_ns=updated_ns,
                             producer_id=producer)


def test_a_finished_run_is_pending_until_every_batch_up_to_its_last_seq_is_stored():
    store = StoredRanges()
    tails = RunTails(store)  # type: ignore[arg-type]
    assert tails.pending_batches("p", "r") is None
    store.stored.add(1, 6)
    tails.on_status(status(run_pb2.RUN_STATE_FINISHED, 10, 100))
    assert tails.pending_batches("p", "r") == 4
    store.stored.add(9, 10)
    assert tails.pending_batches("p", "r") == 2
    store.stored.add(7, 8)
    assert tails.pending_batches("p", "r") == 0
    asked = store.asked
    assert tails.pending_batches("p", "r") == 0 and store.asked == asked  # complete: not asked again


def test_an_older_status_never_replaces_a_newer_tail_and_a_resumed_run_has_none():
    store = StoredRanges()
    tails = RunTails(store)  # type: ignore[arg-type]
    tails.on_status(status(run_pb2.RUN_STATE_FINISHED, 12, 200))
    tails.on_status(status(run_pb2.RUN_STATE_FINISHED, 9, 100))  # the copy inside the last batch, older
    assert tails.pending_batches("p", "r") == 12
    tails.on_status(status(run_pb2.RUN_STATE_RUNNING, 0, 300, producer=b"q" * 16))
    assert tails.pending_batches("p", "r") is None
