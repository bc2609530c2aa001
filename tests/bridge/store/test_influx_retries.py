"""A write to InfluxDB that fails after some of its rollup rows are stored, then
is retried, leaves the rows a single successful write would have left: points of
buckets older than the open one (a late batch, a step going back) are counted
once at every level of both axes, also when other writes touch those buckets
between the failure and the retry."""

from __future__ import annotations

import gzip

import httpx
import numpy as np
import pytest
from test_store_support import T0, Points, assert_same, influx_store, reference

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.base import SeriesQuery, StoreUnavailable
from curvestream_bridge.store.influx.lineproto import decode_tag
from curvestream_bridge.store.influx.rows import packs_of, rows_of, series_where

KEY = ("proj", "run", "loss")


class FailingWrites(httpx.BaseTransport):
    """Answers 503 to the /write requests whose lines contain ``marker`` (while it
    is set); ``lost_answer``: InfluxDB stores the request first (the answer is
    what gets lost). Everything else goes to InfluxDB."""

    def __init__(self) -> None:
        self.real = httpx.HTTPTransport()
        self.marker: bytes | None = None
        self.lost_answer = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent = gzip.decompress(request.read()) if request.url.path == "/write" else b""
        if self.marker is not None and self.marker in sent:
            if self.lost_answer:
                self.real.handle_request(request).close()
            return httpx.Response(503, text='{"error":"overloaded"}')
        return self.real.handle_request(request)


@pytest.fixture
def store_and_seam(influxd):
    store = influx_store(influxd)
    seam = FailingWrites()
    db = store._db
    db._write_deadline_s = 0.5  # a failing request is given up quickly
    db.http.close()
    db.http = httpx.Client(base_url=db.base_url, transport=seam)
    yield store, seam
    store.close()
    seam.real.close()


