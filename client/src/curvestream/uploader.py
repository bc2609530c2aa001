"""Where spooled batches go out, and where they are let go.

One daemon thread (``curvestream-uploader``) reads records from every tracked
spool (all the runs of a process, and the leftovers of dead ones) in seq order
and hands them to the exporter its channel policy chooses (:mod:`.channels`,
:mod:`.exporters`), at most ``max_inflight_batches`` uncommitted per spool; it
knows an exporter by ``export()`` and its three outcomes only. With no exporter
to take them, the batches wait in the spool. A spool is read only when
something is new in it (appended, committed, to be sent again).

A batch leaves the spool only when a ``Commit`` from the bridge names it. When
no commit at all arrives for ``ack_timeout_ms`` (a bridge or broker restart, a
store outage), everything in flight is sent again, and the wait doubles after
each such round (up to 8×); while commits keep arriving, only a batch that a
later one overtook is sent again. The timeout stretches to twice the recent
time between commits (a bridge behind a backlog is slow, not gone). Everything uncommitted is sent again after a
channel change. The bridge drops re-sends by (producer, seq), so this is safe;
sending the whole window again while the bridge is merely behind would only
lengthen its backlog with duplicates.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from curvestream_wire.backoff import Backoff
from curvestream_wire.seqset import SeqSet
from curvestream_wire.topics import Topics
from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream.background import BackgroundLoop
from curvestream.channels import FallbackPolicy
from curvestream.exporters import Exporter, ExportResult
from curvestream.settings import Settings
from curvestream.spool import RECORD_HEAD_SIZE, Spool

__all__ = ["Uploader", "UploadStats"]

log = logging.getLogger("curvestream.uploader")

CLOCK_WARN_S = 300.0  # the bridge's default clock_skew_tolerance_s
LOST_LOOK_S = 0.2  # how often in-flight batches are looked at for an ack timeout
BUSY_ROUND_S = 0.25  # a round at least this often while batches are in flight (commits are applied in rounds)


@dataclasses.dataclass
class UploadStats:
    batches_sent: dict[str, int] = dataclasses.field(default_factory=dict)  # by exporter name
    batches_committed: int = 0
    batches_rejected: int = 0
    resends: int = 0
    export_errors: int = 0
    last_error: str = ""
    clock_behind_s: float = 0.0  # the bridge's clock minus this machine's, at the last commit (network delay included)
    points_dropped: int = 0  # points of stored batches the store left out on purpose (e.g. its retention policy)
    dropped_reasons: list[str] = dataclasses.field(default_factory=list)  # why, each reason once

    @property
    def batches_sent_mqtt(self) -> int:
        return self.batches_sent.get("mqtt", 0)

    @property
    def batches_sent_http(self) -> int:
        return self.batches_sent.get("http", 0)


@dataclasses.dataclass
class _Tracked:
    spool: Spool
    topic: str
    committed: SeqSet = dataclasses.field(default_factory=SeqSet)
    rejected: SeqSet = dataclasses.field(default_factory=SeqSet)
    cursor: tuple[int, int] | None = None  # (segment first_seq, byte offset of the next record)
    inflight: dict[int, float] = dataclasses.field(default_factory=dict)
    finished: bool = False  # owner closed it: no more appends
    progress_at: float = 0.0  # when a commit last arrived
    newest_committed_sent: float = float("-inf")  # send time of the newest batch a commit took
    stalls: int = 0  # ack timeouts in a row without any commit
    commit_gap: float = 0.0  # time between commits lately (a decaying maximum), seconds
    wall_clock_ns: Callable[[], int] | None = None  # the clock of the run that spools here (its send times)
    unsent: bool = True  # the spool may hold batches not yet sent: read it in the next round
    freeable: bool = False  # commits arrived: closed segments may be deleted (looked at once one is closed)

    def outstanding(self) -> list[tuple[int, int]]:
        """Uncommitted (first, last) seq ranges, segment by segment."""
        return [
            (s.first_seq, s.last_seq)
            for s in self.spool.snapshot()
            if s.records and not self.committed.covers(s.first_seq, s.last_seq)
        ]

    def uncommitted(self) -> int:
        """Batches in the spool that no commit names yet (counted one by one, so progress inside a segment shows)."""
        return sum(last - first + 1 - self.committed.count_within(first, last) for first, last in self.outstanding())


class Uploader(BackgroundLoop):
    """``policy`` picks the exporter of each round; ``tick`` (if any) is called at the start of
    every round on the uploader's thread (the owner's chance to tend its connection)."""

    thread_name = "curvestream-uploader"

    def __init__(
        self,
        settings: Settings,
        policy: FallbackPolicy,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ns: Callable[[], int] = time.time_ns,
        tick: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.policy = policy
        self._tick = tick
        self.stats = UploadStats()
        self._clock = clock
        self._wall_clock_ns = wall_clock_ns
        self._clock_warned = False
        self._tracked: dict[bytes, _Tracked] = {}
        self._commits: collections.deque[tuple[float, run_pb2.Commit]] = collections.deque()
        self._exporter: Exporter | None = None
        self._retry_at = 0.0  # the current exporter failed: not before then
        self._lost_looked_at = float("-inf")
        self._backoff = Backoff(initial_s=0.5, max_s=10.0)
        self._lock = threading.Lock()
        self._waiters = 0  # threads in wait_committed(): commits wake the uploader at once
        self.progress = threading.Condition()
        self.on_freed: Callable[[list[Spool]], None] | None = None  # these spools' space was freed
        self.on_event: Callable[[str, str, str], None] | None = None
        """Told on the uploader's thread what a user may want to hear, as (event, exporter name,
        detail): ``fallback`` when the policy turns to its fallback exporter, ``waiting`` in each
        round no exporter takes batches, ``failed`` when an export failed and waits for a retry."""

    # ------------------------------------------------------------------ wiring
    def track(self, spool: Spool, wall_clock_ns: Callable[[], int] | None = None) -> None:
        """Send this spool's batches; ``wall_clock_ns``: the clock its run dates points by
        (the send time is taken from it), the uploader's own by default."""
        tracked = _Tracked(spool, Topics.points(spool.project, spool.run), wall_clock_ns=wall_clock_ns)
        with self._lock:
            self._tracked = {**self._tracked, spool.producer_id: tracked}
        self.wake()

    def untrack(self, producer_id: bytes) -> SeqSet:
        """Stop sending this producer's spool; returns what the bridge committed of it."""
        with self._lock:
            tracked = self._tracked.get(producer_id)
            self._tracked = {p: t for p, t in self._tracked.items() if p != producer_id}
        return tracked.committed if tracked is not None else SeqSet()

    def spooled(self, producer_ids: list[bytes]) -> None:
        """New batches in these spools (the flush loop, after its sync)."""
        tracked = self._tracked
        for producer_id in producer_ids:
            t = tracked.get(producer_id)
            if t is not None:
                t.unsent = True
        self._wake.set()

    def on_commit(self, commit: run_pb2.Commit) -> None:
        """Thread-safe: called by paho's thread or after an HTTP answer.

        The commit is applied in the uploader's next round: at once when someone waits for
        commits or the producer's window is full, else with the round the next flush or the
        round timer brings (within ``BUSY_ROUND_S``). A hundred runs get ~500 commits a
        second: a round for each was most of the uploader's time."""
        self._commits.append((self._clock(), commit))
        if self._waiters:
            self.wake()
            return
        tracked = self._tracked.get(commit.producer_id)
        if tracked is not None and len(tracked.inflight) >= self.settings.max_inflight_batches:
            self.wake()

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        for exporter in self.policy.exporters:
            exporter.shutdown(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.pump()
            except Exception:
                log.exception("curvestream: uploader round failed")
                self._stop.wait(0.5)
            self._wake.wait(self._idle_wait())
            self._wake.clear()

    def _idle_wait(self) -> float:
        """Seconds until the next round unless woken: timers (ack timeouts, a backoff, the
        fallback) want a look now and then; with nothing in flight, rarely."""
        busy = any(t.inflight or t.unsent for t in self._tracked.values())
        return BUSY_ROUND_S if busy or self._exporter is None else 1.0

    # ------------------------------------------------------------------ queries
    def is_committed(self, producer_id: bytes, first: int, last: int) -> bool:
        tracked = self._tracked.get(producer_id)
        return tracked is not None and tracked.committed.covers(first, last)

    def outstanding_batches(self, producer_ids: list[bytes] | None = None) -> int:
        """Batches not yet committed, of these producers (all when None)."""
        tracked = self._tracked
        wanted = tracked.values() if producer_ids is None else [tracked[p] for p in producer_ids if p in tracked]
        return sum(t.uncommitted() for t in wanted)

    def rejected_batches(self, producer_ids: list[bytes]) -> int:
        """Batches of these producers the bridge refused for good."""
        tracked = self._tracked
        return sum(len(tracked[p].rejected) for p in producer_ids if p in tracked)

    @property
    def channel(self) -> str | None:
        """The name of the exporter batches go to now (None: they wait in the spool)."""
        return self._exporter.name if self._exporter is not None else None

    # ------------------------------------------------------------------ one round
    def pump(self) -> None:
        now = self._clock()
        if self._tick is not None:
            self._tick()
        self._apply_commits()
        tracked = list(self._tracked.values())
        freed_by: list[Spool] = []
        for t in tracked:
            segments = t.spool.segments
            if t.freeable and segments and segments[0].closed:  # only closed segments are deleted: none, no look
                t.freeable = False
                if t.spool.drop_committed(t.committed.covers):
                    freed_by.append(t.spool)
        if freed_by and self.on_freed is not None:
            self.on_freed(freed_by)
        exporter = self.policy.choose(now)
        if exporter is not self._exporter:
            if exporter is not None:
                log.info("curvestream: sending over %s", exporter.name)
                if exporter is self.policy.fallback:
                    self._tell("fallback", exporter.name, "")
            self._exporter = exporter
            self._retry_at = 0.0
            self._backoff.reset()
            for t in tracked:
                self._rewind(t)
        if exporter is None:
            self._tell("waiting", "", "")
            return
        if now < self._retry_at:
            return
        timeout = self.settings.ack_timeout_ms / 1000
        window = self.settings.max_inflight_batches
        look_for_lost = now >= self._lost_looked_at + LOST_LOOK_S  # timers of seconds: not at every commit
        if look_for_lost:
            self._lost_looked_at = now
        for t in tracked:
            if look_for_lost:
                self._resend_lost(t, now, timeout)
            if t.unsent and len(t.inflight) < window and not self._send_from(t, exporter, now):
                break

    def _resend_lost(self, t: _Tracked, now: float, timeout: float) -> None:
        if not t.inflight:
            return
        # a bridge whose commits come further apart than the ack timeout is behind, not gone: wait twice its pace
        timeout = max(timeout, 2 * t.commit_gap)
        quiet_since = max(min(t.inflight.values()), t.progress_at)
        if now - quiet_since > timeout * 2 ** min(t.stalls, 3):  # nothing committed: all of it again
            self.stats.resends += len(t.inflight)
            t.stalls += 1
            self._rewind(t)
            return
        overtaken = [seq for seq, sent in t.inflight.items() if sent < t.newest_committed_sent and now - sent > timeout]
        if overtaken:  # lost on the way while later batches arrived (a broker restart between them)
            self.stats.resends += len(overtaken)
            for seq in overtaken:
                del t.inflight[seq]
            t.cursor = None
            t.unsent = True

    @staticmethod
    def _rewind(t: _Tracked) -> None:
        t.cursor = None
        t.inflight.clear()
        t.unsent = True

    def _tell(self, event: str, exporter: str, detail: str) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event, exporter, detail)
            except Exception:
                log.exception("curvestream: telling %s failed", event)

    def _apply_commits(self) -> None:
        changed = False
        while self._commits:
            arrived, commit = self._commits.popleft()
            self._compare_clocks(commit)
            tracked = self._tracked.get(commit.producer_id)
            if tracked is None:
                continue
            for r in commit.stored:
                tracked.committed.add(r.first, r.last)
            for r in commit.rejected:
                tracked.rejected.add(r.first, r.last)
                tracked.committed.add(r.first, r.last)
                self.stats.batches_rejected += r.last - r.first + 1
                log.error(
                    "curvestream: the bridge rejected batches %d..%d for good (%s)", r.first, r.last, commit.bridge_id
                )
            for d in commit.dropped:
                self.stats.points_dropped += d.points
                if d.reason not in self.stats.dropped_reasons:  # said once per reason; counted always
                    self.stats.dropped_reasons.append(d.reason)
                    log.warning("curvestream: the bridge stored batches %d..%d without %d point(s): %s (%s)",
                                d.batches.first, d.batches.last, d.points, d.reason, commit.bridge_id)
            # any commit, even of a re-sent duplicate, shows the bridge working through what we sent
            if tracked.progress_at:
                tracked.commit_gap = max(arrived - tracked.progress_at, 0.9 * tracked.commit_gap)
            tracked.progress_at, tracked.stalls = max(tracked.progress_at, arrived), 0
            tracked.freeable = True
            for seq in [s for s in tracked.inflight if s in tracked.committed]:
                tracked.newest_committed_sent = max(tracked.newest_committed_sent, tracked.inflight.pop(seq))
                self.stats.batches_committed += 1
            changed = True
        if changed:
            with self.progress:
                self.progress.notify_all()

    def _compare_clocks(self, commit: run_pb2.Commit) -> None:
        if not commit.committed_ns:
            return
        self.stats.clock_behind_s = (commit.committed_ns - self._wall_clock_ns()) / 1e9
        if abs(self.stats.clock_behind_s) > CLOCK_WARN_S and not self._clock_warned:
            self._clock_warned = True
            log.warning("curvestream: this machine's clock is %.0f s %s the bridge's; the bridge corrects the "
                        "times of points from a clock that far off (docs/clock-skew.md)",
                        abs(self.stats.clock_behind_s), "behind" if self.stats.clock_behind_s > 0 else "ahead of")

    def _send_from(self, t: _Tracked, exporter: Exporter, now: float) -> bool:
        """Send what the window allows; False when the exporter failed (stop this round).

        ``unsent`` is cleared before the spool is looked at, and set again when something is
        left: a batch the flush loop appends meanwhile (while an export waits for the bridge)
        sets it again, where clearing it after reading would lose that news for good."""
        window = self.settings.max_inflight_batches
        t.unsent = False
        if t.cursor is not None:  # the usual case: the batches appended since the last round, from memory
            first, offset = t.cursor
            while len(t.inflight) < window:
                fresh = t.spool.pop_fresh(first, offset)
                if fresh is None:
                    break
                seq, payload = fresh
                if seq not in t.committed and not self._send_one(t, exporter, seq, payload, now):
                    t.unsent = True
                    return False  # the batch is read from the file next time
                offset += RECORD_HEAD_SIZE + len(payload)
                t.cursor = (first, offset)
            if t.spool.ends_at(first, offset):
                return True
            if len(t.inflight) >= window:
                t.unsent = True
                return True
        segments = t.spool.snapshot()
        start = 0
        if t.cursor is not None:
            while start < len(segments) and segments[start].first_seq < t.cursor[0]:
                start += 1
        for seg in segments[start:]:
            offset = t.cursor[1] if t.cursor is not None and t.cursor[0] == seg.first_seq else seg.data_start
            for pos, seq, payload in t.spool.read_from(seg, offset):
                if seq in t.committed or seq in t.inflight:
                    t.cursor = (seg.first_seq, pos + RECORD_HEAD_SIZE + len(payload))
                    continue
                if len(t.inflight) >= window:
                    t.unsent = True
                    return True
                if not self._send_one(t, exporter, seq, payload, now):
                    t.unsent = True
                    return False
                t.cursor = (seg.first_seq, pos + RECORD_HEAD_SIZE + len(payload))
            if not seg.closed:
                break
        return True  # read to the end: nothing more until the next append, commit or rewind

    def _send_one(self, t: _Tracked, exporter: Exporter, seq: int, payload: bytes, now: float) -> bool:
        """Hand one batch to the exporter; False when it failed (it is tried again after a backoff)."""
        outcome = exporter.export(t.topic, payload + self._sent_now(t.wall_clock_ns or self._wall_clock_ns))
        if outcome.result is ExportResult.SUCCESS:
            t.inflight[seq] = now
            self.stats.batches_sent[exporter.name] = self.stats.batches_sent.get(exporter.name, 0) + 1
            self._backoff.reset()
            if self._commits:  # an exporter that answers with the commit (a direct write)
                self._apply_commits()
            return True
        if outcome.result is ExportResult.PERMANENT:
            t.rejected.add(seq, seq)
            t.committed.add(seq, seq)
            t.freeable = True
            self.stats.batches_rejected += 1
            log.error("curvestream: the bridge rejected batch %d for good: %s", seq, outcome.detail)
            return True
        self.stats.export_errors += 1
        self.stats.last_error = outcome.detail
        delay = self._backoff.next_delay(outcome.retry_after_s)
        self._retry_at = now + delay
        log.debug("curvestream: %s export failed, retrying in %.1fs: %s", exporter.name, delay, outcome.detail)
        self._tell("failed", exporter.name, outcome.detail)
        return False

    @staticmethod
    def _sent_now(wall_clock_ns: Callable[[], int]) -> bytes:
        """The send time as a serialized ``sent_ns`` field: appended to a spooled batch, it sets
        that field (protobuf merges concatenated messages), without decoding the batch."""
        return batch_pb2.Batch(sent_ns=wall_clock_ns()).SerializeToString()

    # ------------------------------------------------------------------ waiting
    def wait_committed(self, producer_ids: list[bytes], deadline: float = float("inf"),
                       on_progress: Callable[[int], None] | None = None, stall_s: float | None = None) -> bool:
        """Block until every spooled batch of these producers is committed; False at the
        deadline, or once ``stall_s`` seconds pass without a single new commit."""
        with self._lock:
            self._waiters += 1
        try:
            return self._wait_committed(producer_ids, deadline, on_progress, stall_s)
        finally:
            with self._lock:
                self._waiters -= 1

    def _wait_committed(self, producer_ids: list[bytes], deadline: float,
                        on_progress: Callable[[int], None] | None, stall_s: float | None) -> bool:
        fewest, progressed_at = None, self._clock()
        while True:
            left = sum(self._tracked[p].uncommitted() for p in producer_ids if p in self._tracked)
            if on_progress is not None:
                on_progress(left)
            if left == 0:
                return True
            now = self._clock()
            if fewest is None or left < fewest:
                fewest, progressed_at = left, now
            remaining = deadline - now
            if stall_s is not None:
                remaining = min(remaining, progressed_at + stall_s - now)
            if remaining <= 0:
                return False
            self.wake()
            with self.progress:
                self.progress.wait(min(remaining, 0.2))
