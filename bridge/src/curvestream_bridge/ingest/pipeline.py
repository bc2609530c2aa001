"""The ingest pipeline: its stages, and the two threads that run them.

    receive -> decode/validate -> dedupe -> write (retry/park) -> settle (ack + commit) -> notify

:mod:`.receive` decodes each message and pushes it live on the thread that
received it, then queues it. The *round* thread takes what the queue holds,
rejects what does not decode (:mod:`.decoding`), drops re-sends
(:mod:`.dedupe`) and hands the round to the *writer* thread, which writes its
fresh batches in one store write (:mod:`.write`), tells the listener
(:mod:`.notify`: the alert engine saves its state before the commit), and only
then acknowledges the messages and commits each producer's seqs
(:mod:`.settle`), then applies the round's run statuses and metadata
(:mod:`.runs`). So decoding, dedupe and the live push of the next messages
run while the current write is in flight, and a message is still
acknowledged only after its write.

A store outage stops the writer without acknowledging anything: the broker
keeps the messages and the trainers keep their spools. A chart drops a point
it already holds (a re-send), and a batch the store later refuses for good
stays on an open chart until it reloads.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Container
from typing import Any

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import Rejected
from curvestream_bridge.ingest.decoding import Decoder
from curvestream_bridge.ingest.dedupe import Dedupe
from curvestream_bridge.ingest.listener import IngestListener
from curvestream_bridge.ingest.message import Kind, Message
from curvestream_bridge.ingest.notify import Notifier
from curvestream_bridge.ingest.receive import Receiver
from curvestream_bridge.ingest.retry import Retrier, Stopping, why
from curvestream_bridge.ingest.runs import RunMessages
from curvestream_bridge.ingest.settle import PublishCommit, Settler
from curvestream_bridge.ingest.write import Writer
from curvestream_bridge.metrics import (
    BATCHES_DUPLICATE,
    INGEST_QUEUE_BYTES,
    INGEST_QUEUE_DEPTH,
    INGEST_ROUND_MESSAGES,
    INGEST_ROUNDS,
    INGEST_STAGE_SECONDS,
    PARKED_BATCHES,
    STORE_UNEXPECTED_ERRORS,
    Metrics,
)
from curvestream_bridge.parked import ParkedBatches
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.retained import RetainedRuns
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import StoreUnavailable, StoreWriter

__all__ = ["Ingest", "Round"]

log = logging.getLogger("curvestream.bridge.ingest")

Item = tuple[Message, DecodedBatch]


@dataclasses.dataclass
class Round:
    """What one store write handles: fresh batches, re-sends, and run messages."""

    fresh: list[Item] = dataclasses.field(default_factory=list)
    duplicates: list[Item] = dataclasses.field(default_factory=list)  # stored already
    waiting: list[Item] = dataclasses.field(default_factory=list)  # re-sends of batches in flight when prepared
    others: list[Message] = dataclasses.field(default_factory=list)

    @property
    def messages(self) -> list[Message]:
        return [m for m, _ in (*self.fresh, *self.duplicates, *self.waiting)] + self.others


class Ingest:
    def __init__(self, store: StoreWriter, settings: BridgeSettings, metrics: Metrics,
                 publish_commit: PublishCommit | None = None, listener: IngestListener | None = None,
                 deleted: Container[tuple[str, str]] = frozenset()) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.listener = listener if listener is not None else IngestListener()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._rounds: queue.Queue[Round] = queue.Queue(maxsize=1)  # one round prepared while one is written
        self._ratelog = RateLimitedLog(log)
        self.clocks = ClockSkew(settings.clock_skew_tolerance_s, settings.clock_skew_certain_after_s, metrics)
        self.parked = ParkedBatches(settings.parked_dir) if settings.parked_dir else None
        self.retry = Retrier(self._stop, metrics, self._ratelog)
        self.deleted = deleted  # (project, run) of deleted runs: whatever comes for them is refused
        self.decode = Decoder(settings.max_payload_bytes, settings.max_batch_points, self.clocks, deleted)
        self.notify = Notifier(self.listener, self.retry, metrics, on_ended=self._ended)
        self.receiver = Receiver(self.decode, self.notify, settings.ingest_queue_messages,
                                 settings.ingest_queue_mb << 20)
        self.dedupe = Dedupe(self._ranges_of, settings.ingest_dedupe_producers, on_error=self._ranges_failed)
        self.writer = Writer(store, self.retry, metrics, self._ratelog, self.parked,
                             settings.unexpected_error_attempts)
        self.settler = Settler(settings.bridge_id, metrics, self._ratelog, publish_commit, self.parked,
                               settings.dead_letter_path, getattr(store, "take_dropped", None))
        self.runs = RunMessages(store, self.retry, self.clocks, self.notify)
        # a run learnt from retained messages only waits here until it proves real (see retained.py)
        self.retained = RetainedRuns(lambda: {(r.project, r.run) for r in getattr(store, "runs", list)()})
        metrics.gauge_fn(INGEST_QUEUE_DEPTH, self.receiver.qsize)
        metrics.gauge_fn(INGEST_QUEUE_BYTES, lambda: self.receiver.bytes)
        if self.parked is not None:
            parked = self.parked
            metrics.gauge_fn(PARKED_BATCHES, lambda: parked.count)

    # ------------------------------------------------------------------ state the API shows
    @property
    def healthy(self) -> bool:
        return self.retry.healthy and self.writer.parking_ok

    @property
    def unexpected_error(self) -> str:
        return self.writer.unexpected_error

    @property
    def last_unexpected_error(self) -> str:
        return self.writer.last_unexpected_error

    @property
    def publish_commit(self) -> PublishCommit | None:
        return self.settler.publish_commit

    @publish_commit.setter
    def publish_commit(self, fn: PublishCommit | None) -> None:
        self.settler.publish_commit = fn

    # ------------------------------------------------------------------ sources
    def submit(self, message: Message, timeout: float | None = None) -> None:
        """Blocks while the receive window is full: that is the backpressure on the broker."""
        self.receiver.submit(message, timeout)

    def submit_http(self, payload: bytes, timeout: float = 60.0) -> run_pb2.Commit:
        """The direct-write path: returns the Commit, raises Rejected or StoreUnavailable."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            self.submit(Message(Kind.POINTS, payload, "http", reply=future), timeout=timeout)
        except queue.Full:
            raise StoreUnavailable("ingest queue full", retry_after_s=1.0) from None
        return future.result(timeout=timeout)

    def between_rounds(self, task: Callable[[], Any], timeout: float) -> Any:
        """Run ``task`` on the writer thread after the writes of the messages received
        before it; its result, or its error. TimeoutError when the writer has not run
        it within ``timeout`` (it still runs when the writer gets to it)."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            self.submit(Message(Kind.TASK, b"", "api", reply=future, task=task), timeout=timeout)
            return future.result(timeout=timeout)
        except (queue.Full, concurrent.futures.TimeoutError):
            raise TimeoutError("the bridge's writer is busy; try again") from None

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._threads = [threading.Thread(target=self._prepare_forever, name="curvestream-ingest-rounds", daemon=True),
                         threading.Thread(target=self._write_forever, name="curvestream-ingest", daemon=True)]
        for t in self._threads:
            t.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)

    def _prepare_forever(self) -> None:
        most, points = self.settings.ingest_round_messages, self.settings.write_max_points
        linger_s = self.settings.ingest_round_linger_ms / 1000
        last_size, last_at = 0, 0.0
        while not self._stop.is_set():
            messages = self.receiver.take(most, points, 0.2)
            if not messages:
                continue
            # under fan-in (the last round was large), a round fills for a while: each series then comes
            # with several batches, and its per-round costs (alerts, rollups) are paid once for all of them
            wait = last_at + linger_s - time.monotonic()
            if last_size >= self.settings.ingest_round_linger_from and wait > 0 and len(messages) < most:
                self._stop.wait(wait)
                messages += self.receiver.take(most - len(messages), points)
            last_size, last_at = len(messages), time.monotonic()
            started = time.perf_counter()
            try:
                r = self.prepare(messages)
                self._timed("prepare", started)
            except Stopping:
                return
            except Exception:
                log.exception("curvestream bridge: preparing an ingest round failed; messages stay unacknowledged")
                _fail_replies(messages)
                continue
            while True:
                try:
                    self._rounds.put(r, timeout=0.2)
                    break
                except queue.Full:
                    if self._stop.is_set():
                        return

    def _write_forever(self) -> None:
        while not self._stop.is_set():
            try:
                r = self._rounds.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.write_round(r)
            except Stopping:
                return
            except Exception:
                log.exception("curvestream bridge: ingest round failed; messages stay unacknowledged")
                _fail_replies(r.messages)

    # ------------------------------------------------------------------ one round
    def process(self, messages: list[Message]) -> None:
        """One round, start to end, on the calling thread."""
        self.write_round(self.prepare(messages))

    def prepare(self, messages: list[Message]) -> Round:
        """Decode (what was not decoded when received), reject, dedupe."""
        r = Round()
        points: list[tuple[Message, DecodedBatch, bool]] = []
        for m in messages:
            if m.kind != Kind.POINTS:
                r.others.append(m)
                continue
            pushed = m.decoded is not None
            try:
                batch = self.decode(m)
            except Rejected as rej:
                self.settler.reject(m, rej)
                continue
            points.append((m, batch, pushed))
        self.dedupe.learn(b.producer_id for _, b, _ in points)
        in_round: set[tuple[bytes, int]] = set()
        unpushed = []
        for m, b, pushed in points:
            ident = (b.producer_id, b.seq)
            if ident in in_round:
                r.duplicates.append((m, b))
            elif self.dedupe.is_duplicate(*ident):
                (r.duplicates if self.dedupe.is_stored(*ident) else r.waiting).append((m, b))
            else:
                in_round.add(ident)
                self.dedupe.claim(*ident)
                r.fresh.append((m, b))
                if not pushed:
                    unpushed.append(b)
        self.notify.decoded(unpushed)  # not submitted (a replay, a direct call): pushed now
        return r

    def write_round(self, r: Round) -> None:
        """Write, notify, settle; then the run messages."""
        fresh = list(r.fresh)
        duplicates = list(r.duplicates)
        for m, b in r.waiting:  # its original is stored by now, or was given up: then this one is written
            if self.dedupe.is_stored(b.producer_id, b.seq):
                duplicates.append((m, b))
            else:
                self.dedupe.claim(b.producer_id, b.seq)
                fresh.append((m, b))
        parked: list[Item] = []
        started = time.perf_counter()
        try:
            if fresh:
                refused, failed = self.writer.write([b for _, b in fresh])
                started = self._timed("write", started)
                kept = []
                for m, b in fresh:
                    if id(b) in refused:
                        self.settler.reject(m, Rejected("store_refused", refused[id(b)], b.producer_id, b.seq))
                    elif id(b) in failed:
                        self.writer.park(m, b, failed[id(b)])
                        parked.append((m, b))
                    else:
                        kept.append((m, b))
                self.dedupe.released([(b.producer_id, b.seq) for m, b in fresh if id(b) in refused or id(b) in failed])
                fresh = kept
                self.dedupe.stored([(b.producer_id, b.seq) for _, b in fresh])
        except BaseException:
            self.dedupe.released([(b.producer_id, b.seq) for _, b in fresh])
            raise
        self.notify.stored(fresh)
        if duplicates:
            self.metrics.inc(BATCHES_DUPLICATE, len(duplicates))
        for m, _ in [*fresh, *duplicates]:
            if m.parked is not None and self.parked is not None:
                self.parked.remove(m.parked)  # replayed: it left the parked set
        started = self._timed("stored", started)
        self.notify.evaluate([b for _, b in [*fresh, *duplicates]])
        started = self._timed("evaluate", started)
        for _, b in fresh:  # a status riding in a batch comes after its points (a run ends after its last step)
            if b.status is not None:
                self.notify.status(b.status)
        self.settler.commit([*fresh, *parked, *duplicates])  # a parked batch is the bridge's now: the spool may let go
        self._timed("settle", started)
        self.metrics.inc(INGEST_ROUNDS)
        self.metrics.inc(INGEST_ROUND_MESSAGES, len(fresh) + len(duplicates) + len(parked))
        for m in self.retained.stored((b.project, b.run) for _, b in fresh):  # held back until a point came
            self._run_message(m)
        for m in r.others:
            self._run_message(m)

    def _run_message(self, m: Message) -> None:
        """A status or metadata: applied (after what was held of its run), held, or rejected;
        or a task, run."""
        if m.kind == Kind.TASK:
            return self._task(m)
        assert m.topic_run is not None
        if m.topic_run in self.deleted:  # a retained message, or a trainer still running: the run stays deleted
            self.settler.reject(m, Rejected("run_deleted", f"run {m.topic_run[0]}/{m.topic_run[1]} was deleted"))
            return
        if self.retained.hold(m):
            return
        for held in self.retained.release(m.topic_run):
            self._run_message(held)
        try:
            self.runs.apply(m)
        except Rejected as rej:
            self.settler.reject(m, rej)
            return
        if m.ack is not None:
            m.ack()

    def _task(self, m: Message) -> None:
        assert m.task is not None and m.reply is not None
        try:
            m.reply.set_result(self.retry(m.task))
        except Stopping:
            raise
        except BaseException as exc:
            m.reply.set_exception(exc)

    # ------------------------------------------------------------------ inside
    def _timed(self, stage: str, started: float) -> float:
        """Count the time since ``started`` to ``stage``; the time now (where the next stage starts)."""
        now = time.perf_counter()
        self.metrics.inc(INGEST_STAGE_SECONDS, now - started, stage=stage)
        return now

    def _ranges_of(self, producer_ids: list[bytes]) -> dict[bytes, list[tuple[int, int]]]:
        many = getattr(self.store, "stored_ranges_many", None)
        if many is not None:
            return self.retry(lambda: many(producer_ids))
        return {pid: self.retry(functools.partial(self.store.stored_ranges, pid)) for pid in producer_ids}

    def _ranges_failed(self, exc: Exception) -> None:
        self.metrics.inc(STORE_UNEXPECTED_ERRORS)
        self._ratelog.warning("unexpected ranges", "curvestream bridge: unexpected store error reading the stored "
                              "batches of producers (asked again next time): %s", why(exc),
                              level=logging.ERROR, exc_info=exc)

    def _ended(self, status: run_pb2.RunStatus) -> None:
        """A run finished or failed: its producer's seqs and clock are let go (read again if it sends more)."""
        producer = bytes(status.producer_id)
        if producer:
            self.dedupe.forget(producer)
            self.clocks.forget(producer)


def _fail_replies(messages: list[Message]) -> None:
    for m in messages:
        if m.reply is not None and not m.reply.done():
            m.reply.set_exception(StoreUnavailable("internal error", 1.0))
