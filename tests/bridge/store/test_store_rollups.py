"""Rollups in both engines: exact on hostile values and odd batching, survive a
restart, ignore a batch written twice, agree with ``rollups=off``, and (in
InfluxDB) merge the rows of several bridges writing one series."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import numpy as np
import pytest
from test_store_support import Points, assert_same, batches, curve, opener, reference, write_all

from curvestream_bridge.store.base import SeriesQuery

ENGINES = ["duckdb", "influxdb"]


def queries(points: Points, rng: np.random.Generator, count: int = 8) -> list[SeriesQuery]:
    out = []
    for i in range(count):
        x = ("step", "time", "relative")[i % 3]
        width = int(rng.choice([1, 3, 50, 137, 999]))
        if i % 2:
            out.append(SeriesQuery("proj", "run", "loss", x, None, None, width))
        else:
            whole = reference(SeriesQuery("proj", "run", "loss", x, None, None, 10), points)
            a, b = np.sort(rng.uniform(whole.start, whole.end, 2))
            out.append(SeriesQuery("proj", "run", "loss", x, float(a), float(b), width))
    return out


def assert_answers(store, points: Points, qs: list[SeriesQuery]) -> None:
    for q in qs:
        assert_same(store.series(q), reference(q, points), repr(q))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", [1, 2])
def test_nan_inf_ties_and_a_resumed_run_read_back_exactly(engine, seed, tmp_path, request):
    rng = np.random.default_rng(seed)
    points = curve(rng, 40_000, regress=True)
    cuts = np.sort(rng.choice(np.arange(1, len(points)), 60, replace=False))
    store = opener(engine, tmp_path, request)()
    try:
        write_all(store, batches(points, cuts), per_write=int(rng.integers(1, 8)))
        assert_answers(store, points, queries(points, rng, 12))
    finally:
        store.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_small_live_batches_start_rollups_at_64_points_and_stay_exact(engine, tmp_path, request):
    rng = np.random.default_rng(4)
    points = curve(rng, 3_000)
    cuts = np.arange(7, len(points), 7)  # 7 points a batch, one batch a write
    store = opener(engine, tmp_path, request)()
    try:
        items = batches(points, cuts)
        write_all(store, items[:5], per_write=1)  # 35 points: no rollups yet
        early = Points(points.steps[:35], points.walls[:35], points.values[:35])
        assert_answers(store, early, [SeriesQuery("proj", "run", "loss", "step", None, None, 3)])
        write_all(store, items[5:], per_write=1)
        assert_answers(store, points, queries(points, rng))
    finally:
        store.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_rollups_that_start_within_one_write_include_its_earlier_batches(engine, tmp_path, request):
    rng = np.random.default_rng(6)
    points = curve(rng, 2_000)
    store = opener(engine, tmp_path, request)()
    try:
        write_all(store, batches(points, np.arange(30, len(points), 30)), per_write=5)  # 150 points a write
        assert_answers(store, points, queries(points, rng))
    finally:
        store.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_rollups_survive_a_restart_and_new_points_merge_into_old_buckets(engine, tmp_path, request):
    rng = np.random.default_rng(8)
    points = curve(rng, 20_000, regress=True)
    items = batches(points, np.arange(1_000, len(points), 1_000))
    open_store = opener(engine, tmp_path, request)
    qs = queries(points, rng)
    store = open_store()
    write_all(store, items[:12])
    first = Points(*(np.concatenate([np.concatenate([getattr(c, a) for c in b.scalars]) for b in items[:12]])
                     for a in ("steps", "wall_ns", "values")))
    before = [store.series(q) for q in qs]
    store.close()
    store = open_store()  # a restarted bridge: nothing in memory
    try:
        for q, answer in zip(qs, before):
            assert_same(store.series(q), answer, repr(q))
        assert_answers(store, first, qs)
        write_all(store, items[12:])  # the resumed steps land in buckets written before the restart
        assert_answers(store, points, qs)
    finally:
        store.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_writing_the_same_batches_again_changes_no_answer(engine, tmp_path, request):
    rng = np.random.default_rng(9)
    points = curve(rng, 10_000)
    items = batches(points, np.arange(500, len(points), 500))
    store = opener(engine, tmp_path, request)()
    try:
        write_all(store, items)
        qs = queries(points, rng)
        answers = [store.series(q) for q in qs]
        write_all(store, items[3:9], per_write=2)  # re-sent
        store.write(items[:2] + items[:2])  # and twice in one write
        for q, answer in zip(qs, answers):
            assert_same(store.series(q), answer, repr(q))
        assert store.metrics("proj", "run")[0].count == len(points)
    finally:
        store.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_answers_with_rollups_off_are_the_same(engine, tmp_path, request):
    rng = np.random.default_rng(10)
    points = curve(rng, 8_000, regress=True)
    store = opener(engine, tmp_path, request)(rollups="off")
    try:
        write_all(store, batches(points, np.arange(700, len(points), 700)))
        assert_answers(store, points, queries(points, rng))
    finally:
        store.close()


def test_influxdb_rows_of_several_writers_merge_at_query_time(tmp_path, request):
    rng = np.random.default_rng(12)
    points = curve(rng, 12_000, regress=True)
    items = batches(points, np.arange(300, len(points), 300))
    open_store = opener("influxdb", tmp_path, request)
    a, b = open_store(writer="bridge-a"), open_store(writer="bridge-b")
    try:
        for i, item in enumerate(items):  # a shared subscription: batches alternate between bridges
            (a if i % 3 else b).write([item])
        assert_answers(a, points, queries(points, rng))
        assert_answers(b, points, queries(points, rng))
    finally:
        a.close()
        b.close()


def test_influxdb_writers_that_both_see_a_new_series_first_agree_on_its_buckets(tmp_path, request):
    """A shared subscription hands a new series' first two batches to two bridges at
    once: each proposes bucket sizes from the batch it has (here 1 ms and 2 s apart:
    different time buckets); both must end up with the plan that was stored first."""
    rng = np.random.default_rng(21)
    n = 4_000
    steps = np.arange(n, dtype=np.int64)
    gaps = np.where(np.arange(n) < 500, 1_000_000, 2_000_000_000)
    points = Points(steps, 1_700_000_000_000_000_000 + np.cumsum(gaps), rng.standard_normal(n).cumsum())
    items = batches(points, np.arange(500, n, 500))
    open_store = opener("influxdb", tmp_path, request)
    a, b = open_store(writer="bridge-a"), open_store(writer="bridge-b")
    looked = b._rollup._load_plans
    b._rollup._load_plans = lambda keys, run: None  # b looked for the plan before a had stored it
    try:
        a.write([items[0]])
        b.write([items[1]])
        b._rollup._load_plans = looked
        for i, item in enumerate(items[2:]):
            (a if i % 2 else b).write([item])
        reader = open_store(writer="reader")
        try:
            for store in (a, b, reader):
                assert_answers(store, points, queries(points, rng, 12))
        finally:
            reader.close()
    finally:
        a.close()
        b.close()


def test_a_bridge_names_its_influxdb_rollup_rows_by_its_mqtt_client_id(influxd):
    """Bridges sharing a database keep apart by their MQTT client ids, which a broker
    needs unique anyway: no bridge overwrites another's rollup rows."""
    from curvestream_bridge.service import Bridge
    from curvestream_bridge.settings import BridgeSettings

    url = influxd.store_url("writer_ids")
    rng = np.random.default_rng(3)
    points = curve(rng, 1_000)
    for client_id in ("curvestream-bridge-a", "curvestream-bridge-b"):
        bridge = Bridge(BridgeSettings(store=url, mqtt_url="", mqtt_client_id=client_id))
        try:
            bridge.store.write(batches(points, [500], producer=client_id.encode()))
        finally:
            bridge.store.close()
    q = urllib.parse.urlencode({"db": "writer_ids", "q": 'SHOW TAG VALUES FROM "cs_rollup_step" WITH KEY = "w"'})
    with urllib.request.urlopen(f"{influxd.url}/query?{q}") as resp:
        series = json.load(resp)["results"][0]["series"]
    assert sorted(v for _, v in series[0]["values"]) == ["curvestream-bridge-a", "curvestream-bridge-b"]


