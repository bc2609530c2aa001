"""Stage 5, settle: acknowledgements, one commit per producer and round, the
HTTP answer, and what a rejection tells the trainer."""

from __future__ import annotations

import concurrent.futures
import logging
import struct

import pytest
from ingest_fakes import PID, payload

from curvestream_bridge.decode import Rejected, decode_batch
from curvestream_bridge.ingest import Kind, Message
from curvestream_bridge.ingest.settle import Settler
from curvestream_bridge.metrics import REJECTED, Metrics
from curvestream_bridge.ratelog import RateLimitedLog


def settler(tmp_path, commits: list) -> tuple[Settler, Metrics]:
    metrics = Metrics()
    return Settler("bridge-1", metrics, RateLimitedLog(logging.getLogger("test")),
                   lambda pid, c: commits.append((pid, c)), None, str(tmp_path / "dead.bin")), metrics


def item(seq: int, acked: list, pid: bytes = PID) -> tuple[Message, object]:
    m = Message(Kind.POINTS, payload(seq, pid=pid), "mqtt", ("p", "r"), ack=lambda: acked.append(seq))
    return m, decode_batch(m.payload, 1 << 20, 10**6)


def test_every_message_is_acknowledged_and_each_producer_gets_one_commit_of_ranges(tmp_path):
    commits: list = []
    s, _ = settler(tmp_path, commits)
    acked: list[int] = []
    other = b"\x02" * 16
    s.commit([item(1, acked), item(2, acked), item(4, acked), item(9, acked, other)])
    assert acked == [1, 2, 4, 9]
    got = {pid: [(r.first, r.last) for r in c.stored] for pid, c in commits}
    assert got == {PID: [(1, 2), (4, 4)], other: [(9, 9)]}
    assert all(c.bridge_id == "bridge-1" for _, c in commits)


def test_an_http_message_gets_its_commit_as_its_answer_and_nothing_is_published(tmp_path):
    commits: list = []
    s, _ = settler(tmp_path, commits)
    future: concurrent.futures.Future = concurrent.futures.Future()
    m = Message(Kind.POINTS, payload(3), "http", reply=future)
    s.commit([(m, decode_batch(m.payload, 1 << 20, 10**6))])
    assert [(r.first, r.last) for r in future.result(0).stored] == [(3, 3)] and commits == []


def test_a_rejection_is_counted_dead_lettered_acknowledged_and_committed_as_rejected(tmp_path):
    commits: list = []
    s, metrics = settler(tmp_path, commits)
    acked: list[int] = []
    m = Message(Kind.POINTS, b"bad bytes", "mqtt", ("p", "r"), ack=lambda: acked.append(1))
    s.reject(m, Rejected("ragged_series", "3 steps, 2 values", PID, 5))
    assert acked == [1] and metrics.get(REJECTED, reason="ragged_series") == 1
    assert [(pid, [(r.first, r.last) for r in c.rejected]) for pid, c in commits] == [(PID, [(5, 5)])]
    raw = (tmp_path / "dead.bin").read_bytes()
    head_len, _body_len = struct.unpack("<II", raw[:8])
    assert b"ragged_series" in raw[8:8 + head_len] and raw[8 + head_len:] == b"bad bytes"


def test_an_http_rejection_is_raised_to_its_caller(tmp_path):
    s, _ = settler(tmp_path, [])
    future: concurrent.futures.Future = concurrent.futures.Future()
    s.reject(Message(Kind.POINTS, b"x", "http", reply=future), Rejected("undecodable", "no"))
    with pytest.raises(Rejected):
        future.result(0)
