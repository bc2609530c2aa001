"""What a store error that nobody foresaw does to a batch: it is retried, then
parked, and only then committed; a replay after the fix stores it exactly
once. The store engine is the seam (a real DuckDB with a chosen fault)."""

from __future__ import annotations

import threading

import pytest
from test_ingest import PID, Harness, _ranges, batch

from curvestream_bridge.ingest import Kind, Message
from curvestream_bridge.metrics import BATCHES_PARKED, PARK_ERRORS, REJECTED, STORE_UNEXPECTED_ERRORS
from curvestream_bridge.replay import replay_parked
from curvestream_bridge.store.duckdb import DuckDBStore
from servers import wait_until


class BuggyStore(DuckDBStore):
    """Fails on the batches ``poison`` names (every batch when it is None) until fixed."""

    def __init__(self, path: str, poison: set[int] | None = None, failures: int = 10**9) -> None:
        super().__init__(path)
        self.poison = poison
        self.failures = failures
        self.calls = 0

    def write(self, batches):
        self.calls += 1
        if self.failures and (self.poison is None or any(b.seq in self.poison for b in batches)):
            self.failures -= 1
            raise TypeError("unsupported operand type(s) for +: 'int' and 'NoneType'")
        return super().write(batches)


@pytest.fixture
def buggy(tmp_path):
    made = []

    def make(**kwargs) -> Harness:
        h = Harness(tmp_path, store=BuggyStore(str(tmp_path / "b.duckdb"), **kwargs), unexpected_error_attempts=3)
        made.append(h)
        return h

    yield make
    for h in made:
        h.ingest.stop()
        h.store.close()


def stored_seqs(h: Harness) -> list[tuple[int, int]]:
    return [r for _, c in h.commits for r in _ranges(c)]


def test_a_store_bug_parks_the_batch_instead_of_rejecting_it_and_the_others_are_stored(buggy):
    h = buggy(poison={2})
    h.ingest.process([h.mqtt(batch(1), 1), h.mqtt(batch(2), 2), h.mqtt(batch(3), 3)])
    assert h.metrics.get(REJECTED, reason="store_refused") == 0
    assert not [r for _, c in h.commits for r in _ranges(c, "rejected")], "nothing is rejected for a bug"
    assert h.count() == 20, "the batches beside the poison one are stored"
    parked = h.ingest.parked.entries()
    assert [(p.producer_id, p.seq) for p in parked] == [(PID, 2)]
    assert parked[0].reason.startswith("TypeError: unsupported operand")
    assert h.ingest.parked.payload(parked[0]) == batch(2), "parked exactly as it arrived"
    assert h.metrics.get(STORE_UNEXPECTED_ERRORS) == 3 + 1, "3 attempts of the round, 1 alone"
    assert h.metrics.get(BATCHES_PARKED, source="mqtt") == 1
    assert "curvestream_parked_batches 1" in h.metrics.render()


def test_a_parked_batch_delivered_again_is_committed_again_but_parked_and_counted_once(buggy):
    h = buggy(poison={2})
    h.ingest.process([h.mqtt(batch(2), 2)])
    h.ingest.process([h.mqtt(batch(2), 3)])  # the trainer resent it before the first commit reached it
    assert [(p.producer_id, p.seq) for p in h.ingest.parked.entries()] == [(PID, 2)]
    assert h.metrics.get(BATCHES_PARKED, source="mqtt") == 1
    assert "curvestream_parked_batches 1" in h.metrics.render()
    assert stored_seqs(h) == [(2, 2), (2, 2)], "each delivery is committed, so the trainer frees its spool"


def test_the_trainer_may_free_its_spool_only_once_the_batch_is_parked(buggy):
    h = buggy(poison={2})
    parked_when_committed = []
    h.ingest.publish_commit = lambda pid, c: parked_when_committed.append(
        ([p.seq for p in h.ingest.parked.entries()], _ranges(c)))
    h.ingest.process([h.mqtt(batch(2), 2)])
    assert parked_when_committed == [([2], [(2, 2)])], "the commit comes after the batch is on disk"
    assert h.acked == [2]


def test_a_replay_after_the_fix_stores_each_parked_batch_exactly_once_and_empties_the_parked_set(buggy):
    h = buggy(poison=None)  # a bug on every write: everything is parked, nothing lost
    h.ingest.process([h.mqtt(batch(i), i) for i in (1, 2, 3)])
    assert h.count() == 0 and h.ingest.parked.count == 3 and sorted(h.acked) == [1, 2, 3]
    h.store.failures = 0  # the fix
    h.ingest.process([h.mqtt(batch(2), 4)])  # meanwhile the trainer sent batch 2 again: stored now
    h.ingest.start()
    report = replay_parked(h.ingest, timeout_s=30)
    assert report["replayed"] == 3 and report["still_parked"] == 0 and report["rejected"] == 0, report
    assert h.count() == 30, "each batch stored once"
    assert h.ingest.parked.entries() == []
    assert replay_parked(h.ingest, timeout_s=30)["replayed"] == 0
    assert h.count() == 30