def test_influxdb_buckets_with_too_many_points_to_pack_are_read_from_the_raw_points(tmp_path, request, monkeypatch):
    from curvestream_bridge.store.influx import rows as influx_rows

    monkeypatch.setattr(influx_rows, "PACK_POINTS", 12)  # bottom buckets hold about 16: most overflow
    rng = np.random.default_rng(14)
    points = curve(rng, 6_000, regress=True)
    store = opener("influxdb", tmp_path, request)()
    try:
        write_all(store, batches(points, np.arange(250, len(points), 250)))
        assert_answers(store, points, queries(points, rng))
    finally:
        store.close()


def test_influxdb_bottom_rows_packed_or_not_of_several_writers_read_back_exactly(tmp_path, request, monkeypatch):
    """A query makes the aggregates of packed bottom rows from their points; a
    bucket where one writer's row was too full to pack is read from the rows'
    aggregates instead, and its points from the raw points."""
    from curvestream_bridge.store.influx import rows as influx_rows

    monkeypatch.setattr(influx_rows, "PACK_POINTS", 9)  # a writer's share of a bucket: sometimes more
    rng = np.random.default_rng(15)
    points = curve(rng, 4_000, regress=True)
    cuts = np.cumsum(rng.integers(2, 14, len(points)))
    items = batches(points, cuts[cuts < len(points)])
    open_store = opener("influxdb", tmp_path, request)
    a, b = open_store(writer="bridge-a"), open_store(writer="bridge-b")
    try:
        for item in items:
            (a if rng.random() < 0.5 else b).write([item])
        (result,) = a._db.statements(['SELECT "p" FROM "cs_rollup_time" WHERE "k" = \'0\''])
        packed = [bool(p) for s in result for _, p in s["values"]]
        assert any(packed) and not all(packed)
        assert_answers(a, points, queries(points, rng, 12))
    finally:
        a.close()
        b.close()


