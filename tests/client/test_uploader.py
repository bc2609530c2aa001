"""The uploader's decisions, with an injected clock and exporters around a fake link and HTTP client (seams)."""

from __future__ import annotations

import time

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream.channels import FallbackPolicy
from curvestream.exporters import HttpExporter, MqttExporter
from curvestream.http_fallback import Permanent, Retryable
from curvestream.settings import Settings
from curvestream.spool import Spool
from curvestream.uploader import Uploader

PID = bytes(range(16))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeLink:
    def __init__(self, clock: Clock) -> None:
        self.connected = True
        self.down_since = clock.now
        self.last_error = ""
        self.refused = False
        self.sent: list[tuple[str, int]] = []
        self.polls = 0  # one per uploader round

    def poll(self) -> None:
        self.polls += 1

    def watch_commits(self, producer_id: bytes) -> None:
        pass

    def publish(self, topic: str, payload: bytes, retain: bool = False) -> bool:
        if not self.connected:
            return False
        self.sent.append((topic, batch_pb2.Batch.FromString(payload).seq))
        return True


class FakeHttp:
    def __init__(self) -> None:
        self.sent: list[int] = []
        self.fail: Exception | None = None

    def ingest(self, payload: bytes) -> run_pb2.Commit:
        seq = batch_pb2.Batch.FromString(payload).seq
        if self.fail is not None:
            raise self.fail
        self.sent.append(seq)
        return commit(seq, seq)

    def close(self) -> None:
        pass


def uploader(settings: Settings, link: FakeLink, http: FakeHttp | None = None, **kw) -> Uploader:
    """The uploader as the client assembles it, around fakes of the link and the HTTP client."""
    up: Uploader
    fallback = HttpExporter(http, lambda c: up.on_commit(c)) if http is not None else None  # type: ignore[arg-type]
    policy = FallbackPolicy(MqttExporter(link), fallback, settings.fallback_after_ms / 1000)  # type: ignore[arg-type]
    up = Uploader(settings, policy, tick=link.poll, **kw)
    return up


def commit(first: int, last: int, rejected: bool = False) -> run_pb2.Commit:
    c = run_pb2.Commit(producer_id=PID)
    (c.rejected if rejected else c.stored).add(first=first, last=last)
    return c


@pytest.fixture
def setup(tmp_path):
    clock = Clock()
    settings = Settings(spool_dir=str(tmp_path), ack_timeout_ms=5000, fallback_after_ms=3000, max_inflight_batches=4)
    spool = Spool.create(tmp_path, PID, "p", "r")
    for seq in range(1, 11):
        spool.append(seq, batch_pb2.Batch(version=1, producer_id=PID, seq=seq, project="p", run="r")
                     .SerializeToString(), now=0)
    spool.close_for_writing()
    link, http = FakeLink(clock), FakeHttp()
    up = uploader(settings, link, http, clock=clock)
    up.track(spool)
    yield clock, spool, link, http, up
    spool.release()


def test_batches_go_over_mqtt_within_the_window_and_leave_the_spool_only_when_committed(setup):
    _clock, spool, link, _http, up = setup
    up.pump()
    assert [s for _, s in link.sent] == [1, 2, 3, 4]  # the in-flight window
    assert spool.segments, "nothing is deleted on send"
    up.on_commit(commit(1, 4))
    up.pump()
    assert [s for _, s in link.sent] == list(range(1, 9))
    up.on_commit(commit(5, 10))
    up.pump()
    assert [s for _, s in link.sent] == list(range(1, 9)), "9 and 10 were committed before they were sent"
    assert up.outstanding_batches() == 0
    assert not spool.segments and not list(spool.dir.glob("*.seg"))


def test_a_batch_without_commit_is_sent_again_after_the_ack_timeout(setup):
    clock, _spool, link, _http, up = setup
    up.pump()
    up.on_commit(commit(1, 2))
    clock.now += 6
    up.pump()
    resent = [s for _, s in link.sent][4:]
    assert resent[:2] == [3, 4], "uncommitted 3 and 4 again, committed 1 and 2 never again"
    assert up.stats.resends == 2


def test_a_bridge_that_commits_slowly_behind_a_backlog_gets_no_batch_twice(setup):
    clock, _spool, link, _http, up = setup
    up.pump()
    for seq in (1, 2, 3, 4, 5, 6):  # one commit every 4 s: each batch waits far beyond the ack timeout
        clock.now += 4
        up.on_commit(commit(seq, seq))
        up.pump()
    assert up.stats.resends == 0
    assert [s for _, s in link.sent] == list(range(1, 11)), "each batch sent once"


def test_commits_of_old_duplicates_keep_a_backlogged_bridge_from_getting_the_window_again(setup):
    clock, _spool, link, _http, up = setup
    up.pump()  # 1..4 at t=0; the bridge is still working through earlier re-sends of other seqs
    for _ in range(5):
        clock.now += 3
        up.on_commit(commit(20, 20))  # a duplicate from long ago, committed again
        up.pump()
    assert up.stats.resends == 0
    assert [s for _, s in link.sent] == [1, 2, 3, 4]


