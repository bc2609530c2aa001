"""Stage 4, write: one store write for a round's fresh batches, whatever the
series in it, and what a failure does to each batch (``store.base``):

- ``StoreUnavailable``: waited out and retried for as long as it lasts;
- ``StoreRejected``: the batch is refused alone (written one by one to find it);
- anything else is unexpected: retried with backoff while the alarm is up (log,
  ``curvestream_store_unexpected_errors_total``, ``/readyz``), then the batches
  it still fails on are parked (``parked.py``): a bug never costs a point and a
  poison batch never holds up the stream.
"""

from __future__ import annotations

import logging
import time

from curvestream_wire.backoff import Backoff

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.ingest.message import Message
from curvestream_bridge.ingest.retry import Retrier, Stopping, why
from curvestream_bridge.metrics import (
    BATCHES_PARKED,
    PARK_ERRORS,
    STORE_UNEXPECTED_ERRORS,
    STORE_WRITE_SECONDS,
    Metrics,
)
from curvestream_bridge.parked import ParkedBatches
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.store.base import StoreRejected, StoreWriter

__all__ = ["Writer", "Outcome"]

log = logging.getLogger("curvestream.bridge.ingest")

Outcome = tuple[dict[int, str], dict[int, str]]
"""By ``id`` of batch: why the store refused it for good, and why it kept failing unexpectedly."""


class Writer:
    def __init__(self, store: StoreWriter, retry: Retrier, metrics: Metrics, ratelog: RateLimitedLog,
                 parked: ParkedBatches | None, unexpected_attempts: int) -> None:
        self.store = store
        self.retry = retry
        self.metrics = metrics
        self.ratelog = ratelog
        self.parked = parked
        self.unexpected_attempts = unexpected_attempts if parked is not None else 2**62  # nowhere to park
        self.unexpected_error = ""  # set while a write that failed unexpectedly is being retried
        self.last_unexpected_error = ""
        self.parking_ok = True

    def write(self, batches: list[DecodedBatch], attempts: int = 0) -> Outcome:
        """Write the batches; every batch not in the outcome is stored."""
        attempts = attempts or self.unexpected_attempts
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        failure = ""
        for attempt in range(1, attempts + 1):
            started = time.perf_counter()
            try:
                self.retry(lambda: self.store.write(batches))
                if self.unexpected_error:
                    log.warning("curvestream bridge: store writes work again")
                    self.unexpected_error = ""
                return {}, {}
            except StoreRejected as exc:
                if len(batches) == 1:
                    return {id(batches[0]): why(exc)}, {}
                return self._one_by_one(batches, attempts)  # find the culprit
            except Stopping:
                raise
            except Exception as exc:
                failure = why(exc)
                self._alarm(exc, failure, batches, attempt, attempts)
                if attempt < attempts:
                    self.retry.wait(backoff)
            finally:
                self.metrics.observe(STORE_WRITE_SECONDS, time.perf_counter() - started)
        self.unexpected_error = ""
        if len(batches) == 1:
            return {}, {id(batches[0]): failure}
        return self._one_by_one(batches, 1)  # the batches it still fails on are parked, the others stored

    def _one_by_one(self, batches: list[DecodedBatch], attempts: int) -> Outcome:
        refused: dict[int, str] = {}
        failed: dict[int, str] = {}
        for b in batches:
            r, f = self.write([b], attempts)
            refused.update(r)
            failed.update(f)
        return refused, failed

    def _alarm(self, exc: Exception, failure: str, batches: list[DecodedBatch], attempt: int, attempts: int) -> None:
        self.unexpected_error = self.last_unexpected_error = failure
        self.metrics.inc(STORE_UNEXPECTED_ERRORS)
        then = "parking what it fails on" if attempt == attempts else "retrying"
        self.ratelog.warning("unexpected", "curvestream bridge: unexpected store error writing %d batch(es) "
                             "(attempt %d of %d), %s: %s", len(batches), attempt, attempts, then, failure,
                             level=logging.ERROR, exc_info=exc)

    def park(self, m: Message, b: DecodedBatch, reason: str) -> None:
        """Keep the batch in the parked set before anyone is told it is safe; while
        that is impossible (a full disk), wait, acknowledging nothing."""
        assert self.parked is not None
        source = m.parked.source if m.parked is not None else m.source
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        while True:
            try:
                new = self.parked.park(m.payload, b.producer_id, b.seq, reason, source)
                break
            except OSError as exc:
                self.parking_ok = False
                self.metrics.inc(PARK_ERRORS)
                self.ratelog.warning("park", "curvestream bridge: cannot park a batch in %s (%s); it stays "
                                     "unacknowledged", self.parked.directory, exc)
                self.retry.wait(backoff)
        self.parking_ok = True
        if not new:  # a re-delivery of a batch parked before: counted and reported once
            return
        self.metrics.inc(BATCHES_PARKED, source=source)
        log.error("curvestream bridge: parked batch %d of producer %s (%s/%s) in %s after unexpected store errors "
                  "(%s); once fixed, `curvestream-bridge replay-dead-letters` stores it", b.seq, b.producer_id.hex(),
                  b.project, b.run, self.parked.directory, reason)
