"""The streaming statistics on their own: the batch EMA and the window's robust z."""

from __future__ import annotations

import json

import numpy as np

from curvestream_bridge.alerts.streaming import TrailingWindow, ema


def test_ema_in_one_batch_equals_the_recursion_over_many():
    x = np.random.default_rng(1).normal(size=5000)
    whole = ema(x, None, 0.98)
    s, manual = x[0], []
    for v in x:
        s = 0.98 * s + 0.02 * v
        manual.append(s)
    assert np.allclose(whole, manual, rtol=1e-9, atol=1e-12)
    parts = np.concatenate([ema(x[:1234], None, 0.98), ema(x[1234:], ema(x[:1234], None, 0.98)[-1], 0.98)])
    assert np.allclose(parts, whole, rtol=1e-12)


def test_robust_z_is_judged_against_the_window_before_the_point_and_survives_a_round_trip():
    rng = np.random.default_rng(2)
    values = 1.0 + rng.normal(0, 0.01, 300)
    values[250] = 5.0
    window = TrailingWindow(100)
    z, centre = window.robust_z(np.arange(300), values, min_points=20)
    assert np.all(np.isnan(z[:20]))  # too few points to judge
    assert z[250] > 100 and np.nanmax(np.delete(z, 250)) < 6
    assert abs(centre[250] - 1.0) < 0.01
    again = TrailingWindow.from_dict(json.loads(json.dumps(window.to_dict())))
    assert np.array_equal(again.values, window.values) and np.array_equal(again.steps, window.steps)
    assert again.values.tolist() == values[-100:].tolist()
