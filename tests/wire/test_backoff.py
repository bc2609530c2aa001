"""The one retry delay: doubling, capped, jittered, Retry-After first, waking on shutdown."""

from __future__ import annotations

import threading

import pytest

from curvestream_wire.backoff import Backoff, parse_retry_after


def test_delays_double_up_to_the_cap_and_start_again_after_a_reset():
    b = Backoff(initial_s=0.5, max_s=3.0, rng=lambda: 0.5)
    assert [b.next_delay() for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    b.reset()
    assert b.next_delay() == 0.5


@pytest.mark.parametrize("rng, factor", [(lambda: 0.0, 0.5), (lambda: 0.999, 1.499)])
def test_jitter_spreads_each_delay_between_half_and_one_and_a_half_times(rng, factor):
    b = Backoff(initial_s=1.0, max_s=10.0, rng=rng)
    assert b.next_delay() == pytest.approx(factor)


def test_a_servers_retry_after_wins_over_the_computed_delay():
    b = Backoff(initial_s=0.2, max_s=5.0, rng=lambda: 0.5)
    assert b.next_delay(retry_after_s=7.5) == 7.5
    assert b.next_delay(retry_after_s=-1) == 0.0


def test_a_wait_returns_at_once_when_shutdown_is_requested():
    stop = threading.Event()
    b = Backoff(initial_s=60.0, max_s=60.0)
    threading.Timer(0.05, stop.set).start()
    assert b.wait(stop) is True  # a minute's delay, cut short by the shutdown


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="initial_s"):
        Backoff(initial_s=0, max_s=1)
    with pytest.raises(ValueError, match="initial_s"):
        Backoff(initial_s=2, max_s=1)


@pytest.mark.parametrize("header, seconds", [
    ("7", 7.0),
    (" 2.5 ", 2.5),
    ("-3", 0.0),
    ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # an HTTP date: the time left until then
    ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # a date gone by: at once
    ("soon", None),
    ("", None),
    (None, None),
])
def test_retry_after_is_read_in_seconds_or_as_an_http_date(header, seconds):
    assert parse_retry_after(header, now=1445412480.0) == seconds


def test_the_bridge_and_the_client_read_retry_after_with_the_one_parser():
    import curvestream.http_fallback
    import curvestream_bridge.alerts.webhook
    import curvestream_bridge.store.influx.http

    for module in (curvestream.http_fallback, curvestream_bridge.alerts.webhook, curvestream_bridge.store.influx.http):
        assert module.parse_retry_after is parse_retry_after, module.__name__
