"""The exporters' results: what a broker or a bridge answer means for one batch.

The HTTP exporter talks to a real local HTTP server that answers as told."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from curvestream_wire.v1 import run_pb2

from bridge_stand_in import BridgeStandIn
from curvestream.exporters import ExportResult, HttpExporter, MqttExporter
from curvestream.http_fallback import BridgeHttp


@pytest.fixture
def bridge_stand_in() -> Iterator[BridgeStandIn]:
    server = BridgeStandIn(keep_alive=False)
    yield server
    server.close()


def test_a_commit_in_the_answer_is_passed_on_and_counts_as_success(bridge_stand_in):
    url = bridge_stand_in.url
    commit = run_pb2.Commit(producer_id=b"p" * 16)
    commit.stored.add(first=3, last=3)
    bridge_stand_in.will_answer(200, {"Content-Type": "application/x-protobuf"}, commit.SerializeToString())
    got: list[run_pb2.Commit] = []
    exporter = HttpExporter(BridgeHttp(url), got.append)
    assert exporter.export("t", b"batch").result is ExportResult.SUCCESS
    assert [(r.first, r.last) for r in got[0].stored] == [(3, 3)]
    exporter.shutdown()


@pytest.mark.parametrize("status, headers, retry_after", [
    (503, {"Retry-After": "7"}, 7.0),
    (429, {}, None),
    (401, {}, None),  # a wrong token is fixed by configuration: the batch waits, never dropped
])
def test_a_busy_or_unauthorised_bridge_makes_the_batch_wait(bridge_stand_in, status, headers, retry_after):
    url = bridge_stand_in.url
    bridge_stand_in.will_answer(status, headers, b'{"detail": "busy"}')
    got: list[run_pb2.Commit] = []
    outcome = HttpExporter(BridgeHttp(url), got.append).export("t", b"batch")
    assert outcome.result is ExportResult.RETRYABLE and outcome.retry_after_s == retry_after
    assert got == []


def test_a_batch_the_bridge_refuses_for_good_is_permanent(bridge_stand_in):
    url = bridge_stand_in.url
    bridge_stand_in.will_answer(400, {}, b'{"detail": "bad batch", "reason": "undecodable"}')
    outcome = HttpExporter(BridgeHttp(url), lambda c: None).export("t", b"batch")
    assert outcome.result is ExportResult.PERMANENT and "bad batch" in outcome.detail


def test_an_unreachable_bridge_is_retryable():
    outcome = HttpExporter(BridgeHttp("http://127.0.0.1:1", timeout_s=1), lambda c: None).export("t", b"x")
    assert outcome.result is ExportResult.RETRYABLE and "unreachable" in outcome.detail


class _Link:
    def __init__(self, up: bool) -> None:
        self.up = up
        self.published: list[tuple[str, bytes]] = []

    def publish(self, topic: str, payload: bytes, retain: bool = False) -> bool:
        if self.up:
            self.published.append((topic, payload))
        return self.up


def test_mqtt_hands_the_batch_to_a_connected_link_and_waits_while_it_is_down():
    up, down = _Link(True), _Link(False)
    assert MqttExporter(up).export("curvestream/v1/p/r/points", b"b").result is ExportResult.SUCCESS  # type: ignore[arg-type]
    assert up.published == [("curvestream/v1/p/r/points", b"b")]
    assert MqttExporter(down).export("t", b"b").result is ExportResult.RETRYABLE  # type: ignore[arg-type]
