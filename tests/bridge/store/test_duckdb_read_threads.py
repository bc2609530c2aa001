"""An overlay's series are read on several threads (``?read_threads=N``): each
answer is still exactly the single-series answer, every part sees whether the
read's client went away, and a part's error reaches the caller once every
part is done."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_store_support import assert_same, batches, curve, duckdb_store, reference, write_all

from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.cancel import CANCEL, ReadCancel, ReadCancelled
from curvestream_bridge.store.duckdb.store import READ_THREADS

RUNS = {"r0": 5_000, "r1": 40, "r2": 9_000, "r3": 3_000, "r4": 700}  # r1: too short for rollups


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(7)
    points = {run: curve(rng, n) for run, n in RUNS.items()}
    store = duckdb_store(tmp_path / "t.duckdb", read_threads="3")
    try:
        for run, pts in points.items():
            cuts = np.sort(rng.choice(np.arange(1, len(pts)), min(12, len(pts) - 1), replace=False))
            write_all(store, batches(pts, cuts, run=run, producer=run.encode()))
        yield store, points
    finally:
        store.close()


def overlay(x: str, start: float | None = None, end: float | None = None) -> list[SeriesQuery]:
    return [SeriesQuery("proj", run, "loss", x, start, end, 300) for run in (*RUNS, "missing")]


def recording(store):
    """Wrap the store's part reader: which threads read which runs, under which cancel token."""
    seen: list[tuple[int, list[str], object]] = []
    read = store._series_many

    def wrapped(queries):
        seen.append((threading.get_ident(), [q.run for q in queries], CANCEL.get()))
        return read(queries)

    store._series_many = wrapped
    return seen


def test_each_run_of_an_overlay_read_on_three_threads_is_its_single_series_answer(runs):
    store, points = runs
    seen = recording(store)
    for x in ("step", "time", "relative"):
        whole = store.series_many(overlay(x))
        for q, got in zip(overlay(x), whole):
            if q.run in points:
                assert_same(got, reference(q, points[q.run]), repr(q))
                assert_same(got, store.series(q), repr(q))
            else:
                assert got.total == 0 and len(got.x) == 0
        a, b = whole[0].start, whole[0].end
        zoomed = overlay(x, a + (b - a) * 0.2, a + (b - a) * 0.3)
        for q, got in zip(zoomed, store.series_many(zoomed)):
            if q.run in points:
                assert_same(got, reference(q, points[q.run]), repr(q))
    # every call was split in three interleaved parts, read by three threads
    assert len(seen) == 6 * 3
    first = {ident: part for ident, part, _ in seen[:3]}
    assert sorted(first.values()) == [["r0", "r3"], ["r1", "r4"], ["r2", "missing"]]
    assert len(first) == 3
    assert first[threading.get_ident()] == ["r0", "r3"]  # the caller reads a part itself


def test_every_part_sees_that_the_client_went_away(runs):
    store, _ = runs
    seen = recording(store)
    gone = ReadCancel()
    gone.set()
    token = CANCEL.set(gone)
    try:
        with pytest.raises(ReadCancelled):
            store.series_many(overlay("step"))
    finally:
        CANCEL.reset(token)
    assert len(seen) == 3 and all(cancel is gone for _, _, cancel in seen)


def test_a_failing_part_fails_the_read_once_every_part_is_done(runs):
    store, _ = runs
    read = store._series_many
    done = []

    def flaky(queries):
        if "r1" in [q.run for q in queries]:
            raise RuntimeError("this part failed")
        answers = read(queries)
        done.append([q.run for q in queries])
        return answers

    store._series_many = flaky
    with pytest.raises(RuntimeError, match="this part failed"):
        store.series_many(overlay("step"))
    assert sorted(done) == [["r0", "r3"], ["r2", "missing"]]


def test_one_read_thread_reads_in_the_calling_thread_and_the_url_names_the_count(tmp_path):
    store = open_store(f"duckdb:///{tmp_path}/a.duckdb?read_threads=1")
    try:
        seen = recording(store)
        store.series_many(overlay("step"))
        assert [(ident, len(part)) for ident, part, _ in seen] == [(threading.get_ident(), len(RUNS) + 1)]
    finally:
        store.close()
    store = open_store(f"duckdb:///{tmp_path}/b.duckdb")
    try:
        assert store.read_threads == READ_THREADS >= 1
    finally:
        store.close()
    with pytest.raises(ValueError, match="read_threads"):
        open_store(f"duckdb:///{tmp_path}/c.duckdb?read_threads=0")
