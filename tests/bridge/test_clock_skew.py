"""What the bridge does with a trainer's wrong clock, sample by sample (a seam: send and arrival times given)."""

from __future__ import annotations

import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.metrics import Metrics

S = 10**9
NOW = 1_800_000_000 * S
YEAR = 365 * 24 * 3600 * S


def batch(sent_ns: int, walls: list[int], producer: bytes = b"p" * 16, seq: int = 1) -> DecodedBatch:
    column = ScalarColumn("loss", np.arange(len(walls), dtype=np.int64), np.array(walls, dtype=np.int64),
                          np.zeros(len(walls)))
    status = run_pb2.RunStatus(project="p", run="r", updated_ns=sent_ns, producer_id=producer)
    return DecodedBatch(producer, seq, "p", "r", [column], [], [], None, status, sent_ns, sent_ns)


def skew() -> ClockSkew:
    return ClockSkew(tolerance_s=300, certain_after_s=86_400, metrics=Metrics())


def test_a_clock_a_year_behind_is_corrected_by_its_offset_and_keeps_its_points_in_order():
    clocks = skew()
    first = batch(NOW - YEAR, [NOW - YEAR - 2 * S, NOW - YEAR - S])
    assert clocks.correct(first, NOW + S // 100) == YEAR + S // 100
    assert first.scalars[0].wall_ns.tolist() == [NOW - 2 * S + S // 100, NOW - S + S // 100]
    assert first.status is not None and first.status.updated_ns == NOW + S // 100
    # a later batch that travelled faster does not move the correction: the points stay in order
    later = batch(NOW - YEAR + 10 * S, [NOW - YEAR + 9 * S], seq=2)
    clocks.correct(later, NOW + 10 * S + S // 1000)
    assert later.scalars[0].wall_ns.tolist() == [NOW + 9 * S + S // 100]
    offset, correction = clocks.of_run("p", "r")
    assert abs(offset - YEAR / S) < 0.01 and correction == (YEAR + S // 100) / S


def test_a_clock_ahead_beyond_the_tolerance_is_corrected_and_one_within_it_is_left_alone():
    clocks = skew()
    ahead = batch(NOW + 3600 * S, [NOW + 3599 * S])
    assert clocks.correct(ahead, NOW) == -3600 * S
    assert ahead.scalars[0].wall_ns.tolist() == [NOW - S]
    close = batch(NOW + 60 * S, [NOW + 59 * S], producer=b"q" * 16)
    assert clocks.correct(close, NOW) == 0 and close.scalars[0].wall_ns.tolist() == [NOW + 59 * S]


def test_a_batch_late_by_hours_is_not_taken_for_a_slow_clock():
    clocks = skew()
    backlog = batch(NOW - 5 * 3600 * S, [NOW - 5 * 3600 * S - S])  # waited in the broker while the bridge was down
    assert clocks.correct(backlog, NOW) == 0
    assert backlog.scalars[0].wall_ns.tolist() == [NOW - 5 * 3600 * S - S]
    assert clocks.of_run("p", "r") == (5 * 3600.0, 0.0)  # shown, not acted upon


def test_a_clock_set_right_mid_run_stops_the_correction():
    clocks = skew()
    clocks.correct(batch(NOW - YEAR, [NOW - YEAR]), NOW)
    fixed = batch(NOW + 60 * S, [NOW + 59 * S], seq=2)
    assert clocks.correct(fixed, NOW + 60 * S) == 0
    assert fixed.scalars[0].wall_ns.tolist() == [NOW + 59 * S]


def test_a_status_on_its_own_topic_gets_its_producers_correction_and_an_older_client_none():
    clocks = skew()
    clocks.correct(batch(NOW - YEAR, [NOW - YEAR]), NOW)
    status = run_pb2.RunStatus(updated_ns=NOW - YEAR + S, producer_id=b"p" * 16)
    clocks.correct_status(status)
    assert status.updated_ns == NOW + S
    old_client = batch(0, [5])
    assert clocks.correct(old_client, NOW) == 0 and old_client.scalars[0].wall_ns.tolist() == [5]
