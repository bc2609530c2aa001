"""Pre-bucketed histograms pass through unchanged; a pinned wall clock gives
the calls of one thread the pinned time and no one else."""

from __future__ import annotations

import threading
import time

import pytest

from curvestream.buckets import Buckets
from curvestream.tensorboard.histogram import from_tensorboard
from curvestream.values import compute_histogram, histogram_values
from curvestream.walltime import PinnableClock, seconds_to_ns


def test_buckets_pass_through_histogram_values_and_computation_unchanged():
    b = Buckets([0.0, 1.0, 2.0], [3, 1], min=0.1, max=1.5, sum=2.2)
    assert histogram_values("k", b) is b
    assert compute_histogram(b, 64) == ([0.0, 1.0, 2.0], [3.0, 1.0], 0.1, 1.5, 2.2, 4)


def test_buckets_with_the_wrong_number_of_edges_are_refused():
    with pytest.raises(ValueError, match="needs 3 edges, got 2"):
        Buckets([0.0, 1.0], [1, 2])


def test_tensorboard_limits_map_to_edges_with_the_empty_left_bucket_as_the_first_edge():
    assert from_tensorboard([1.0, 2.0, 3.0], [0, 4, 5], min=1.2, max=3.0, sum=20.0, num=9).as_tuple() == (
        [1.0, 2.0, 3.0], [4.0, 5.0], 1.2, 3.0, 20.0, 9)
    assert from_tensorboard([1.0, 2.0], [2, 5], min=0.5, max=2.0, sum=9.0, num=7).as_tuple() == (
        [0.5, 1.0, 2.0], [2.0, 5.0], 0.5, 2.0, 9.0, 7)


def test_a_pinned_clock_reads_the_pin_on_its_thread_only():
    clock = PinnableClock()
    other: list[int] = []
    with clock.pinned(seconds_to_ns(1.5)):
        assert clock() == 1_500_000_000
        t = threading.Thread(target=lambda: other.append(clock()))
        t.start()
        t.join()
    assert other[0] > 1_500_000_000_000_000_000 > 0
    assert abs(clock() - time.time_ns()) < 5_000_000_000
