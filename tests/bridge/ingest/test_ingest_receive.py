"""Stage 1, receive: decoded and pushed live on the submitting thread, then a
bounded queue (by messages and by bytes) that a full window makes wait."""

from __future__ import annotations

import queue
import threading

import pytest
from ingest_fakes import payload

from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.ingest import IngestListener, Kind, Message
from curvestream_bridge.ingest.decoding import Decoder
from curvestream_bridge.ingest.notify import Notifier
from curvestream_bridge.ingest.receive import Receiver
from curvestream_bridge.ingest.retry import Retrier
from curvestream_bridge.metrics import Metrics
from curvestream_bridge.ratelog import RateLimitedLog


class Live(IngestListener):
    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    def decoded(self, batches) -> None:
        self.seen += [(b.seq, threading.current_thread().name) for b in batches]


def receiver(max_messages: int = 10, max_bytes: int = 1 << 20) -> tuple[Receiver, Live]:
    metrics = Metrics()
    live = Live()
    notify = Notifier(live, Retrier(threading.Event(), metrics, RateLimitedLog(__import__("logging").getLogger())),
                      metrics)
    return Receiver(Decoder(1 << 20, 10**6, ClockSkew(300, 86400, metrics)), notify, max_messages, max_bytes), live


def points(seq: int, **kw) -> Message:
    return Message(Kind.POINTS, payload(seq, **kw), "mqtt", ("p", "r"))


def test_a_message_is_decoded_and_pushed_live_on_the_submitting_thread_before_it_waits_in_the_queue():
    rx, live = receiver()
    m = points(1)
    t = threading.Thread(target=rx.submit, args=(m,), name="mqtt-thread")
    t.start()
    t.join()
    assert live.seen == [(1, "mqtt-thread")]
    assert m.decoded is not None and m.decoded.seq == 1 and m.received_ns > 0
    assert rx.take(10, 10**6) == [m]


def test_an_undecodable_message_is_not_pushed_but_queued_for_its_round_to_reject():
    rx, live = receiver()
    junk = Message(Kind.POINTS, b"\xff junk", "mqtt", ("p", "r"))
    rx.submit(junk)
    assert live.seen == [] and junk.decoded is None
    assert rx.take(10, 10**6) == [junk]


def test_a_full_window_makes_the_source_wait_then_gives_way_once_a_round_is_taken():
    rx, _ = receiver(max_messages=2)
    rx.submit(points(1))
    rx.submit(points(2))
    with pytest.raises(queue.Full):
        rx.submit(points(3), timeout=0.05)
    waiting = threading.Thread(target=rx.submit, args=(points(4),))
    waiting.start()
    assert [m.decoded.seq for m in rx.take(1, 10**6)] == [1]
    waiting.join(10)
    assert not waiting.is_alive()
    assert [m.decoded.seq for m in rx.take(10, 10**6)] == [2, 4]


def test_the_window_is_bounded_by_bytes_too_but_one_large_message_passes_alone():
    one = len(payload(1, n=100))
    rx, _ = receiver(max_messages=100, max_bytes=one + one // 2)
    rx.submit(points(1, n=100))
    with pytest.raises(queue.Full):
        rx.submit(points(2, n=100), timeout=0.05)
    assert rx.bytes == one
    rx.take(10, 10**6)
    rx.submit(points(3, n=1000))  # larger than the window: let in alone
    assert rx.qsize() == 1


def test_a_round_takes_the_oldest_messages_up_to_its_count_and_about_its_points():
    rx, _ = receiver(max_messages=100)
    for seq in range(1, 11):
        rx.submit(points(seq, n=50))
    assert [m.decoded.seq for m in rx.take(3, 10**6)] == [1, 2, 3]
    assert [m.decoded.seq for m in rx.take(100, 120)] == [4, 5, 6], "stops once ~120 points are taken"
    assert rx.take(100, 10**6, timeout=0.01)[0].decoded.seq == 7