def batch(seq: int, steps: np.ndarray) -> DecodedBatch:
    """Points of ``loss`` at these steps, 1 ms apart per step, with a NaN and a +Inf."""
    values = np.cos(steps / 700.0) + steps / 5e4
    values[len(values) // 3] = np.nan
    values[len(values) // 2] = np.inf
    return DecodedBatch(
        b"producer-1",
        seq,
        "proj",
        "run",
        [ScalarColumn("loss", steps, T0 + steps * 1_000_000, values)],
        [],
        [],
        None,
        None,
        0,
    )


def every_4th(lo: int, hi: int, offset: int) -> np.ndarray:
    return np.arange(lo + offset, hi, 4, dtype=np.int64)


def raw_line(step: int) -> bytes:
    """What only the raw line of the point at ``step`` contains."""
    return f"run=run step={step}i,".encode()


def points_of(items: list[DecodedBatch]) -> Points:
    cols = [b.scalars[0] for b in items]
    return Points(*(np.concatenate([getattr(c, f) for c in cols]) for f in ("steps", "wall_ns", "values")))


def assert_rows_count_each_raw_point_once(store) -> None:
    """Every rollup row's count (every level, both axes) is the number of points
    cs_scalar holds in its bucket; the bottom time rows pack exactly those points."""
    plans = store._rollup.plan(KEY, store._db.statements)
    step, wall, value = store._all_points(KEY)
    where = series_where(KEY)
    for axis in ("step", "time"):
        plan = plans[axis]
        (result,) = store._db.statements([f'SELECT "m" FROM {store._rollup.source(axis)} WHERE {where} GROUP BY "k"'])
        assert {int(decode_tag(s["tags"]["k"])) for s in result} == set(plan.levels)
        for s in result:
            k = int(decode_tag(s["tags"]["k"]))
            size = plan.size(k)
            buckets, agg = rows_of([s], size)
            if axis == "step":
                raw_buckets, raw_counts = np.unique(step // size, return_counts=True)
            else:
                lo, hi = int(buckets.min()) * size, (int(buckets.max()) + 1) * size
                (raw,) = store._db.statements([f'SELECT count("step") FROM "cs_scalar" WHERE {where} AND '
                                               f'time >= {lo} AND time < {hi} GROUP BY time({size}ns) fill(none)'])
                raw_buckets = np.array([t // size for t, _ in raw[0]["values"]])
                raw_counts = np.array([n for _, n in raw[0]["values"]])
            assert buckets.tolist() == raw_buckets.tolist(), (axis, k)
            assert agg.n.tolist() == raw_counts.tolist(), (axis, k)
    (result,) = store._db.statements([f'SELECT "p" FROM "cs_rollup_time" WHERE {where} AND "k" = \'0\''])
    size = plans["time"].size(0)
    buckets, packs = packs_of(result, size)
    order = np.argsort(wall, kind="stable")
    by_bucket = np.split(order, np.flatnonzero(np.diff(wall[order] // size)) + 1)
    assert len(packs) == len(by_bucket)
    for b, p, idx in zip(buckets.tolist(), packs, by_bucket):
        assert p is not None and int(wall[idx[0]] // size) == b
        assert p["wall"].tolist() == wall[idx].tolist() and p["step"].tolist() == step[idx].tolist()
        assert np.array_equal(p["value"], value[idx], equal_nan=True)


def assert_answers_of(store, items: list[DecodedBatch], zoom: tuple[int, int]) -> None:
    """Whole and zoomed answers on both axes are those of M4 over the raw points."""
    points = points_of(items)
    lo, hi = zoom
    for q in (SeriesQuery("proj", "run", "loss", "step", None, None, 100),
              SeriesQuery("proj", "run", "loss", "time", None, None, 100),
              SeriesQuery("proj", "run", "loss", "step", float(lo), float(hi), 40),
              SeriesQuery("proj", "run", "loss", "time", (T0 + lo * 1_000_000) / 1e6, (T0 + hi * 1_000_000) / 1e6, 40)):
        got = store.series(q)
        assert_same(got, reference(q, points), repr(q))
    assert store.series(SeriesQuery("proj", "run", "loss", "step", None, None, 100)).total == len(points)


FIRST = batch(1, every_4th(0, 48_000, 0))
"""12,000 points: every bucket of the later batches' steps but the open ones is closed."""


def test_a_late_batch_whose_raw_points_failed_after_its_rollup_rows_were_stored_is_counted_once(store_and_seam):
    store, seam = store_and_seam
    store.write([FIRST])
    late = batch(2, every_4th(4_000, 32_000, 1))  # 7,000 points, all in closed buckets at the lower levels
    seam.marker = raw_line(int(late.scalars[0].steps[-1]))  # the second /write request: the rollup rows went first
    with pytest.raises(StoreUnavailable):
        store.write([late])
    seam.marker = None
    store.write([late])
    assert_rows_count_each_raw_point_once(store)
    assert_answers_of(store, [FIRST, late], (9_000, 11_000))


@pytest.mark.parametrize("lost_answer", [False, True], ids=["markers refused", "markers stored, answer lost"])
def test_a_late_batch_whose_batch_marker_failed_is_counted_once_and_so_is_the_next(store_and_seam, lost_answer):
    """The markers go last: every rollup row of both axes is stored when they fail."""
    store, seam = store_and_seam
    store.write([FIRST])
    late = batch(2, every_4th(4_000, 32_000, 1))
    seam.marker, seam.lost_answer = b"cs_batch,", lost_answer
    with pytest.raises(StoreUnavailable):
        store.write([late])
    seam.marker = None
    store.write([late])
    assert store.stored_ranges(b"producer-1") == [(1, 2)]
    later = batch(3, every_4th(8_000, 16_000, 2))  # into the same closed buckets
    store.write([later])
    assert_rows_count_each_raw_point_once(store)
    assert_answers_of(store, [FIRST, late, later], (9_000, 11_000))


def test_writes_into_the_buckets_of_a_failed_write_before_its_retry_are_counted_once_each(store_and_seam):
    """Between a failure and its retry, a write without points and another that
    merges into the same closed buckets and moves the open ones past the new
    buckets of the failed write are stored; the retry fails once more first."""
    store, seam = store_and_seam
    store.write([FIRST])
    late = batch(2, np.concatenate([every_4th(4_000, 28_000, 1), every_4th(48_000, 52_000, 1)]))
    other = batch(4, np.concatenate([every_4th(8_000, 16_000, 2), every_4th(52_000, 56_000, 2)]))
    seam.marker = raw_line(int(late.scalars[0].steps[-1]))
    with pytest.raises(StoreUnavailable):
        store.write([late])
    store.write([DecodedBatch(b"producer-1", 3, "proj", "run", [], [], [], None, None, 0)])
    store.write([other])
    with pytest.raises(StoreUnavailable):
        store.write([late])
    seam.marker = None
    store.write([late])
    assert store.stored_ranges(b"producer-1") == [(1, 4)]
    assert_rows_count_each_raw_point_once(store)
    assert_answers_of(store, [FIRST, late, other], (9_000, 11_000))
