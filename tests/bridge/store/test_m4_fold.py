"""The compiled fold of rows and points into per-interval aggregates
(store/m4/fold.py): in any order it gives what the sort-based merge gives, it
leaves out points its rows already count, and it reads the rollup cache's
read-only arrays as they are."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from curvestream_bridge.store.m4.agg import KINDS, M4Agg, merge
from curvestream_bridge.store.m4.fold import Folded


def hostile_points(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (step, wall) keys, steps repeating (a resumed run), values full of ties, NaN, ±Inf and -0.0."""
    steps = np.sort(rng.integers(0, n // 2 + 1, n))
    walls = 1_700_000_000_000_000_000 + np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    values = rng.choice(np.array([0.0, -0.0, 1.0, 2.0, np.nan, np.inf, -np.inf]), n)
    return steps, walls, values


def assert_same_agg(got: M4Agg, exp: M4Agg) -> None:
    assert got.n.tolist() == exp.n.tolist()
    assert np.array_equal(got.has, exp.has)
    for kind in range(KINDS):
        sel = exp.has[kind]
        assert got.step[kind, sel].tolist() == exp.step[kind, sel].tolist(), kind
        assert got.wall[kind, sel].tolist() == exp.wall[kind, sel].tolist(), kind
        assert np.array_equal(got.value[kind, sel], exp.value[kind, sel], equal_nan=True), kind
    touched = exp.n > 0
    assert got.wlo[touched].tolist() == exp.wlo[touched].tolist()
    assert got.whi[touched].tolist() == exp.whi[touched].tolist()


@pytest.mark.parametrize("axis", ["step", "time"])
@pytest.mark.parametrize("seed", range(6))
def test_rows_folded_in_any_order_give_the_merge_of_them(axis, seed):
    rng = np.random.default_rng(seed)
    steps, walls, values = hostile_points(rng, 3_000)
    order = np.lexsort((walls, steps)) if axis == "step" else np.argsort(walls)
    # partial rows over runs of consecutive points: each one's own aggregate
    cuts = np.sort(rng.choice(np.arange(1, len(order)), 400, replace=False))
    runs = np.split(order, cuts)
    points = M4Agg.concat([M4Agg.from_points(steps[p], walls[p], values[p]) for p in runs])
    rows = merge(points, np.repeat(np.arange(len(runs)), [len(p) for p in runs]), len(runs), axis)
    intervals = 7
    group = rng.integers(0, intervals, len(rows))
    shuffled = rng.permutation(len(rows))
    acc = Folded(intervals)
    acc.rows(rows.take(shuffled), np.arange(len(rows)), np.arange(1, len(rows) + 1), group[shuffled], axis)
    assert_same_agg(acc.agg, merge(rows, group, intervals, axis))


@pytest.mark.parametrize("axis", ["step", "time"])
@pytest.mark.parametrize("seed", range(6))
def test_only_the_points_of_straddling_buckets_fold_each_into_its_interval(axis, seed):
    rng = np.random.default_rng(100 + seed)
    steps, walls, values = hostile_points(rng, 5_000)
    x = steps if axis == "step" else walls
    size = int(rng.choice([1, 4, 32]))
    buckets = np.unique(x // size)
    straddlers = np.sort(rng.choice(buckets, max(len(buckets) // 5, 1), replace=False))
    edges = np.concatenate(([-(1 << 62)], np.sort(rng.choice(np.unique(x), 30, replace=False)), [1 << 62]))
    order = rng.permutation(len(x)) if seed % 2 else np.arange(len(x))  # shuffled, or as stored
    acc = Folded(len(edges) - 1)
    acc.points(steps[order], walls[order], values[order], edges, straddlers, size, axis)
    mine = np.isin(x // size, straddlers)
    interval = np.searchsorted(edges, x, side="right") - 1
    exp = merge(M4Agg.from_points(steps[mine], walls[mine], values[mine]), interval[mine], len(edges) - 1, axis)
    assert_same_agg(acc.agg, exp)
    assert acc.agg.n.sum() == mine.sum()


def test_rows_the_rollup_cache_made_read_only_fold_like_writable_ones():
    rng = np.random.default_rng(7)
    steps, walls, values = hostile_points(rng, 500)
    rows = M4Agg.from_points(steps, walls, values)
    frozen = M4Agg.from_points(steps, walls, values)
    for name in ("n", "step", "wall", "value", "has", "wlo", "whi"):
        getattr(frozen, name).flags.writeable = False
    lo, hi, target = np.array([0, 200]), np.array([200, 500]), np.array([0, 1])
    a, b = Folded(2), Folded(2)
    a.rows(rows, lo, hi, target, "step")
    b.rows(frozen, lo, hi, target, "step")
    assert_same_agg(b.agg, a.agg)
    assert b.agg.n.tolist() == [200, 300]


def test_an_interval_nothing_folds_into_is_empty():
    acc = Folded(3)
    acc.rows(M4Agg.from_points(np.array([1]), np.array([10]), np.array([0.5])), np.array([0]), np.array([1]),
             np.array([2]), "time")
    out = acc.agg
    assert out.n.tolist() == [0, 0, 1]
    assert not out.has[:, :2].any()
    assert (out.wlo[:2].tolist(), out.whi[:2].tolist()) == ([0, 0], [0, 0])


def test_the_loops_compile_into_a_temporary_cache_where_numba_can_write_nowhere(tmp_path):
    """A read-only image whose user has no home: numba finds no place for its cache (here: every
    locator but NUMBA_CACHE_DIR's declines) and the loops still compile, in a fresh process."""
    code = """
import numba.core.caching as caching
for name in ("InTreeCacheLocator", "UserWideCacheLocator", "IPythonCacheLocator", "ZipCacheLocator"):
    setattr(getattr(caching, name), "from_function", classmethod(lambda cls, py_func, py_file: None))
import numpy as np
from curvestream_bridge.store.m4.agg import M4Agg
from curvestream_bridge.store.m4.fold import Folded
acc = Folded(1)
acc.rows(M4Agg.from_points(np.array([1, 2]), np.array([10, 20]), np.array([0.5, 1.5])), np.array([0]), np.array([2]),
         np.array([0]), "step")
print(acc.agg.n.tolist())
"""
    env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2]"
    assert "nowhere to cache compiled M4 loops" in out.stderr


def test_a_starting_bridge_loads_the_loops_before_its_first_query(tmp_path):
    """The loops are imported lazily (numba would cost every start a few tenths of a second), but
    a bridge's start loads them on a thread of its own: the first series query after a start no
    longer pays for numba (~0.4 s here), and the start does not wait for it. In a fresh process."""
    code = f"""
import time
from curvestream_bridge.service import Bridge
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.m4 import fold
bridge = Bridge(BridgeSettings(store="duckdb:///{tmp_path}/b.duckdb", mqtt_url=""))
print("before the start:", fold._loaded is not None)
bridge.start()
try:
    until = time.monotonic() + 120
    while fold._loaded is None and time.monotonic() < until:
        time.sleep(0.02)
    print("after the start, no query:", fold._loaded is not None)
finally:
    bridge.stop()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["before the start: False", "after the start, no query: True"], out.stdout
