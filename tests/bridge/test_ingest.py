"""The ingest pipeline over a real (in-memory) DuckDB store: validation,
dedupe, commits, rejections; sources and the commit channel are seams."""

from __future__ import annotations

import math

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream_bridge.decode import Rejected
from curvestream_bridge.ingest import Ingest, IngestListener, Kind, Message
from curvestream_bridge.metrics import BATCHES_DUPLICATE, REJECTED, STORE_ERRORS, Metrics
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import SeriesQuery, StoreRejected, StoreUnavailable
from curvestream_bridge.store.duckdb.store import DuckDBStore

PID = b"\x01" * 16


def batch(seq: int, n: int = 10, project: str = "p", run: str = "r", pid: bytes = PID, **fields) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=pid, seq=seq, project=project, run=run, **fields)
    s = b.scalars.add(key="loss")
    s.steps.extend(range(seq * n, seq * n + n))
    s.wall_ns.extend(range(10**18 + seq * n, 10**18 + seq * n + n))
    s.values.extend([float(i) for i in range(n)])
    return b.SerializeToString()


class Heard(IngestListener):
    """What the pipeline told its listener, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def decoded(self, batches) -> None:
        self.events.append(("decoded", [b.seq for b in batches]))

    def stored(self, batches) -> None:
        self.events.append(("stored", [b.seq for b in batches]))

    def evaluate(self, batches) -> None:
        self.events.append(("evaluate", [b.seq for b in batches]))

    def status(self, status) -> None:
        self.events.append(("status", run_pb2.RunState.Name(status.state)))

    def of(self, *kinds: str) -> list[tuple[str, object]]:
        return [e for e in self.events if e[0] in kinds]


class Harness:
    def __init__(self, tmp_path, store=None, **settings) -> None:
        self.store = store or DuckDBStore(str(tmp_path / "s.duckdb"))
        self.metrics = Metrics()
        self.commits: list[tuple[bytes, run_pb2.Commit]] = []
        self.acked: list[int] = []
        self.settings = BridgeSettings(**{"mqtt_url": "", "store": "duckdb:///unused.duckdb",
                                          "dead_letter_path": str(tmp_path / "dead.bin"),
                                          "parked_dir": str(tmp_path / "parked"), **settings})
        self.heard = Heard()
        self.ingest = Ingest(self.store, self.settings, self.metrics,
                             publish_commit=lambda pid, c: self.commits.append((pid, c)), listener=self.heard)

    def mqtt(self, payload: bytes, mid: int, topic_run=("p", "r"), kind: str = Kind.POINTS) -> Message:
        return Message(kind, payload, "mqtt", topic_run, ack=lambda: self.acked.append(mid))

    def count(self, project="p", run="r") -> int:
        return self.store.series(SeriesQuery(project, run, "loss", width=100000)).total


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    yield harness
    harness.store.close()


def _ranges(commit: run_pb2.Commit, field: str = "stored") -> list[tuple[int, int]]:
    return [(r.first, r.last) for r in getattr(commit, field)]


def test_batches_are_written_then_acknowledged_and_committed_per_producer(h):
    h.ingest.process([h.mqtt(batch(1), 11), h.mqtt(batch(2), 12), h.mqtt(batch(3), 13)])
    assert h.count() == 30
    assert h.acked == [11, 12, 13]
    assert [(pid, _ranges(c)) for pid, c in h.commits] == [(PID, [(1, 3)])]


def test_re_sent_batches_are_dropped_but_committed_again_even_after_a_restart(h, tmp_path):
    h.ingest.process([h.mqtt(batch(1), 1), h.mqtt(batch(1), 2)])
    h.ingest.process([h.mqtt(batch(1), 3)])
    assert h.count() == 10
    assert h.metrics.get(BATCHES_DUPLICATE) == 2
    h.store.close()
    again = Harness(tmp_path)  # a new bridge on the same store file
    again.ingest.process([again.mqtt(batch(1), 4), again.mqtt(batch(2), 5)])
    assert again.count() == 20
    assert _ranges(again.commits[0][1]) == [(1, 2)]
    again.store.close()


@pytest.mark.parametrize("payload, reason", [
    (b"\xff\xfe not protobuf", "undecodable"),
    (batch_pb2.Batch(version=2, producer_id=PID, seq=1, project="p", run="r").SerializeToString(), "unknown_version"),
    (batch_pb2.Batch(version=1, producer_id=b"", seq=1, project="p", run="r").SerializeToString(), "bad_producer"),
    (batch_pb2.Batch(version=1, producer_id=PID, seq=0, project="p", run="r").SerializeToString(), "bad_seq"),
    (batch_pb2.Batch(version=1, producer_id=PID, seq=1, project="", run="r").SerializeToString(), "bad_name"),
    (batch(1, project="other"), "topic_mismatch"),
])
def test_malformed_payloads_are_rejected_by_reason_acknowledged_and_dead_lettered(h, tmp_path, payload, reason):
    h.ingest.process([h.mqtt(payload, 7), h.mqtt(batch(5), 8)])
    assert h.metrics.get(REJECTED, reason=reason) == 1
    assert h.acked == [7, 8]
    assert h.count() == 10, "the valid batch beside it was stored"
    assert (tmp_path / "dead.bin").stat().st_size > len(payload)


def test_a_rejected_batch_with_a_producer_gets_a_rejected_commit_so_the_trainer_stops_resending(h):
    ragged = batch_pb2.Batch(version=1, producer_id=PID, seq=9, project="p", run="r")
    ragged.scalars.add(key="k", steps=[1], wall_ns=[1, 2], values=[1.0])
    h.ingest.process([h.mqtt(ragged.SerializeToString(), 1)])
    assert [(pid, _ranges(c, "rejected")) for pid, c in h.commits] == [(PID, [(9, 9)])]


def test_an_http_batch_gets_its_commit_or_its_rejection(h):
    from concurrent.futures import Future

    ok, bad = Future(), Future()
    h.ingest.process(
        [Message(Kind.POINTS, batch(1), "http", reply=ok), Message(Kind.POINTS, b"junk", "http", reply=bad)]
    )
    assert _ranges(ok.result(0)) == [(1, 1)]
    with pytest.raises(Rejected):
        bad.result(0)
    assert h.commits == [], "HTTP answers carry the commit; nothing is published"


def test_status_is_applied_in_order_and_a_last_will_is_dated_by_its_arrival(h):
    def status(state: int, updated_ns: int) -> bytes:
        return run_pb2.RunStatus(project="p", run="r", state=state, updated_ns=updated_ns).SerializeToString()

    h.ingest.process([h.mqtt(status(run_pb2.RUN_STATE_RUNNING, 100), 1, kind=Kind.STATUS)])
    lost = h.mqtt(status(run_pb2.RUN_STATE_LOST, 50), 2, kind=Kind.STATUS)  # composed at connect time
    lost.received_ns = 200
    h.ingest.process([lost])
    h.ingest.process([h.mqtt(status(run_pb2.RUN_STATE_RUNNING, 150), 3, kind=Kind.STATUS)])  # a late replay
    assert [r.state for r in h.store.runs()] == ["lost"]
    h.ingest.process([h.mqtt(status(run_pb2.RUN_STATE_RUNNING, 300), 4, kind=Kind.STATUS)])  # reconnected
    assert [r.state for r in h.store.runs()] == ["running"]


def test_a_status_riding_in_a_batch_reaches_the_listener_after_the_batchs_points(h):
    final = run_pb2.RunStatus(project="p", run="r", state=run_pb2.RUN_STATE_FINISHED, updated_ns=5)
    h.ingest.process([h.mqtt(batch(1, status=final), 1)])
    assert h.heard.of("evaluate", "status") == [("evaluate", [1]), ("status", "RUN_STATE_FINISHED")], \
        "a run ends after its last step"


class FlakyStore(DuckDBStore):
    def __init__(self, path: str, failures: int) -> None:
        super().__init__(path)
        self.failures = failures

    def write(self, batches):
        if self.failures:
            self.failures -= 1
            raise StoreUnavailable("down for a moment", retry_after_s=0.01)
        return super().write(batches)


def test_a_store_outage_delays_the_ack_until_the_write_succeeds(tmp_path):
    h = Harness(tmp_path, store=FlakyStore(str(tmp_path / "f.duckdb"), failures=3))
    h.ingest.process([h.mqtt(batch(1), 1)])
    assert h.acked == [1] and h.count() == 10
    assert h.metrics.get(STORE_ERRORS) == 3
    h.store.close()


class RefusingStore(DuckDBStore):
    def write(self, batches):
        if any(b.seq == 2 for b in batches):
            raise StoreRejected("field type conflict")
        return super().write(batches)


def test_a_batch_the_store_refuses_for_good_is_rejected_alone(tmp_path):
    h = Harness(tmp_path, store=RefusingStore(str(tmp_path / "r.duckdb")))
    h.ingest.process([h.mqtt(batch(1), 1), h.mqtt(batch(2), 2), h.mqtt(batch(3), 3)])
    assert h.count() == 20
    assert h.metrics.get(REJECTED, reason="store_refused") == 1
    assert sorted(h.acked) == [1, 2, 3]
    stored = [r for _, c in h.commits for r in _ranges(c)]
    rejected = [r for _, c in h.commits for r in _ranges(c, "rejected")]
    assert stored == [(1, 1), (3, 3)] and rejected == [(2, 2)]
    h.store.close()


def test_nan_and_infinity_survive_the_store(h):
    b = batch_pb2.Batch(version=1, producer_id=PID, seq=1, project="p", run="r")
    b.scalars.add(key="loss", steps=[0, 1, 2], wall_ns=[1, 2, 3], values=[math.nan, math.inf, -math.inf])
    h.ingest.process([h.mqtt(b.SerializeToString(), 1)])
    y = h.store.series(SeriesQuery("p", "r", "loss")).y
    assert math.isnan(y[0]) and y[1] == math.inf and y[2] == -math.inf


def test_fresh_batches_go_to_the_live_push_before_the_store_write_and_re_sends_do_not(h):
    write = h.store.write
    h.store.write = lambda batches: (h.heard.events.append(("write", len(batches))), write(batches))[1]
    h.ingest.process([h.mqtt(batch(1), 1), h.mqtt(batch(2), 2), h.mqtt(batch(1), 3)])
    h.ingest.process([h.mqtt(batch(2), 4)])  # a re-send of a stored batch: nothing new to show
    assert h.heard.of("decoded", "write", "stored") == [("decoded", [1, 2]), ("write", 2), ("stored", [1, 2])]


def test_a_submitted_batch_is_pushed_live_at_once_on_the_receiving_thread_and_decoded_once(h):
    h.ingest.submit(h.mqtt(batch(1), 1))  # the writer thread is not even running
    h.ingest.submit(h.mqtt(b"not a batch", 2))
    assert h.heard.of("decoded") == [("decoded", [1])]
    h.ingest.process(h.ingest.receiver.take(10, 10**6))
    assert h.heard.of("decoded") == [("decoded", [1])], "not pushed a second time by the writer"
    assert h.count() == 10 and h.acked == [2, 1]  # the undecodable one rejected (and acknowledged) by the writer
    assert h.metrics.get(REJECTED, reason="undecodable") == 1
