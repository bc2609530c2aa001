"""The run messages: statuses (newest wins, a Last Will dated by its arrival)
and metadata, each applied through the store's writer role."""

from __future__ import annotations

import logging
import threading

import pytest
from ingest_fakes import FakeStore

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import Rejected
from curvestream_bridge.ingest import IngestListener, Kind, Message
from curvestream_bridge.ingest.notify import Notifier
from curvestream_bridge.ingest.retry import Retrier
from curvestream_bridge.ingest.runs import RunMessages
from curvestream_bridge.metrics import Metrics
from curvestream_bridge.ratelog import RateLimitedLog


class Statuses(IngestListener):
    def __init__(self) -> None:
        self.heard: list[str] = []

    def status(self, status) -> None:
        self.heard.append(run_pb2.RunState.Name(status.state))


def runs(store: FakeStore) -> tuple[RunMessages, Statuses]:
    metrics = Metrics()
    retry = Retrier(threading.Event(), metrics, RateLimitedLog(logging.getLogger("test")))
    listener = Statuses()
    return RunMessages(store, retry, ClockSkew(300, 86400, metrics), Notifier(listener, retry, metrics)), listener


def status(state: int, updated_ns: int, received_ns: int = 0) -> Message:
    body = run_pb2.RunStatus(project="p", run="r", state=state, updated_ns=updated_ns).SerializeToString()
    return Message(Kind.STATUS, body, "mqtt", ("p", "r"), received_ns=received_ns)


def test_an_older_status_is_not_applied_nor_told_and_a_last_will_is_dated_by_its_arrival():
    store = FakeStore()
    r, listener = runs(store)
    r.apply(status(run_pb2.RUN_STATE_RUNNING, 100))
    r.apply(status(run_pb2.RUN_STATE_LOST, 50, received_ns=200))  # composed at connect time
    r.apply(status(run_pb2.RUN_STATE_RUNNING, 150))  # a late replay
    assert listener.heard == ["RUN_STATE_RUNNING", "RUN_STATE_LOST"]
    assert store.statuses[("p", "r")].updated_ns == 200


def test_metadata_is_applied_and_a_message_for_another_run_than_its_topic_is_rejected():
    store = FakeStore()
    r, _ = runs(store)
    r.apply(Message(Kind.META, run_pb2.RunMeta(project="p", run="r", host="h").SerializeToString(), "mqtt",
                    ("p", "r")))
    assert [m.host for m in store.metas] == ["h"]
    with pytest.raises(Rejected):
        r.apply(Message(Kind.META, run_pb2.RunMeta(project="p", run="x").SerializeToString(), "mqtt", ("p", "r")))
