"""DuckDB keeps the rollup rows of the series it reads in memory
(:mod:`curvestream_bridge.store.duckdb.rollcache`): its answers stay exactly
those of the store without the cache (``rollup_cache_mb=0``) and the M4 of the
raw points, on every zoom and axis, one series or several at once, while
writes add late points into buckets already kept, while upper rows are merged
and kept rows compacted, after a write that rolls back, after a reopen, when a
load races a commit, when a read begins between a commit and its rows reaching
the cache, while a writer commits beside the reads (each read answers one
committed state), and under a budget that evicts."""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest
from test_store_support import Points, assert_same, batches, curve, duckdb_store, reference

from curvestream_bridge.service import Bridge
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.duckdb import rollcache, rollrows, upper

RUNS = ("r0", "r1")


def queries(points: dict[str, Points], rng: np.random.Generator, count: int) -> list[list[SeriesQuery]]:
    """Random zooms (and the whole range) on every x, each asked of both runs."""
    out = []
    for x in ("step", "time", "relative"):
        whole = reference(SeriesQuery("proj", "r0", "loss", x, None, None, 10), points["r0"])
        span = whole.end - whole.start
        for i in range(count):
            width = int(rng.choice([1, 7, 64, 300, 1000]))
            if i == 0:
                start, end = None, None
            else:
                a = whole.start + rng.uniform(-0.05, 1.0) * span
                start, end = float(a), float(a + 10.0 ** rng.uniform(-3.5, 0.1) * span)
            out.append([SeriesQuery("proj", run, "loss", x, start, end, width) for run in RUNS])
    return out


def assert_answers(cached, plain, points: dict[str, Points], rng: np.random.Generator, count: int = 5) -> None:
    for qs in queries(points, rng, count):
        many, plain_many = cached.series_many(qs), plain.series_many(qs)
        for q, got, other in zip(qs, many, plain_many):
            exp = reference(q, points[q.run])
            assert_same(got, exp, repr(q))
            assert_same(other, exp, repr(q))
            assert_same(cached.series(q), exp, repr(q))


def seen(points: Points, n: int) -> Points:
    """The first ``n`` points in wall order (as :func:`batches` writes them)."""
    order = np.argsort(points.walls, kind="stable")[:n]
    return Points(points.steps[order], points.walls[order], points.values[order])


@pytest.fixture
def merge_every_3_writes(monkeypatch):
    monkeypatch.setattr(upper, "MERGE_WRITES", 3)


@pytest.mark.parametrize("compact", ["every write", "never"])
def test_cached_answers_equal_uncached_ones_as_late_points_land_in_kept_buckets(
        tmp_path, monkeypatch, merge_every_3_writes, compact):
    if compact == "every write":
        monkeypatch.setattr(rollrows, "COMPACT_MIN", 0)
        monkeypatch.setattr(rollrows, "COMPACT_SHARE", 1 << 40)
    else:
        monkeypatch.setattr(rollrows, "COMPACT_MIN", 1 << 40)
    rng = np.random.default_rng(21)
    points = {run: curve(rng, 16_000, regress=True) for run in RUNS}  # resumed steps land in kept step buckets
    items = {run: batches(p, np.arange(700, len(p), 700), run=run, producer=run.encode()) for run, p in points.items()}
    cached = duckdb_store(tmp_path / "cached.duckdb")
    plain = duckdb_store(tmp_path / "plain.duckdb", rollup_cache_mb="0")
    n = 0
    try:
        for i in range(len(items["r0"])):
            for store in (cached, plain):
                store.write([items[run][i] for run in RUNS])
            n += len(items["r0"][i].scalars[0].values)
            if i % 3 == 2:
                assert_answers(cached, plain, {run: seen(p, n) for run, p in points.items()}, rng, 3)
                cached.rollup_cache.settle()
        assert cached.rollup_cache.hits > 0 and cached.rollup_cache.entries > 0
        assert plain.rollup_cache.entries == 0 and plain.rollup_cache.misses == 0
    finally:
        cached.close()
        plain.close()
    cached = duckdb_store(tmp_path / "cached.duckdb")
    plain = duckdb_store(tmp_path / "plain.duckdb", rollup_cache_mb="0")
    try:
        assert cached.rollup_cache.entries == 0
        assert_answers(cached, plain, points, rng)
        cached.rollup_cache.settle()
        assert cached.rollup_cache.entries == 4
        assert_answers(cached, plain, points, rng)
    finally:
        cached.close()
        plain.close()


