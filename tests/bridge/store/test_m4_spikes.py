"""A 1M-point curve with one +1000 spike and one -1000 dip, stored in each
engine with its rollups: at every width and zoom, with columns snapped to
whole grid units or not, the answer is the M4 of the raw points, keeps both
extremes and the first and last point, has at most 4·width points, and draws
the same pixels as all the raw points."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_store_support import T0, Points, assert_same, batches, opener, reference, write_all

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.m4.kernel import pixel_columns

N = 1_000_000
HEIGHT = 300
WIDTHS = (100, 137, 500, 1000, 1999, 4000)


def spiky_curve(seed: int = 7) -> tuple[Points, int, int]:
    rng = np.random.default_rng(seed)
    steps = np.arange(N, dtype=np.int64)
    walls = T0 + steps * 1_000_000 + rng.integers(0, 900_000, N)
    values = np.exp(-steps / 300_000) + 0.05 * rng.standard_normal(N)
    spike, dip = (int(s) for s in rng.choice(N, 2, replace=False))
    values[spike], values[dip] = 1000.0, -1000.0
    return Points(steps, walls, values), spike, dip


def raster(x: np.ndarray, y: np.ndarray, start: float, end: float, width: int, lo: float, hi: float) -> np.ndarray:
    """The polyline through the points, non-anti-aliased (each segment steps
    along its longer axis and rounds the other), on a width × HEIGHT canvas."""
    px = pixel_columns(x, start, end, width)
    py = np.rint((y - lo) / (hi - lo) * (HEIGHT - 1)).astype(np.int64)
    img = np.zeros((HEIGHT, width), dtype=bool)
    img[py, px] = True
    if len(px) < 2:
        return img
    x0, y0, dx, dy = px[:-1], py[:-1], np.diff(px), np.diff(py)
    n = np.maximum(np.abs(dx), np.abs(dy))
    seg = np.repeat(np.arange(len(n)), n + 1)
    t = np.arange(len(seg)) - np.repeat(np.cumsum(n + 1) - (n + 1), n + 1)
    steps = np.maximum(n[seg], 1)
    xs = x0[seg] + np.floor_divide(2 * t * dx[seg] + steps, 2 * steps)
    ys = y0[seg] + np.floor_divide(2 * t * dy[seg] + steps, 2 * steps)
    img[ys, xs] = True
    return img


def drawn(res: SeriesResult) -> tuple[np.ndarray, np.ndarray]:
    """The points of the range (without the neighbours outside it)."""
    keep = np.ones(len(res.x), dtype=bool)
    for i in (res.before, res.after):
        if i is not None:
            keep[i] = False
    return res.x[keep], res.y[keep]


@pytest.fixture(scope="module")
def curve_and_extremes():
    return spiky_curve()


@pytest.mark.parametrize("engine", ["duckdb", "influxdb"])
def test_every_width_and_zoom_keeps_the_spike_the_dip_and_draws_the_raw_pixels(engine, tmp_path, request,
                                                                                 curve_and_extremes):
    points, spike, dip = curve_and_extremes
    store = opener(engine, tmp_path, request)()
    try:
        write_all(store, batches(points, np.arange(10_000, N, 10_000)), per_write=20)
        rng = np.random.default_rng(11)
        queries = []
        for x in ("step", "time"):
            queries += [SeriesQuery("proj", "run", "loss", x, None, None, w) for w in WIDTHS]
            whole = reference(queries[-1], points)
            for centre, span in ((spike, 0.3), (dip, 0.01), (None, 0.5), (None, 0.05), (None, 0.002)):
                if centre is None:
                    c = (whole.start + whole.end) / 2
                else:
                    c = float(points.steps[centre]) if x == "step" else points.walls[centre] / 1e6
                c += rng.uniform(-0.1, 0.1) * span * (whole.end - whole.start)
                half = span * (whole.end - whole.start) / 2
                queries.append(SeriesQuery("proj", "run", "loss", x, c - half, c + half,
                                           int(rng.choice(WIDTHS))))
        # and each view with its columns snapped to whole grid units (the range widened to them)
        for q in queries + [dataclasses.replace(q, snap=True) for q in queries]:
            got, exp = store.series(q), reference(q, points)
            assert_same(got, exp, repr(q))
            assert got.raw == (got.total <= 4 * q.width)
            x_of = points.steps if q.x == "step" else points.walls
            inside = np.flatnonzero((got.x >= got.start) & (got.x <= got.end))
            assert len(inside) == got.total if got.raw else len(inside) <= 4 * q.width
            for i in (spike, dip):
                xi = x_of[i] if q.x == "step" else x_of[i] / 1e6
                if got.start <= xi <= got.end:
                    assert points.walls[i] in got.wall_ns[inside], (q, i)
            raw_x = x_of.astype(np.float64) if q.x == "step" else x_of / 1e6
            sel = np.flatnonzero((raw_x >= got.start) & (raw_x <= got.end))
            order = sel[np.argsort(raw_x[sel], kind="stable")]
            assert points.walls[order[0]] == got.wall_ns[inside[0]]
            assert points.walls[order[-1]] == got.wall_ns[inside[-1]]
            lo, hi = points.values[order].min(), points.values[order].max()
            gx, gy = drawn(got)
            assert np.array_equal(raster(gx, gy, got.start, got.end, q.width, lo, hi),
                                  raster(raw_x[order], points.values[order], got.start, got.end, q.width, lo, hi)), q
    finally:
        store.close()