def test_a_replay_while_the_bug_persists_keeps_the_batch_parked(buggy):
    h = buggy(poison={1})
    h.ingest.process([h.mqtt(batch(1), 1)])
    h.ingest.start()
    report = replay_parked(h.ingest, timeout_s=30)
    assert report["replayed"] == 0 and report["still_parked"] == 1
    assert h.count() == 0 and [p.source for p in h.ingest.parked.entries()] == ["mqtt"]


def test_an_unexpected_error_that_goes_away_is_retried_and_stored_not_parked(buggy):
    h = buggy(poison=None, failures=2)
    h.ingest.process([h.mqtt(batch(1), 1)])
    assert h.count() == 10 and h.ingest.parked.count == 0
    assert h.metrics.get(STORE_UNEXPECTED_ERRORS) == 2
    assert h.ingest.unexpected_error == "", "the alarm is down again"


def test_the_alarm_is_up_while_the_writer_retries_an_unexpected_error(buggy):
    h = buggy(poison={1})
    seen = []
    real_write = h.store.write

    def watching(batches):
        seen.append(h.ingest.unexpected_error)
        return real_write(batches)

    h.store.write = watching
    h.ingest.process([h.mqtt(batch(1), 1)])
    assert seen[0] == "" and all(s.startswith("TypeError") for s in seen[1:]), seen
    assert h.ingest.unexpected_error == "" and h.ingest.last_unexpected_error.startswith("TypeError")


def test_without_a_parked_dir_a_bug_holds_the_batch_unacknowledged_until_fixed(tmp_path):
    h = Harness(tmp_path, store=BuggyStore(str(tmp_path / "b.duckdb"), poison={1}), parked_dir="")
    h.ingest.start()
    h.ingest.submit(h.mqtt(batch(1), 1))
    wait_until(lambda: h.metrics.get(STORE_UNEXPECTED_ERRORS) >= 4, 30, "retries")
    assert h.acked == [] and h.commits == []
    h.store.failures = 0
    wait_until(lambda: h.acked == [1], 30, "the batch stored after the fix")
    assert h.count() == 10
    h.ingest.stop()
    h.store.close()


def test_a_parked_dir_on_a_full_disk_commits_nothing_until_the_batch_can_be_parked(tmp_path, small_disk):
    h = Harness(tmp_path, store=BuggyStore(str(tmp_path / "b.duckdb"), poison={1}), unexpected_error_attempts=2,
                parked_dir=str(small_disk.path / "parked"))
    small_disk.fill()
    h.ingest.start()
    h.ingest.submit(h.mqtt(batch(1, n=2000), 1))
    wait_until(lambda: h.metrics.get(PARK_ERRORS) >= 2, 30, "parking failing on the full disk")
    assert h.acked == [] and h.commits == [], "not parked, so not committed"
    assert list((small_disk.path / "parked").iterdir()) == [], "no half-written batch left behind"
    small_disk.free()
    wait_until(lambda: h.acked == [1], 30, "parked once space returned")
    assert stored_seqs(h) == [(1, 1)] and h.ingest.parked.count == 1
    h.ingest.stop()
    h.store.close()


def test_a_replayed_batch_that_is_malformed_now_is_dead_lettered_and_leaves_the_parked_set(buggy):
    h = buggy(poison={1})
    h.ingest.process([h.mqtt(batch(1), 1)])
    entry = h.ingest.parked.entries()[0]
    entry.path.write_bytes(entry.path.read_bytes().split(b"\n", 1)[0] + b"\n" + b"\xff junk")
    h.ingest.start()
    report = replay_parked(h.ingest, timeout_s=30)
    assert report["rejected"] == 1 and report["still_parked"] == 0


def test_an_http_batch_is_parked_and_answered_with_its_commit(buggy):
    from concurrent.futures import Future

    h = buggy(poison={1})
    answer: Future = Future()
    h.ingest.process([Message(Kind.POINTS, batch(1), "http", reply=answer)])
    assert _ranges(answer.result(0)) == [(1, 1)]
    assert [p.source for p in h.ingest.parked.entries()] == ["http"]


def test_parking_is_safe_from_several_threads(tmp_path):
    from curvestream_bridge.parked import ParkedBatches

    parked = ParkedBatches(tmp_path / "p")
    threads = [threading.Thread(target=parked.park, args=(b"x" * 100, PID, i % 5, "why", "mqtt")) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parked.count == 5 == len(parked.entries())


class UnreadableRangesStore(DuckDBStore):
    def stored_ranges(self, producer_id):
        raise KeyError("a bug reading the stored batches")

    def stored_ranges_many(self, producer_ids):
        raise KeyError("a bug reading the stored batches")


def test_a_bug_reading_the_stored_batches_holds_nothing_up_and_the_store_still_dedupes(tmp_path):
    h = Harness(tmp_path, store=UnreadableRangesStore(str(tmp_path / "u.duckdb")))
    h.ingest.process([h.mqtt(batch(1), 1), h.mqtt(batch(2), 2)])
    h.ingest.process([h.mqtt(batch(2), 3)])  # a re-send
    assert h.count() == 20 and h.acked == [1, 2, 3]
    assert stored_seqs(h) == [(1, 2), (2, 2)]
    assert h.metrics.get(STORE_UNEXPECTED_ERRORS) > 0, "the alarm is up"
    h.store.close()
