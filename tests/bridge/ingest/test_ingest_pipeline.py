"""The stages together over a fake store: the next messages are decoded,
pushed live and deduplicated while a write is in flight; each message is
acknowledged only after its own write; a re-send of a batch in flight is
settled after its original and never written twice; a run that ends lets go
of its producer."""

from __future__ import annotations

from ingest_fakes import PID, FakeStore, payload

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.ingest import Ingest, IngestListener, Kind, Message
from curvestream_bridge.metrics import Metrics
from curvestream_bridge.settings import BridgeSettings
from servers import wait_until


class Heard(IngestListener):
    def __init__(self) -> None:
        self.live: list[int] = []
        self.stored_seqs: list[int] = []

    def decoded(self, batches) -> None:
        self.live += [b.seq for b in batches]

    def stored(self, batches) -> None:
        self.stored_seqs += [b.seq for b in batches]


def pipeline(tmp_path, store: FakeStore) -> tuple[Ingest, Heard, list[int]]:
    settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb", parked_dir=str(tmp_path / "parked"))
    heard = Heard()
    ingest = Ingest(store, settings, Metrics(), publish_commit=lambda *_: None, listener=heard)
    return ingest, heard, []


def mqtt(seq: int, acked: list[int], mid: int | None = None, **kw) -> Message:
    return Message(Kind.POINTS, payload(seq, **kw), "mqtt", ("p", "r"), ack=lambda: acked.append(mid or seq))


def test_while_a_write_is_held_the_next_messages_are_pushed_live_and_prepared_and_nothing_is_acknowledged(tmp_path):
    store = FakeStore()
    ingest, heard, acked = pipeline(tmp_path, store)
    ingest.start()
    try:
        store.gate.clear()
        ingest.submit(mqtt(1, acked))
        assert store.begun.wait(10), "the first write has begun"
        for seq in (2, 3):
            ingest.submit(mqtt(seq, acked))
        ingest.submit(mqtt(1, acked, mid=101))  # a re-send of the batch in flight
        assert heard.live == [1, 2, 3, 1], "pushed live at once, the store write notwithstanding"
        wait_until(lambda: ingest.receiver.qsize() == 0, 10, "the next round prepared while the write is held")
        assert acked == [] and store.writes == []
        store.gate.set()
        wait_until(lambda: sorted(acked) == [1, 2, 3, 101], 10, "every message acknowledged after its write")
        assert store.writes == [[1], [2, 3]], "the re-send was not written again"
        assert acked.index(1) < acked.index(101), "the re-send settled after its original"
        assert heard.stored_seqs == [1, 2, 3]
    finally:
        store.gate.set()
        ingest.stop()


def test_a_re_send_of_a_batch_whose_write_failed_for_good_is_written_itself(tmp_path):
    store = FakeStore()
    store.refuse = {1}
    ingest, _, acked = pipeline(tmp_path, store)
    first = ingest.prepare([mqtt(1, acked)])
    second = ingest.prepare([mqtt(1, acked, mid=101)])  # arrives while the first is in flight
    assert len(second.waiting) == 1
    ingest.write_round(first)  # refused: given up
    store.refuse = set()
    ingest.write_round(second)
    assert store.writes == [[1]] and sorted(acked) == [1, 101]


def test_a_finished_run_lets_go_of_its_producer_and_its_clock(tmp_path):
    store = FakeStore()
    ingest, _, acked = pipeline(tmp_path, store)
    final = run_pb2.RunStatus(project="p", run="r", state=run_pb2.RUN_STATE_FINISHED, producer_id=PID, last_seq=2,
                              updated_ns=5)
    ingest.process([mqtt(1, acked, sent_ns=10**18), mqtt(2, acked, sent_ns=10**18, status=final)])
    assert ingest.dedupe.producers == 0 and ingest.clocks._producers == {}
    ingest.process([mqtt(2, acked, mid=102)])  # a late re-send: found in the store again
    assert store.writes == [[1, 2]] and sorted(acked) == [1, 2, 102]
