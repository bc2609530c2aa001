"""Stage 4, write: outages waited out, a refused batch found alone, an
unexpected error retried then parked (only once parked is it the bridge's)."""

from __future__ import annotations

import logging
import threading

import pytest
from ingest_fakes import FakeStore, payload

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.decode import decode_batch
from curvestream_bridge.ingest import Kind, Message
from curvestream_bridge.ingest.retry import Retrier, Stopping
from curvestream_bridge.ingest.write import Writer
from curvestream_bridge.metrics import BATCHES_PARKED, STORE_ERRORS, STORE_UNEXPECTED_ERRORS, Metrics
from curvestream_bridge.parked import ParkedBatches
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.store.base import StoreUnavailable


def batches(*seqs: int) -> list[DecodedBatch]:
    return [decode_batch(payload(s), 1 << 20, 10**6) for s in seqs]


def writer(store: FakeStore, parked: ParkedBatches | None = None, stop: threading.Event | None = None,
           attempts: int = 3) -> tuple[Writer, Metrics]:
    metrics = Metrics()
    ratelog = RateLimitedLog(logging.getLogger("test"))
    return Writer(store, Retrier(stop or threading.Event(), metrics, ratelog), metrics, ratelog, parked,
                  attempts), metrics


def test_one_write_for_all_batches_of_a_round():
    store = FakeStore()
    w, metrics = writer(store)
    assert w.write(batches(1, 2, 3)) == ({}, {})
    assert store.writes == [[1, 2, 3]]
    assert "curvestream_store_write_seconds_count 1" in metrics.render()


def test_an_outage_is_waited_out_and_the_write_retried():
    store = FakeStore()
    store.faults = [StoreUnavailable("down", retry_after_s=0.01)] * 2
    w, metrics = writer(store)
    assert w.write(batches(1)) == ({}, {})
    assert store.writes == [[1]] and metrics.get(STORE_ERRORS) == 2


def test_an_outage_ends_in_stopping_when_the_bridge_stops():
    store = FakeStore()
    store.faults = [StoreUnavailable("down", retry_after_s=5)] * 10
    stop = threading.Event()
    stop.set()
    w, _ = writer(store, stop=stop)
    with pytest.raises(Stopping):
        w.write(batches(1))


def test_a_refused_batch_is_found_by_writing_one_by_one_and_the_others_are_stored():
    store = FakeStore()
    store.refuse = {2}
    w, _ = writer(store)
    bs = batches(1, 2, 3)
    refused, failed = w.write(bs)
    assert list(refused) == [id(bs[1])] and failed == {}
    assert store.writes == [[1], [3]]


def test_an_unexpected_error_is_retried_with_the_alarm_up_then_reported_for_parking(tmp_path):
    store = FakeStore()
    store.faults = [TypeError("bug")] * 3  # the round twice, then the first batch alone
    w, metrics = writer(store, ParkedBatches(tmp_path), attempts=2)
    bs = batches(1, 2)
    refused, failed = w.write(bs)
    assert refused == {} and set(failed) == {id(bs[0])} and failed[id(bs[0])].startswith("TypeError")
    assert store.writes == [[2]], "the other batch stored once written alone"
    assert metrics.get(STORE_UNEXPECTED_ERRORS) == 3
    assert w.unexpected_error == "" and w.last_unexpected_error.startswith("TypeError")


def test_a_batch_is_parked_exactly_as_it_arrived_and_counted_once(tmp_path):
    w, metrics = writer(FakeStore(), ParkedBatches(tmp_path))
    m = Message(Kind.POINTS, payload(7), "mqtt", ("p", "r"))
    b = batches(7)[0]
    w.park(m, b, "TypeError: bug")
    w.park(m, b, "TypeError: bug")
    entries = w.parked.entries()
    assert [(e.seq, e.reason) for e in entries] == [(7, "TypeError: bug")]
    assert w.parked.payload(entries[0]) == payload(7)
    assert metrics.get(BATCHES_PARKED, source="mqtt") == 1