def test_a_write_that_rolls_back_leaves_the_kept_rows_as_they_were(tmp_path, monkeypatch, merge_every_3_writes):
    rng = np.random.default_rng(22)
    points = {run: curve(rng, 6_000, regress=True) for run in RUNS}
    items = {run: batches(p, [3_000], run=run, producer=run.encode()) for run, p in points.items()}
    cached = duckdb_store(tmp_path / "cached.duckdb")
    plain = duckdb_store(tmp_path / "plain.duckdb", rollup_cache_mb="0")
    try:
        for store in (cached, plain):
            store.write([items[run][0] for run in RUNS])
        before = {run: seen(p, 3_000) for run, p in points.items()}
        assert_answers(cached, plain, before, rng)
        cached.rollup_cache.settle()
        kept = cached.rollup_cache.entries
        assert kept > 0

        def fail(*_: object) -> None:
            raise RuntimeError("disk gone")

        with monkeypatch.context() as m:
            m.setattr(type(cached), "_write_others", fail)  # after the points and their rollups were written
            with pytest.raises(RuntimeError):
                cached.write([items[run][1] for run in RUNS])
        assert cached.rollup_cache.entries == kept
        assert_answers(cached, plain, before, rng)
        for store in (cached, plain):
            store.write([items[run][1] for run in RUNS])
        assert_answers(cached, plain, points, rng)
    finally:
        cached.close()
        plain.close()


def test_a_load_that_a_commit_overtakes_is_not_kept(tmp_path):
    rng = np.random.default_rng(23)
    points = curve(rng, 8_000)
    late = Points(np.array([points.steps[4_000]] * 3), points.walls.max() + np.arange(1, 4),
                  np.array([1e9, -1e9, np.nan]))  # new extremes inside a bucket the load read
    everything = Points(*(np.concatenate([getattr(points, f), getattr(late, f)]) for f in ("steps", "walls", "values")))
    store = duckdb_store(tmp_path / "s.duckdb")
    q = SeriesQuery("proj", "run", "loss", "step", None, None, 300)
    try:
        store.write(batches(points, []))
        cache = store.rollup_cache
        written = []

        def commit_meanwhile() -> None:  # another thread's write, between the load's snapshot and its insert
            cache.before_insert = None
            writer = threading.Thread(target=lambda: (store.write(batches(late, [], first_seq=2)), written.append(1)))
            writer.start()
            writer.join(30)

        cache.before_insert = commit_meanwhile
        assert_same(store.series(q), reference(q, points))  # from the tables; queues the load
        assert cache.settle()
        assert written and cache.entries == 0, "the load was older than the commit: not kept"
        assert_same(store.series(q), reference(q, everything))
        assert cache.settle() and cache.entries == 1
        assert_same(store.series(q), reference(q, everything))
        assert cache.hits == 1
    finally:
        store.close()


def test_a_read_between_a_commit_and_its_rows_reaching_the_cache_reads_the_tables(tmp_path, monkeypatch):
    rng = np.random.default_rng(27)
    points = curve(rng, 8_000)
    late = Points(np.array([points.steps[4_000]] * 3), points.walls.max() + np.arange(1, 4),
                  np.array([1e9, -1e9, np.nan]))
    everything = Points(*(np.concatenate([getattr(points, f), getattr(late, f)]) for f in ("steps", "walls", "values")))
    store = duckdb_store(tmp_path / "s.duckdb")
    q = SeriesQuery("proj", "run", "loss", "step", None, None, 300)
    answers = []
    committing = rollcache.RollupCache.committing

    @contextlib.contextmanager
    def with_a_read_after_the_commit(cache, added):
        with committing(cache, added):
            yield  # the COMMIT
            reader = threading.Thread(target=lambda: answers.append(store.series(q)))
            reader.start()  # its snapshot holds the late points, the kept rows do not yet
            reader.join(30)

    try:
        store.write(batches(points, []))
        store.series(q)
        assert store.rollup_cache.settle() and store.rollup_cache.entries == 1
        monkeypatch.setattr(rollcache.RollupCache, "committing", with_a_read_after_the_commit)
        store.write(batches(late, [], first_seq=2))
        assert len(answers) == 1
        assert_same(answers[0], reference(q, everything))
        assert_same(store.series(q), reference(q, everything))  # the kept rows, extended
        assert store.rollup_cache.hits >= 1
    finally:
        store.close()


