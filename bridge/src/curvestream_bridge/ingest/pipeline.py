"""The ingest pipeline: one writer thread between the sources (MQTT, HTTP) and
the store.

For each message: decode and validate (a rejection is counted, logged,
dead-lettered, acknowledged and answered with a ``rejected`` commit so the
trainer stops re-sending it); drop re-sends by (producer, seq); write the
fresh batches of a round in one store write; only then acknowledge the MQTT
messages and publish the commit to each producer. A store outage stops the
loop without acknowledging anything, so the broker keeps the messages and the
trainers keep their spools.

What a store error does to a batch (engines map their errors, see
``store.base``): ``StoreUnavailable`` waits and retries for as long as it lasts;
``StoreRejected`` rejects the batch alone (written one by one to find it);
anything else is unexpected: the write is retried with backoff while the alarm
is up (log, ``curvestream_store_unexpected_errors_total``, ``/readyz``), then
the batches it still fails on are parked (``parked.py``) and only then
committed, so a bug never costs a point and a poison batch never holds up the
stream.

Live push: a points message is decoded as it is submitted, on the thread that
received it (MQTT's, HTTP's), and handed to ``on_decoded`` at once: an open
chart sees the point without waiting for the store write, nor for the write of
the round before it; the writer thread then uses that decoded batch. A chart
drops a point it already holds (a re-send), and a batch the store later refuses
for good stays on an open chart until it reloads.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import queue
import struct
import threading
import time
from typing import Callable

from curvestream_wire.backoff import Backoff
from curvestream_wire.seqset import SeqSet
from curvestream_wire.v1 import run_pb2

from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import DecodedBatch, Rejected, decode_batch, decode_meta, decode_status
from curvestream_bridge.metrics import (
    BATCHES_DUPLICATE,
    BATCHES_INGESTED,
    BATCHES_PARKED,
    INGEST_LAG,
    INGEST_QUEUE_DEPTH,
    PARKED_BATCHES,
    PARK_ERRORS,
    POINTS_INGESTED,
    REJECTED,
    STORE_ERRORS,
    STORE_UNEXPECTED_ERRORS,
    STORE_WRITE_SECONDS,
    Metrics,
)
from curvestream_bridge.parked import ParkedBatch, ParkedBatches
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.retained import RetainedRuns
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import Store, StoreRejected, StoreUnavailable

__all__ = ["Ingest", "Message", "Kind"]

log = logging.getLogger("curvestream.bridge.ingest")


class Kind:
    POINTS = "points"
    STATUS = "status"
    META = "meta"


@dataclasses.dataclass
class Message:
    kind: str
    payload: bytes
    source: str  # "mqtt" | "http"
    topic_run: tuple[str, str] | None = None
    ack: Callable[[], None] | None = None  # MQTT: acknowledge to the broker
    reply: concurrent.futures.Future | None = None  # HTTP: gets the Commit or the Rejected
    received_ns: int = 0
    parked: ParkedBatch | None = None  # a replay: the parked batch this payload came from
    decoded: DecodedBatch | None = None  # decoded (and clock-corrected) when submitted, already pushed live
    retained: bool = False  # MQTT: delivered from the broker's retained store (published before the subscription)


class Ingest:
    def __init__(
        self,
        store: Store,
        settings: BridgeSettings,
        metrics: Metrics,
        publish_commit: Callable[[bytes, run_pb2.Commit], None] | None = None,
        on_stored: Callable[[list[DecodedBatch]], None] | None = None,
        on_status: Callable[[run_pb2.RunStatus], None] | None = None,
        on_round: Callable[[list[DecodedBatch]], None] | None = None,
        on_decoded: Callable[[list[DecodedBatch]], None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.publish_commit = publish_commit
        self.on_stored = on_stored
        self.on_status = on_status
        self.on_round = on_round  # the alert engine: fresh and re-sent batches, before the commit
        self.on_decoded = on_decoded  # the live push: fresh batches, before the store write
        self.queue: queue.Queue[Message] = queue.Queue(maxsize=settings.ingest_queue_messages)
        self._seen: dict[bytes, SeqSet] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ratelog = RateLimitedLog(log)
        self._dead_letter_lock = threading.Lock()
        self.healthy = True
        self.clocks = ClockSkew(settings.clock_skew_tolerance_s, settings.clock_skew_certain_after_s, metrics)
        self.parked = ParkedBatches(settings.parked_dir) if settings.parked_dir else None
        self.retained = RetainedRuns(lambda: {(r.project, r.run) for r in self.store.runs()})
        self.unexpected_error = ""  # set while a write that failed unexpectedly is being retried
        self.last_unexpected_error = ""
        metrics.gauge_fn(INGEST_QUEUE_DEPTH, self.queue.qsize)
        if self.parked is not None:
            parked = self.parked
            metrics.gauge_fn(PARKED_BATCHES, lambda: parked.count)

    # ------------------------------------------------------------------ sources
    def submit(self, message: Message, timeout: float | None = None) -> None:
        """Blocks while the queue is full: that is the backpressure on the broker."""
        if not message.received_ns:
            message.received_ns = time.time_ns()
        if message.kind == Kind.POINTS and message.decoded is None and self.on_decoded is not None:
            self._decode_and_push(message)
        self.queue.put(message, timeout=timeout)

    def _decode_and_push(self, m: Message) -> None:
        """On the submitting thread: decode, correct the clock and push live. A payload
        that does not decode is left to the writer, which rejects it."""
        try:
            batch = decode_batch(m.payload, self.settings.max_payload_bytes, self.settings.max_batch_points,
                                 m.topic_run)
        except Rejected:
            return
        self.clocks.correct(batch, m.received_ns)
        m.decoded = batch
        try:
            self.on_decoded([batch])  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - the live push never holds up the store
            log.exception("curvestream bridge: live fan-out failed")

    def submit_http(self, payload: bytes, timeout: float = 60.0) -> run_pb2.Commit:
        """The direct-write path: returns the Commit, raises Rejected or StoreUnavailable."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            self.submit(Message(Kind.POINTS, payload, "http", reply=future), timeout=timeout)
        except queue.Full:
            raise StoreUnavailable("ingest queue full", retry_after_s=1.0) from None
        return future.result(timeout=timeout)

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="curvestream-ingest", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                first = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            messages = [first]
            points = 0
            while len(messages) < 512 and points < self.settings.write_max_points:
                try:
                    messages.append(self.queue.get_nowait())
                except queue.Empty:
                    break
                points += len(messages[-1].payload) // 20  # rough: ~20 bytes a point
            try:
                self.process(messages)
            except _Stopping:
                return
            except Exception:  # noqa: BLE001 - the writer must never die
                log.exception("curvestream bridge: ingest round failed; messages stay unacknowledged")
                for m in messages:
                    if m.reply is not None and not m.reply.done():
                        m.reply.set_exception(StoreUnavailable("internal error", 1.0))

    # ------------------------------------------------------------------ one round
    def process(self, messages: list[Message]) -> None:
        fresh: list[tuple[Message, DecodedBatch]] = []
        duplicates: list[tuple[Message, DecodedBatch]] = []
        in_round: set[tuple[bytes, int]] = set()
        others: list[Message] = []
        for m in messages:
            if m.kind != Kind.POINTS:
                others.append(m)
                continue
            if m.decoded is not None:
                batch = m.decoded
            else:
                try:
                    batch = decode_batch(m.payload, self.settings.max_payload_bytes, self.settings.max_batch_points,
                                         m.topic_run)
                except Rejected as rej:
                    self._reject(m, rej)
                    continue
                self.clocks.correct(batch, m.received_ns)
            ident = (batch.producer_id, batch.seq)
            if ident in in_round or batch.seq in self._seen_for(batch.producer_id):
                duplicates.append((m, batch))
            else:
                in_round.add(ident)
                fresh.append((m, batch))
        parked: list[tuple[Message, DecodedBatch]] = []
        unpushed = [b for m, b in fresh if m.decoded is None]  # not submitted (a replay): pushed now
        if unpushed and self.on_decoded is not None:
            try:
                self.on_decoded(unpushed)
            except Exception:  # noqa: BLE001 - the live push never holds up the store
                log.exception("curvestream bridge: live fan-out failed")
        if fresh:
            refused, failed = self._write([b for _, b in fresh])
            for m, b in fresh:
                if id(b) in refused:
                    self._reject(m, Rejected("store_refused", refused[id(b)], b.producer_id, b.seq))
                elif id(b) in failed:
                    self._park(m, b, failed[id(b)])
                    parked.append((m, b))
            fresh = [(m, b) for m, b in fresh if id(b) not in refused and id(b) not in failed]
            for _, b in fresh:
                self._seen_for(b.producer_id).add(b.seq, b.seq)
            now = time.time_ns()
            for m, b in fresh:
                self.metrics.inc(BATCHES_INGESTED, source=m.source)
                self.metrics.inc(POINTS_INGESTED, b.points)
                if b.sealed_ns:
                    self.metrics.set(INGEST_LAG, max(0.0, (now - b.sealed_ns) / 1e9))
            if self.on_stored is not None:
                try:
                    self.on_stored([b for _, b in fresh])
                except Exception:  # noqa: BLE001
                    log.exception("curvestream bridge: live fan-out failed")
        for m, b in duplicates:
            self.metrics.inc(BATCHES_DUPLICATE)
        for m, _ in [*fresh, *duplicates]:
            if m.parked is not None and self.parked is not None:
                self.parked.remove(m.parked)  # replayed: it left the parked set
        if self.on_round is not None and (fresh or duplicates):
            self._retry(lambda: self.on_round([b for _, b in [*fresh, *duplicates]]))
        for _, b in fresh:  # a status riding in a batch comes after its points (a run ends after its last step)
            if b.status is not None and self.on_status is not None:
                self.on_status(b.status)
        self._commit([*fresh, *parked, *duplicates])  # a parked batch is the bridge's now: the spool may let go
        for m in self.retained.stored((b.project, b.run) for _, b in fresh):  # held back until a point came
            self._other(m)
        for m in others:
            self._other(m)

    def _seen_for(self, producer_id: bytes) -> SeqSet:
        seen = self._seen.get(producer_id)
        if seen is None:
            try:
                ranges = self._retry(lambda: self.store.stored_ranges(producer_id))
            except _Stopping:
                raise
            except Exception as exc:  # noqa: BLE001 - unexpected: the store's own dedupe still holds
                self.metrics.inc(STORE_UNEXPECTED_ERRORS)
                self._ratelog.warning("unexpected ranges", "curvestream bridge: unexpected store error reading the "
                                      "stored batches of a producer (asked again next time): %s", _why(exc),
                                      level=logging.ERROR, exc_info=exc)
                return SeqSet()
            seen = SeqSet(ranges)
            self._seen[producer_id] = seen
        return seen

    def _write(self, batches: list[DecodedBatch], attempts: int = 0) -> tuple[dict[int, str], dict[int, str]]:
        """Write the batches. Returns, by ``id`` of batch, why the store refused
        some for good (StoreRejected) and why it kept failing unexpectedly on
        others; every other batch is stored. Waits out StoreUnavailable."""
        attempts = attempts or self._unexpected_attempts()
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        failure = ""
        for attempt in range(1, attempts + 1):
            started = time.perf_counter()
            try:
                self._retry(lambda: self.store.write(batches))
                if self.unexpected_error:
                    log.warning("curvestream bridge: store writes work again")
                    self.unexpected_error = ""
                return {}, {}
            except StoreRejected as exc:
                if len(batches) == 1:
                    return {id(batches[0]): _why(exc)}, {}
                return self._one_by_one(batches, attempts)  # find the culprit
            except _Stopping:
                raise
            except Exception as exc:  # noqa: BLE001 - unexpected: a bug or an unforeseen answer
                failure = _why(exc)
                self._alarm(exc, failure, batches, attempt, attempts)
                if attempt < attempts and backoff.wait(self._stop):
                    raise _Stopping() from None
            finally:
                self.metrics.observe(STORE_WRITE_SECONDS, time.perf_counter() - started)
        self.unexpected_error = ""
        if len(batches) == 1:
            return {}, {id(batches[0]): failure}
        return self._one_by_one(batches, 1)  # the batches it still fails on are parked, the others stored

    def _one_by_one(self, batches: list[DecodedBatch], attempts: int) -> tuple[dict[int, str], dict[int, str]]:
        refused: dict[int, str] = {}
        failed: dict[int, str] = {}
        for b in batches:
            r, f = self._write([b], attempts)
            refused.update(r)
            failed.update(f)
        return refused, failed

    def _unexpected_attempts(self) -> int:
        """With nowhere to park, a batch is retried until the store takes it."""
        return self.settings.unexpected_error_attempts if self.parked is not None else 2**62

    def _alarm(self, exc: Exception, failure: str, batches: list[DecodedBatch], attempt: int, attempts: int) -> None:
        self.unexpected_error = self.last_unexpected_error = failure
        self.metrics.inc(STORE_UNEXPECTED_ERRORS)
        then = "parking what it fails on" if attempt == attempts else "retrying"
        self._ratelog.warning("unexpected", "curvestream bridge: unexpected store error writing %d batch(es) "
                              "(attempt %d of %d), %s: %s", len(batches), attempt, attempts, then, failure,
                              level=logging.ERROR, exc_info=exc)

    def _park(self, m: Message, b: DecodedBatch, why: str) -> None:
        """Keep the batch in the parked set before anyone is told it is safe; while
        that is impossible (a full disk), wait, acknowledging nothing."""
        assert self.parked is not None
        source = m.parked.source if m.parked is not None else m.source
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        while True:
            try:
                new = self.parked.park(m.payload, b.producer_id, b.seq, why, source)
                break
            except OSError as exc:
                self.healthy = False
                self.metrics.inc(PARK_ERRORS)
                self._ratelog.warning("park", "curvestream bridge: cannot park a batch in %s (%s); it stays "
                                      "unacknowledged", self.parked.directory, exc)
                if backoff.wait(self._stop):
                    raise _Stopping() from None
        self.healthy = True
        if not new:  # a re-delivery of a batch parked before: counted and reported once
            return
        self.metrics.inc(BATCHES_PARKED, source=source)
        log.error("curvestream bridge: parked batch %d of producer %s (%s/%s) in %s after unexpected store errors "
                  "(%s); once fixed, `curvestream-bridge replay-dead-letters` stores it", b.seq, b.producer_id.hex(),
                  b.project, b.run, self.parked.directory, why)

    def _retry(self, fn: Callable[[], object]) -> object:
        """Run fn until it works; a StoreUnavailable waits with jittered backoff."""
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        while True:
            try:
                result = fn()
                self.healthy = True
                return result
            except StoreUnavailable as exc:
                self.healthy = False
                self.metrics.inc(STORE_ERRORS)
                kind = " ".join(str(exc).split()[:3])  # each kind of outage logged, each at most every 10 s
                self._ratelog.warning(f"store {kind}", "curvestream bridge: store unavailable, retrying: %s", exc)
                if backoff.wait(self._stop, exc.retry_after_s):
                    raise _Stopping() from None

    def _commit(self, items: list[tuple[Message, DecodedBatch]]) -> None:
        by_producer: dict[bytes, SeqSet] = {}
        take = getattr(self.store, "take_dropped", None)  # points a store left out on purpose (retention)
        dropped = take([(b.producer_id, b.seq) for _, b in items]) if take is not None else {}
        for m, b in items:
            if m.ack is not None:
                m.ack()
            if m.reply is not None:
                m.reply.set_result(self._commit_message(b.producer_id, SeqSet([(b.seq, b.seq)]), dropped=dropped))
            elif m.source == "mqtt":
                by_producer.setdefault(b.producer_id, SeqSet()).add(b.seq, b.seq)
        if self.publish_commit is not None:
            for producer, seqs in by_producer.items():
                self.publish_commit(producer, self._commit_message(producer, seqs, dropped=dropped))

    def _commit_message(self, producer: bytes, seqs: SeqSet, rejected: bool = False,
                        dropped: dict[tuple[bytes, int], tuple[int, str]] | None = None) -> run_pb2.Commit:
        commit = run_pb2.Commit(producer_id=producer, committed_ns=time.time_ns(), bridge_id=self.settings.bridge_id)
        target = commit.rejected if rejected else commit.stored
        for first, last in seqs.ranges():
            target.add(first=first, last=last)
            for seq in range(first, last + 1) if dropped else ():
                if (producer, seq) in dropped:
                    points, why = dropped[(producer, seq)]
                    commit.dropped.add(batches=run_pb2.SeqRange(first=seq, last=seq), points=points, reason=why)
        return commit

    def _reject(self, m: Message, rej: Rejected) -> None:
        self.metrics.inc(REJECTED, reason=rej.reason)
        self._ratelog.warning(rej.reason, "curvestream bridge: rejected a %s payload from %s (%s): %s",
                              m.kind, m.source, rej.reason, rej)
        self._dead_letter(m, rej.reason, str(rej))
        if m.parked is not None and self.parked is not None:
            self.parked.remove(m.parked)  # its fate is settled: rejected, kept in the dead-letter file
        if m.ack is not None:
            m.ack()
        if m.reply is not None:
            m.reply.set_exception(rej)
        elif rej.producer_id and rej.seq and self.publish_commit is not None:
            self.publish_commit(rej.producer_id, self._commit_message(rej.producer_id, SeqSet([(rej.seq, rej.seq)]),
                                                                     rejected=True))

    def _dead_letter(self, m: Message, reason: str, detail: str) -> None:
        path = self.settings.dead_letter_path
        if not path:
            return
        head = f"{time.time_ns()} {m.source} {m.kind} {reason} {detail[:500]!r}".encode()
        try:
            with self._dead_letter_lock, open(path, "ab") as fh:
                fh.write(struct.pack("<II", len(head), len(m.payload)) + head + m.payload)
        except OSError as exc:
            self._ratelog.warning("dead_letter", "curvestream bridge: cannot write dead letters to %s: %s", path, exc)

    def _other(self, m: Message) -> None:
        assert m.topic_run is not None
        if self.retained.hold(m):
            return
        for held in self.retained.release(m.topic_run):
            self._other(held)
        try:
            if m.kind == Kind.STATUS:
                status = decode_status(m.payload, m.topic_run)
                if status.state == run_pb2.RUN_STATE_LOST:
                    # the Last Will was composed at connect time: date it by its arrival
                    status.updated_ns = m.received_ns
                else:
                    self.clocks.correct_status(status)
                if self._retry(lambda: self.store.apply_status(status)) and self.on_status is not None:
                    self.on_status(status)
            elif m.kind == Kind.META:
                meta = decode_meta(m.payload, m.topic_run)
                self._retry(lambda: self.store.apply_meta(meta))
        except Rejected as rej:
            self._reject(m, rej)
            return
        if m.ack is not None:
            m.ack()


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class _Stopping(Exception):
    """The bridge is shutting down in the middle of a retry."""
