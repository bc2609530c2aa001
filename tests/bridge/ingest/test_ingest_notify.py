"""Stage 6, notify: the listener hears each step, a failing listener never
holds up ingest, the alert evaluation waits out an unavailable store, and a
run that ended lets go of what the pipeline held for it."""

from __future__ import annotations

import logging
import threading

from ingest_fakes import payload

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.decode import decode_batch
from curvestream_bridge.ingest import IngestListener, Kind, Message
from curvestream_bridge.ingest.notify import Notifier
from curvestream_bridge.ingest.retry import Retrier
from curvestream_bridge.metrics import BATCHES_INGESTED, POINTS_INGESTED, STORE_ERRORS, Metrics
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.store.base import StoreUnavailable


class Broken(IngestListener):
    def __init__(self) -> None:
        self.evaluations = 0

    def decoded(self, batches) -> None:
        raise RuntimeError("a bug in the live push")

    def stored(self, batches) -> None:
        raise RuntimeError("a bug in the runs list")

    def evaluate(self, batches) -> None:
        self.evaluations += 1
        if self.evaluations < 3:
            raise StoreUnavailable("alert state not saved", retry_after_s=0.01)

    def status(self, status) -> None:
        raise RuntimeError("a bug in the tails")


def notifier(listener: IngestListener, ended: list | None = None) -> tuple[Notifier, Metrics]:
    metrics = Metrics()
    retry = Retrier(threading.Event(), metrics, RateLimitedLog(logging.getLogger("test")))
    return Notifier(listener, retry, metrics, on_ended=None if ended is None else ended.append), metrics


def fresh(*seqs: int) -> list:
    out = []
    for s in seqs:
        m = Message(Kind.POINTS, payload(s), "http")
        out.append((m, decode_batch(m.payload, 1 << 20, 10**6)))
    return out


def test_stored_batches_are_counted_by_source_and_in_points():
    n, metrics = notifier(IngestListener())
    n.stored(fresh(1, 2))
    assert metrics.get(BATCHES_INGESTED, source="http") == 2
    assert metrics.get(POINTS_INGESTED) == 8


def test_a_failing_listener_is_logged_and_ingest_goes_on_but_the_evaluation_is_retried(caplog):
    listener = Broken()
    n, metrics = notifier(listener)
    with caplog.at_level(logging.ERROR):
        n.decoded([b for _, b in fresh(1)])
        n.stored(fresh(1))
        n.status(run_pb2.RunStatus(project="p", run="r", state=run_pb2.RUN_STATE_RUNNING))
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 3
    n.evaluate([b for _, b in fresh(1)])
    assert listener.evaluations == 3 and metrics.get(STORE_ERRORS) == 2


def test_a_run_that_finished_or_failed_is_let_go_and_a_running_or_lost_one_is_not():
    ended: list = []
    n, _ = notifier(IngestListener(), ended)
    for state in (run_pb2.RUN_STATE_RUNNING, run_pb2.RUN_STATE_LOST, run_pb2.RUN_STATE_FINISHED,
                  run_pb2.RUN_STATE_FAILED):
        n.status(run_pb2.RunStatus(project="p", run=str(state), state=state))
    assert [s.state for s in ended] == [run_pb2.RUN_STATE_FINISHED, run_pb2.RUN_STATE_FAILED]