def test_a_bridge_that_commits_less_often_than_the_ack_timeout_gets_no_more_resends_once_its_pace_is_known(setup):
    clock, _spool, _link, _http, up = setup
    up.pump()
    resends = []
    for second in range(1, 50):  # a commit every 7 s, longer than the 5 s ack timeout; a round every second
        clock.now += 1
        if second % 7 == 0:
            up.on_commit(commit(second // 7, second // 7))
        up.pump()
        resends.append(up.stats.resends)
    assert resends[-1] > 0, "before two commits, the window goes again after the ack timeout"
    assert resends[-1] == resends[20], "once commits come 7 s apart, nothing is sent twice"


def test_a_batch_overtaken_by_later_ones_is_sent_again_alone(setup):
    clock, _spool, link, _http, up = setup
    up.pump()  # 1..4 at t=0
    clock.now += 1
    up.on_commit(commit(2, 4))  # 1 was lost on the way
    up.pump()  # 5..7 at t=1
    clock.now += 2
    up.on_commit(commit(5, 5))
    up.pump()  # 8 at t=3
    clock.now += 3
    up.pump()
    assert [s for _, s in link.sent] == [1, 2, 3, 4, 5, 6, 7, 8, 1]
    assert up.stats.resends == 1


def test_without_any_commit_the_window_is_sent_again_less_and_less_often(setup):
    clock, _spool, link, _http, up = setup
    start, resent_at = clock.now, []
    up.pump()
    for _ in range(40):
        clock.now += 1
        before = len(link.sent)
        up.pump()
        if len(link.sent) > before:
            resent_at.append(clock.now - start)
    assert resent_at == [6, 17, 38], "after 5 s, then 10 s, then 20 s without a commit"
    assert up.stats.resends == 12


def test_waiting_for_commits_that_do_not_come_does_not_spin(tmp_path):
    settings = Settings(spool_dir=str(tmp_path), max_inflight_batches=4)
    spool = Spool.create(tmp_path, PID, "p", "r")
    spool.append(1, batch_pb2.Batch(version=1, producer_id=PID, seq=1, project="p", run="r").SerializeToString(), now=0)
    link = FakeLink(Clock())
    up = uploader(settings, link)
    up.track(spool)
    up.start()
    try:
        assert not up.wait_committed([PID], time.monotonic() + 1.0)
    finally:
        up.stop()
        spool.release()
    assert link.polls < 100, f"{link.polls} uploader rounds in one second of waiting: a busy loop"


def test_a_commit_wakes_the_uploader_only_when_its_window_is_full_or_someone_waits_for_commits(setup):
    clock, _spool, _link, _http, up = setup
    up.pump()  # 1..4 in flight: the window is full
    up._wake.clear()
    up.on_commit(commit(1, 4))
    assert up._wake.is_set(), "a full window waits for this commit: applied at once"
    up.pump()
    up.on_commit(commit(5, 8))
    up.pump()  # 9 and 10 in flight, room for two more
    up._wake.clear()
    up.on_commit(commit(9, 9))
    assert not up._wake.is_set(), "applied with the next round a flush or the round timer brings"
    woken = []

    def on_progress(left: int) -> None:
        up._wake.clear()
        up.on_commit(commit(10, 10))
        woken.append(up._wake.is_set())
        up.pump()

    assert up.wait_committed([PID], deadline=clock.now + 1, on_progress=on_progress)
    assert woken[0], "finish() waits for commits: each one wakes the uploader"


def test_broker_down_past_the_fallback_time_switches_to_http_and_back(setup):
    clock, _spool, link, http, up = setup
    link.connected = False
    link.down_since = clock.now
    up.pump()
    assert up.channel is None and not http.sent
    clock.now += 3.5
    up.pump()
    assert up.channel == "http" and http.sent == list(range(1, 11))
    assert up.outstanding_batches() == 0
    link.connected = True
    up.pump()
    assert up.channel == "mqtt" and link.sent == [], "nothing committed is sent again"


def test_http_errors_back_off_and_permanent_rejections_are_counted_not_retried(setup):
    clock, _spool, link, http, up = setup
    link.connected = False
    clock.now += 10
    http.fail = Retryable("down", retry_after_s=7)
    up.pump()
    http.fail = None
    clock.now += 5
    up.pump()
    assert http.sent == [], "Retry-After is honoured"
    clock.now += 3
    http.fail = Permanent("bad batch")
    up.pump()
    assert up.stats.batches_rejected == 10
    assert up.outstanding_batches() == 0


def test_a_rejected_commit_over_mqtt_lets_the_batch_go(setup):
    _clock, _spool, link, _http, up = setup
    up.pump()
    up.on_commit(commit(1, 4, rejected=True))
    up.pump()
    assert up.stats.batches_rejected == 4
    assert [s for _, s in link.sent][4:] == [5, 6, 7, 8]


def test_waiting_for_commits_goes_on_while_they_advance_and_gives_up_only_after_a_stall(setup):
    clock, _spool, _link, _http, up = setup
    seen: list[int] = []

    def on_progress(left: int) -> None:  # each look at the spool: 10 s later, one more commit for the first 6
        seen.append(left)
        if len(seen) <= 6:
            up.on_commit(commit(len(seen), len(seen)))
        up.pump()
        clock.now += 10

    started = clock.now
    assert up.wait_committed([PID], on_progress=on_progress, stall_s=25) is False
    assert seen[:7] == [10, 9, 8, 7, 6, 5, 4]  # counted batch by batch, inside one segment
    assert clock.now - started > 60  # far past the 25 s, because commits kept coming
    assert seen[-3:] == [4, 4, 4] and len(seen) == 10  # then 25 s without one: given up
    assert up.outstanding_batches() == 4


def test_waiting_for_commits_returns_once_everything_is_committed(setup):
    _clock, _spool, _link, _http, up = setup
    up.on_commit(commit(1, 10))
    up.pump()
    assert up.wait_committed([PID], stall_s=0.0) is True


def test_a_clock_far_behind_the_bridges_is_reported_once(tmp_path, caplog):
    year_ns = 365 * 24 * 3600 * 10**9
    clock = Clock()
    settings = Settings(spool_dir=str(tmp_path))
    up = uploader(settings, FakeLink(clock), clock=clock, wall_clock_ns=lambda: 10**18)
    for _ in range(3):
        up.on_commit(run_pb2.Commit(producer_id=PID, committed_ns=10**18 + year_ns))
    with caplog.at_level("WARNING", logger="curvestream.uploader"):
        up.pump()
    assert up.stats.clock_behind_s == year_ns / 1e9
    warnings = [r.getMessage() for r in caplog.records if "clock" in r.getMessage()]
    assert len(warnings) == 1 and "31536000 s behind the bridge's" in warnings[0]


class ScriptedExporter:
    """Any exporter: the uploader knows it by ``export()`` and its three outcomes only."""

    name = "pigeon"

    def __init__(self, outcomes: list) -> None:
        self.outcomes = outcomes
        self.sent: list[int] = []

    def export(self, topic: str, payload: bytes):
        from curvestream.exporters import SUCCESS

        outcome = self.outcomes.pop(0) if self.outcomes else SUCCESS
        self.sent.append(batch_pb2.Batch.FromString(payload).seq)
        return outcome

    def down_since(self) -> float | None:
        return None

    def refused(self) -> bool:
        return False

    def shutdown(self, timeout: float = 2.0) -> None:
        pass


def test_an_injected_exporter_gets_batches_and_its_three_outcomes_decide_their_fate(tmp_path):
    from curvestream.exporters import ExportResult, Outcome

    clock = Clock()
    spool = Spool.create(tmp_path, PID, "p", "r")
    for seq in range(1, 5):
        spool.append(seq, batch_pb2.Batch(seq=seq).SerializeToString(), now=0)
    spool.close_for_writing()
    pigeon = ScriptedExporter([Outcome(ExportResult.PERMANENT, detail="no"),
                               Outcome(ExportResult.RETRYABLE, retry_after_s=4.0)])
    up = Uploader(Settings(spool_dir=str(tmp_path)), FallbackPolicy(pigeon), clock=clock)
    up.track(spool)
    up.pump()
    assert pigeon.sent == [1, 2] and up.stats.batches_rejected == 1, "1 refused for good, 2 to be tried again"
    clock.now += 3
    up.pump()
    assert pigeon.sent == [1, 2], "not before its Retry-After"
    clock.now += 2
    up.pump()
    assert pigeon.sent == [1, 2, 2, 3, 4] and up.channel == "pigeon"
    assert up.outstanding_batches() == 3, "sent, not yet committed: still in the spool"
    up.on_commit(commit(2, 4))
    up.pump()
    assert up.outstanding_batches() == 0 and not spool.segments
    spool.release()


def test_a_batch_spooled_while_an_export_waits_for_the_bridge_is_sent_in_the_next_round(tmp_path):
    clock = Clock()
    spool = Spool.create(tmp_path, PID, "p", "r")
    spool.append(1, batch_pb2.Batch(seq=1).SerializeToString(), now=0)
    up: Uploader

    class SlowBridge(ScriptedExporter):
        def export(self, topic: str, payload: bytes):
            outcome = super().export(topic, payload)
            if self.sent == [1]:  # the flush loop appends the final batch meanwhile, and says so
                spool.append(2, batch_pb2.Batch(seq=2).SerializeToString(), now=0)
                up.spooled([PID])
            return outcome

    bridge = SlowBridge([])
    up = Uploader(Settings(spool_dir=str(tmp_path)), FallbackPolicy(bridge), clock=clock)
    up.track(spool)
    up.pump()
    up.pump()
    assert bridge.sent == [1, 2]
    spool.release()
