from __future__ import annotations

import fractions
import math

import numpy as np
import pytest

from curvestream.values import compute_histogram, histogram_values, to_float


@pytest.mark.parametrize("value, expected", [
    (1.5, 1.5), (3, 3.0), (True, 1.0), (np.float32(0.25), 0.25), (np.int64(7), 7.0), (np.array(2.5), 2.5),
    (np.array([4.0]), 4.0), (fractions.Fraction(1, 4), 0.25),
])
def test_real_numbers_of_any_kind_become_floats(value, expected):
    assert to_float("k", value) == expected


def test_non_finite_values_are_kept():
    assert math.isnan(to_float("k", float("nan")))
    assert to_float("k", np.float64("inf")) == math.inf


@pytest.mark.parametrize("value", ["0.5", b"1", 1 + 2j, np.array([1.0, 2.0]), None, [1.0], {"a": 1}])
def test_anything_else_is_a_type_error_naming_the_key(value):
    with pytest.raises(TypeError, match="'train/loss'"):
        to_float("train/loss", value)


def test_histogram_values_are_copied_so_later_changes_do_not_leak():
    arr = np.arange(10.0)
    copy = histogram_values("w", arr)
    arr[:] = -1
    assert copy.tolist() == list(range(10))
    edges, counts, lo, hi, total, n = compute_histogram(copy, 5)
    assert len(edges) == 6 and sum(counts) == 10 and (lo, hi, total, n) == (0.0, 9.0, 45.0, 10)
    with pytest.raises(TypeError, match="'w'"):
        histogram_values("w", "not numbers")
