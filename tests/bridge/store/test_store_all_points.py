"""``Store.points``, the export's read: every point of a series in wall-time
order, a page at a time, from both engines; pages cut anywhere, batches of
two producers overlapping in time and stored out of order, NaN and ±Inf
kept (and -0.0 in DuckDB)."""

from __future__ import annotations

import numpy as np
import pytest
from test_store_support import Points, batches, curve, opener, write_all

from curvestream_bridge.store.duckdb import allpoints as duckdb_pages
from curvestream_bridge.store.influx import allpoints as influx_pages


@pytest.mark.parametrize("engine", ["duckdb", "influxdb"])
def test_every_point_comes_back_once_in_wall_time_order_across_pages_and_overlapping_batches(
        engine, tmp_path, request, monkeypatch):
    monkeypatch.setattr(duckdb_pages if engine == "duckdb" else influx_pages, "PAGE_POINTS", 97)
    rng = np.random.default_rng(3)
    pts = curve(rng, 2_000, regress=True)
    even, odd = np.arange(0, 2_000, 2), np.arange(1, 2_000, 2)
    a = batches(Points(pts.steps[even], pts.walls[even], pts.values[even]), [300, 700], producer=b"a")
    b = batches(Points(pts.steps[odd], pts.walls[odd], pts.values[odd]), [150, 500, 900], producer=b"b")
    store = opener(engine, tmp_path, request)()
    try:
        write_all(store, [b[2], a[1], b[0], a[2], b[3], a[0], b[1]], per_write=2)  # late batches, two producers
        pages = list(store.points("proj", "run", "loss"))
        assert len(pages) > 2
        got = {f: np.concatenate([getattr(p, f) for p in pages]) for f in ("step", "wall_ns", "value")}
        order = np.argsort(pts.walls, kind="stable")
        assert np.array_equal(got["wall_ns"], pts.walls[order])
        assert np.array_equal(got["step"], pts.steps[order])
        assert np.array_equal(got["value"], pts.values[order], equal_nan=True)
        if engine == "duckdb":  # InfluxDB 1.x answers -0.0 as the JSON integer -0, read back as 0
            assert np.array_equal(np.signbit(got["value"]), np.signbit(pts.values[order]))
        assert list(store.points("proj", "run", "no such key")) == []
        assert list(store.points("proj", "no such run", "loss")) == []
    finally:
        store.close()