def test_reads_beside_a_writer_each_answer_one_committed_state(tmp_path, merge_every_3_writes):
    rng = np.random.default_rng(26)
    points = curve(rng, 24_000, regress=True)
    items = batches(points, np.arange(400, len(points), 400))
    store = duckdb_store(tmp_path / "s.duckdb")
    qs = [SeriesQuery("proj", "run", "loss", x, None, None, w) for x in ("step", "time") for w in (40, 900)]
    answers = []
    try:
        store.write(items[:3])
        done, failed = threading.Event(), []

        def write_the_rest() -> None:
            try:
                for item in items[3:]:
                    store.write([item])
            except BaseException as exc:
                failed.append(exc)
            finally:
                done.set()

        writer = threading.Thread(target=write_the_rest)
        writer.start()
        while not done.is_set():
            answers += [(q, store.series(q)) for q in qs]
            answers += list(zip(qs, store.series_many(qs)))
            store.rollup_cache.settle()
        writer.join(60)
        assert not failed, failed
        assert store.rollup_cache.hits > 0
    finally:
        store.close()
    totals = {got.total for _, got in answers}
    assert len(totals) > 3, "the reads saw several states"
    for q, got in answers:  # whole ranges: the total is how many points the read's snapshot held
        assert_same(got, reference(q, seen(points, got.total)), f"{q!r} after {got.total} points")


def test_answers_stay_exact_when_a_small_budget_evicts_entries(tmp_path):
    rng = np.random.default_rng(24)
    points = {run: curve(rng, 12_000, regress=True) for run in RUNS}
    cached = duckdb_store(tmp_path / "cached.duckdb")
    plain = duckdb_store(tmp_path / "plain.duckdb", rollup_cache_mb="0")
    try:
        for run, p in points.items():
            for store in (cached, plain):
                store.write(batches(p, np.arange(2_000, len(p), 2_000), run=run, producer=run.encode()))
        cache = cached.rollup_cache
        assert_answers(cached, plain, points, rng, 2)
        cache.settle()
        sizes = [e.nbytes for e in cache._entries.values()]
        assert len(sizes) == 4  # two runs, two axes
        cache.budget = max(sizes) + min(sizes) // 2  # never room for all
        cache.clear()
        misses = cache.misses
        for _ in range(3):
            assert_answers(cached, plain, points, rng, 2)
            cache.settle()
        assert cache.entries < 4 and cache.bytes <= cache.budget and cache.misses > misses
        cache.budget = min(sizes) // 2  # no entry fits: each read loads its rows, keeps none
        cache.clear()
        assert_answers(cached, plain, points, rng, 2)
        cache.settle()
        assert cache.entries == 0 and cache.bytes == 0
    finally:
        cached.close()
        plain.close()


def test_the_cache_size_comes_from_the_store_url_and_metrics_show_its_use(tmp_path):
    with pytest.raises(ValueError, match="rollup_cache_mb"):
        open_store(f"duckdb:///{tmp_path}/bad.duckdb?rollup_cache_mb=-1")
    store = duckdb_store(tmp_path / "s.duckdb", rollup_cache_mb="3")
    assert store.rollup_cache.budget == 3 << 20
    bridge = Bridge(BridgeSettings(mqtt_url="", dead_letter_path=str(tmp_path / "dead.bin")), store)
    try:
        store.write(batches(curve(np.random.default_rng(25), 3_000), [1_000]))
        q = SeriesQuery("proj", "run", "loss", "time", None, None, 50)
        store.series(q)
        assert store.rollup_cache.settle()
        store.series(q)
        text = bridge.metrics.render()
        assert "curvestream_rollup_cache_entries 1" in text
        assert "curvestream_rollup_cache_misses_total 1" in text
        assert "curvestream_rollup_cache_hits_total 1" in text
        assert f"curvestream_rollup_cache_bytes {store.rollup_cache.bytes:g}" in text and store.rollup_cache.bytes > 0
    finally:
        store.close()
