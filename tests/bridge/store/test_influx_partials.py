"""The InfluxDB writer's partials of many series at once equal each series' own
(``batch_partials``), whatever the plans (step bases, time ladders of different
lengths) and the order the points came in."""

from __future__ import annotations

import numpy as np
import pytest

from curvestream_bridge.store.influx.ladder import plan_of_bottom
from curvestream_bridge.store.influx.partials import series_partials
from curvestream_bridge.store.m4.agg import M4Agg
from curvestream_bridge.store.m4.levels import LevelPlan, batch_partials


def assert_same_agg(a: M4Agg, b: M4Agg) -> None:
    for name in ("n", "step", "wall", "has", "wlo", "whi"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(np.where(a.has, a.value, 0.0), np.where(b.has, b.value, 0.0), err_msg="value")


@pytest.mark.parametrize("axis", ["step", "time"])
def test_many_series_at_once_give_each_series_partials(axis: str) -> None:
    rng = np.random.default_rng(7)
    plans, steps, walls, values = [], [], [], []
    for i in range(40):
        n = int(rng.integers(1, 300))
        s = np.sort(rng.integers(0, 5_000, n)) + i * 3
        w = 1_800_000_000_000_000_000 + s * int(rng.integers(1, 50)) * 100_000 + rng.integers(0, 99, n)
        v = rng.standard_normal(n)
        v[rng.random(n) < 0.05] = np.nan
        v[rng.random(n) < 0.02] = np.inf
        if i % 3 == 0:  # a batch that came out of order
            order = rng.permutation(n)
            s, w, v = s[order], w[order], v[order]
        if axis == "step":
            plans.append(LevelPlan("step", int(rng.integers(0, 6))))
        else:  # ladders of Grafana intervals of different lengths
            plans.append(plan_of_bottom(int(rng.choice([1, 10, 20, 100])), int(rng.choice([500, 60_000, 3_600_000]))))
        steps.append(s)
        walls.append(w)
        values.append(v)
    parts, levels = series_partials(plans, steps, walls, values)
    expected = 0
    for i, plan in enumerate(plans):
        for k, buckets, agg in batch_partials(plan, steps[i], walls[i], values[i]):
            got_buckets, got = parts[(i, k)]
            np.testing.assert_array_equal(got_buckets, buckets)
            assert_same_agg(got, agg)
            full, bounds = levels[k]
            assert_same_agg(full.take(slice(bounds[i], bounds[i + 1])), agg)
            expected += 1
    assert len(parts) == expected