KILLED_WRITER = """
import os, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_store_support import batches, curve
from curvestream_bridge.store import open_store
points = curve(np.random.default_rng(13), 12_000, regress=True)
store = open_store({url!r})
for item in batches(points, np.arange(1_000, len(points), 1_000))[:7]:
    store.write([item])
os.kill(os.getpid(), signal.SIGKILL)  # mid-bucket: every level's last bucket is still open
"""


def test_influxdb_rollups_stay_exact_after_the_bridge_is_killed_mid_bucket(tmp_path, influxd):
    """A bridge killed with SIGKILL keeps its open buckets only in memory; the next
    one (same writer id) rebuilds them from what is stored and merges the rest of the
    series, including a batch delivered again, into them exactly."""
    import pathlib
    import subprocess
    import sys

    url = influxd.store_url("killed") + "?writer=bridge-a"
    script = KILLED_WRITER.format(tests=str(pathlib.Path(__file__).parent), url=url)
    proc = subprocess.run([sys.executable, "-c", script], timeout=600)
    assert proc.returncode == -9
    rng = np.random.default_rng(13)
    points = curve(rng, 12_000, regress=True)
    items = batches(points, np.arange(1_000, len(points), 1_000))
    from curvestream_bridge.store import open_store

    store = open_store(url)
    try:
        write_all(store, items[6:], per_write=1)  # batch 7 again: the broker re-delivers what was not acknowledged
        assert_answers(store, points, queries(points, np.random.default_rng(14), 12))
    finally:
        store.close()
