"""Stage 3, dedupe: stored seqs per producer read once (all new producers of a
round together), re-sends of stored and in-flight batches dropped, memory
bounded, a finished run's producer let go."""

from __future__ import annotations

from ingest_fakes import FakeStore

from curvestream_bridge.ingest.dedupe import Dedupe


def test_new_producers_are_read_from_the_store_together_once():
    store = FakeStore()
    store.stored_ranges_many  # noqa: B018
    d = Dedupe(store.stored_ranges_many)
    d.learn([b"a", b"b", b"a"])
    d.learn([b"a", b"c"])
    assert store.range_reads == [[b"a", b"b"], [b"c"]]


def test_stored_and_in_flight_batches_are_duplicates_until_given_up():
    d = Dedupe(lambda pids: {b"a": [(1, 5)]})
    assert d.is_duplicate(b"a", 3) and d.is_stored(b"a", 3)
    assert not d.is_duplicate(b"a", 6)
    d.claim(b"a", 6)
    assert d.is_duplicate(b"a", 6) and not d.is_stored(b"a", 6), "in flight"
    d.released([(b"a", 6)])
    assert not d.is_duplicate(b"a", 6), "a write given up: a re-send is fresh again"
    d.claim(b"a", 6)
    d.stored([(b"a", 6)])
    assert d.is_stored(b"a", 6)


def test_memory_holds_the_most_recently_seen_producers_and_the_others_are_read_again():
    reads: list[list[bytes]] = []
    d = Dedupe(lambda pids: (reads.append(list(pids)), {p: [(1, 1)] for p in pids})[1], max_producers=2)
    for p in (b"a", b"b", b"c"):
        d.is_duplicate(p, 1)
    assert d.producers == 2
    d.is_duplicate(b"c", 1)
    d.is_duplicate(b"a", 1)  # dropped as the least recently seen: read again
    assert reads == [[b"a"], [b"b"], [b"c"], [b"a"]]


def test_a_producer_whose_run_ended_is_let_go():
    d = Dedupe(lambda pids: {p: [(1, 9)] for p in pids})
    d.is_duplicate(b"a", 1)
    d.forget(b"a")
    assert d.producers == 0
    assert d.is_duplicate(b"a", 9), "read from the store again when it sends more"


def test_an_unexpected_error_reading_the_store_is_reported_and_the_producer_asked_again_later():
    errors: list[Exception] = []
    calls = []

    def ranges(pids):
        calls.append(pids)
        if len(calls) == 1:
            raise KeyError("a bug")
        return {p: [(1, 1)] for p in pids}

    d = Dedupe(ranges, on_error=errors.append)
    assert not d.is_duplicate(b"a", 1), "unknown: the store's own dedupe still holds"
    assert [type(e) for e in errors] == [KeyError]
    assert d.is_duplicate(b"a", 1) and len(calls) == 2
