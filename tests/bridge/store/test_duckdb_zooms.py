"""DuckDB series queries on zooms of every size stay exactly the M4 of the raw
points: ranges that hold more or fewer points than the series' density
suggests (counted first or not), straddling chunks read in any order, on
every axis, one series at a time and several together."""

from __future__ import annotations

import numpy as np
import pytest
from test_store_support import T0, Points, assert_same, batches, curve, duckdb_store, reference, write_all

from curvestream_bridge.store.base import SeriesQuery


def uneven(rng: np.random.Generator, n: int) -> Points:
    """A curve logged every 50 steps (and seconds) but for a dense burst in
    its middle, logged every step: the density of the whole misjudges any
    range in or around the burst."""
    gaps = np.full(n, 50)
    gaps[n // 3:n // 3 + n // 3] = 1
    points = curve(rng, n, regress=bool(rng.integers(2)))
    steps = np.cumsum(gaps)
    if rng.integers(2):
        steps[n // 2:] -= n // 4  # resumed from an earlier step: steps repeat, out of wall order
    return Points(steps, T0 + np.cumsum(gaps * 1_000_000_000 + rng.integers(0, 999, n)), points.values)


def zooms(points: Points, rng: np.random.Generator, x: str, count: int) -> list[SeriesQuery]:
    whole = reference(SeriesQuery("proj", "r0", "loss", x, None, None, 10), points)
    span = whole.end - whole.start
    out = []
    for _ in range(count):
        width = int(rng.choice([1, 7, 64, 300, 1000]))
        share = float(10.0 ** rng.uniform(-4, 0.1))  # from a handful of points to past both ends
        a = whole.start + rng.uniform(-0.05, 1.0) * span
        out.append(SeriesQuery("proj", "r0", "loss", x, float(a), float(a + share * span), width))
    out.append(SeriesQuery("proj", "r0", "loss", x, None, None, int(rng.integers(1, 2000))))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_every_zoom_of_an_uneven_series_is_the_m4_of_its_raw_points(seed, tmp_path):
    rng = np.random.default_rng(seed)
    runs = {f"r{i}": uneven(rng, 12_000) for i in range(2)}
    store = duckdb_store(tmp_path / "z.duckdb")
    try:
        for run, points in runs.items():
            cuts = np.sort(rng.choice(np.arange(1, len(points)), 40, replace=False))
            write_all(store, batches(points, cuts, run=run, producer=run.encode()), per_write=int(rng.integers(1, 6)))
        for x in ("step", "time", "relative"):
            for q in zooms(runs["r0"], rng, x, 14):
                assert_same(store.series(q), reference(q, runs["r0"]), repr(q))
                other = SeriesQuery("proj", "r1", "loss", x, q.start, q.end, q.width)
                both = store.series_many([q, other])
                assert_same(both[0], reference(q, runs["r0"]), repr(q))
                assert_same(both[1], reference(other, runs["r1"]), repr(other))
    finally:
        store.close()
