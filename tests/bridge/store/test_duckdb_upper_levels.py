"""DuckDB's upper rollup levels are appended as partial rows and merged now and
then (:mod:`curvestream_bridge.store.duckdb.upper`): answers stay exact before,
between and after merges, for many series read at once, and after the writer
is killed (SIGKILL) with partial rows waiting (the first write after it merges
them); a merge, and a clean close, leave one row per bucket and no partial row."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest
from test_store_support import Points, assert_same, batches, curve, duckdb_store, reference

from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.duckdb import upper

QUERIES = [SeriesQuery("proj", "run", "loss", x, None, None, w) for x in ("step", "time", "relative") for w in (3, 400)]


def upper_counts(store) -> tuple[int, int, int]:
    """Partial rows, merged rows, and merged rows that share a bucket."""
    cur = store._cursor()
    partial = cur.execute("SELECT count(*) FROM m4p_step").fetchone()[0]
    merged, dup = cur.execute("SELECT count(*), count(*) - count(DISTINCT (sid, k, b)) FROM m4_step").fetchone()
    return partial, merged, dup


def assert_exact(store, points: Points, rng: np.random.Generator) -> None:
    qs = list(QUERIES)
    whole = reference(SeriesQuery("proj", "run", "loss", "step", None, None, 10), points)
    a, b = np.sort(rng.uniform(whole.start, whole.end, 2))
    qs.append(SeriesQuery("proj", "run", "loss", "step", float(a), float(b), 50))
    for q, got in zip(qs, store.series_many(qs)):
        assert_same(got, reference(q, points), repr(q))
        assert_same(store.series(q), reference(q, points), repr(q))


@pytest.fixture
def merge_every_3_writes(monkeypatch):
    monkeypatch.setattr(upper, "MERGE_WRITES", 3)


def test_answers_stay_exact_before_between_and_after_merges_and_a_clean_close_merges_the_rest(
    tmp_path, merge_every_3_writes
):
    rng = np.random.default_rng(11)
    points = curve(rng, 30_000, regress=True)  # resumed steps land in buckets merged long before
    items = batches(points, np.arange(500, len(points), 500))
    store = duckdb_store(tmp_path / "s.duckdb")
    seen = 0
    try:
        for i, item in enumerate(items[:40]):
            store.write([item])
            seen += len(item.scalars[0].values)
            if i % 4 == 1:
                assert_exact(store, Points(points.steps[:seen], points.walls[:seen], points.values[:seen]), rng)
        partial, merged, dup = upper_counts(store)
        assert partial > 0 and merged > 0 and dup == 0
    finally:
        store.close()
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        assert upper_counts(store)[0] == 0  # a clean close merged them
        assert_exact(store, Points(points.steps[:seen], points.walls[:seen], points.values[:seen]), rng)
        for item in items[40:]:
            store.write([item])
        assert_exact(store, points, rng)
        assert upper_counts(store)[2] == 0
    finally:
        store.close()


def test_a_failed_write_merges_nothing_and_the_next_one_does(tmp_path, merge_every_3_writes, monkeypatch):
    rng = np.random.default_rng(12)
    points = curve(rng, 4_000)
    items = batches(points, np.arange(500, len(points), 500))
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        store.write(items[:2])
        store.write(items[2:3])
        before = upper_counts(store)
        assert before[0] > 0
        boom = RuntimeError("disk gone")

        def fail(*_: object) -> None:
            raise boom

        with monkeypatch.context() as m:
            m.setattr(type(store), "_write_others", fail)
            for _ in range(2):
                with pytest.raises(RuntimeError):
                    store.write(items[3:4])
        assert upper_counts(store) == before
        store.write(items[3:4])  # rolled back twice: this write merges what waits
        assert upper_counts(store)[0] == 0
        store.write(items[4:])
        assert_exact(store, points, rng)
    finally:
        store.close()


KILLED_WRITER = """
import os, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
from curvestream_bridge.store.duckdb import upper
from test_store_support import batches, curve, duckdb_store
upper.MERGE_WRITES = 3
points = curve(np.random.default_rng(13), 12_000, regress=True)
store = duckdb_store({path!r})
for item in batches(points, np.arange(500, len(points), 500))[:{writes}]:
    store.write([item])
os.kill(os.getpid(), signal.SIGKILL)  # no close: what is on disk is what the WAL holds
"""


def test_rollups_stay_exact_after_the_writer_is_killed_with_partial_rows_waiting(tmp_path, merge_every_3_writes):
    writes = 11  # merged after the 3rd, 6th and 9th write: two writes' partial rows wait
    script = KILLED_WRITER.format(tests=str(pathlib.Path(__file__).parent), path=str(tmp_path / "s.duckdb"),
                                  writes=writes)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == -9, done.stderr
    rng = np.random.default_rng(13)
    points = curve(rng, 12_000, regress=True)
    items = batches(points, np.arange(500, len(points), 500))
    seen = 500 * writes
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        assert upper_counts(store)[0] > 0
        assert_exact(store, Points(points.steps[:seen], points.walls[:seen], points.values[:seen]), rng)
        for item in items[writes:]:
            store.write([item])
        assert_exact(store, points, rng)
        assert upper_counts(store)[2] == 0
    finally:
        store.close()
