"""The HTTP fallback's client: what each answer of the bridge means, against a
real local HTTP server that answers as told. (What the exporter makes of it is
in test_exporters.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from curvestream_wire.v1 import run_pb2

from bridge_stand_in import BridgeStandIn
from curvestream.http_fallback import BridgeHttp, Permanent, Retryable


@pytest.fixture
def bridge() -> Iterator[BridgeStandIn]:
    server = BridgeStandIn()
    yield server
    server.close()


@pytest.fixture
def client(bridge: BridgeStandIn) -> Iterator[BridgeHttp]:
    http_client = BridgeHttp(bridge.url, token="w-token", timeout_s=5)
    yield http_client
    http_client.close()


def _commit(*seqs: int) -> bytes:
    commit = run_pb2.Commit(producer_id=b"p" * 16, bridge_id="b1")
    for s in seqs:
        commit.stored.add(first=s, last=s)
    return commit.SerializeToString()


def test_a_batch_is_posted_as_protobuf_with_the_token_and_the_commit_in_the_answer_is_returned(bridge, client):
    bridge.will_answer(200, {"Content-Type": "application/x-protobuf"}, _commit(4, 5))
    commit = client.ingest(b"batch bytes")
    assert [(r.first, r.last) for r in commit.stored] == [(4, 4), (5, 5)] and commit.bridge_id == "b1"
    (request,) = bridge.seen
    assert (request["method"], request["path"], request["body"]) == ("POST", "/api/v1/ingest", b"batch bytes")
    assert request["headers"]["Content-Type"] == "application/x-protobuf"
    assert request["headers"]["Authorization"] == "Bearer w-token"


def test_a_bridge_under_a_path_prefix_is_reached_under_it(bridge):
    bridge.will_answer(200, {}, _commit(1))
    prefixed = BridgeHttp(bridge.url + "/curvestream/", timeout_s=5)
    prefixed.ingest(b"x")
    prefixed.close()
    assert bridge.seen[0]["path"] == "/curvestream/api/v1/ingest"
    assert "Authorization" not in bridge.seen[0]["headers"], "no token configured, none sent"


def test_one_kept_alive_connection_carries_successive_batches(bridge, client):
    for seq in (1, 2, 3):
        bridge.will_answer(200, {}, _commit(seq))
    assert [client.ingest(b"b").stored[0].first for _ in range(3)] == [1, 2, 3]
    assert len({r["port"] for r in bridge.seen}) == 1


def test_an_answer_of_200_with_an_unreadable_commit_is_retryable(bridge, client):
    bridge.will_answer(200, {}, b"\xff\xff\xff\xff")
    with pytest.raises(Retryable, match="unreadable commit"):
        client.ingest(b"b")


@pytest.mark.parametrize("status", [401, 403])
def test_a_missing_or_wrong_token_is_retryable_so_fixing_the_configuration_loses_nothing(bridge, client, status):
    bridge.will_answer(status, {"Content-Type": "application/json"}, b'{"detail": "wrong token"}')
    with pytest.raises(Retryable, match=f"write token \\({status}\\): wrong token"):
        client.ingest(b"b")


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_a_busy_or_failing_bridge_is_retryable_after_the_time_it_asks_for(bridge, client, status):
    bridge.will_answer(status, {"Retry-After": "7"}, b'{"detail": "busy"}')
    with pytest.raises(Retryable) as info:
        client.ingest(b"b")
    assert info.value.retry_after_s == 7.0 and f"answered {status}: busy" in str(info.value)


@pytest.mark.parametrize("header, expected", [(None, None), ("1.5", 1.5), ("-3", 0.0),
                                              ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("soon", None)])
def test_retry_after_is_taken_in_seconds_or_as_a_date_never_negative_and_ignored_when_unreadable(
        bridge, client, header, expected):
    bridge.will_answer(503, {"Retry-After": header} if header is not None else {}, b"")
    with pytest.raises(Retryable) as info:
        client.ingest(b"b")
    assert info.value.retry_after_s == expected


@pytest.mark.parametrize("status", [400, 404, 405, 413, 422])
def test_any_other_client_error_means_the_batch_can_never_be_stored(bridge, client, status):
    bridge.will_answer(status, {"Content-Type": "application/json"},
                       json.dumps({"detail": "not a protobuf message", "reason": "undecodable"}).encode())
    with pytest.raises(Permanent, match=f"rejected the batch \\({status}\\): not a protobuf message"):
        client.ingest(b"b")


def test_a_plain_text_error_body_is_quoted_in_the_message(bridge, client):
    bridge.will_answer(400, {}, b"proxy says no")
    with pytest.raises(Permanent, match="proxy says no"):
        client.ingest(b"b")


def test_a_kept_alive_connection_the_bridge_closed_is_retried_once_on_a_fresh_one(bridge, client):
    bridge.will_answer(200, {}, _commit(1), drop=True)  # answers, then closes without saying so
    bridge.will_answer(200, {}, _commit(2))
    assert client.ingest(b"first").stored[0].first == 1
    assert client.ingest(b"second").stored[0].first == 2
    assert [r["body"] for r in bridge.seen] == [b"first", b"second"]
    assert bridge.seen[0]["port"] != bridge.seen[1]["port"], "the second batch went on a new connection"


def test_a_bridge_that_drops_the_fresh_connection_too_is_retryable_after_two_attempts(bridge, client):
    bridge.will_answer(None)
    bridge.will_answer(None)
    bridge.will_answer(200, {}, _commit(9))
    with pytest.raises(Retryable, match="unreachable"):
        client.ingest(b"b")
    assert len(bridge.seen) == 2
    assert client.ingest(b"b").stored[0].first == 9, "the next call starts on a fresh connection"


def test_nothing_listening_is_retryable():
    with pytest.raises(Retryable, match=r"127\.0\.0\.1:1 unreachable"):
        BridgeHttp("http://127.0.0.1:1", timeout_s=1).ingest(b"b")


def test_get_json_reads_with_the_read_token_and_a_failure_is_retryable(bridge, client):
    bridge.will_answer(200, {"Content-Type": "application/json"}, b'{"runs": []}')
    bridge.will_answer(503, {}, b'{"detail": "store unavailable"}')
    assert client.get_json("/api/v1/runs", read_token="r-token") == {"runs": []}
    assert bridge.seen[0]["headers"]["Authorization"] == "Bearer r-token"
    with pytest.raises(Retryable, match="503 store unavailable"):
        client.get_json("/api/v1/runs")
    assert bridge.seen[1]["headers"]["Authorization"] == "Bearer w-token"
