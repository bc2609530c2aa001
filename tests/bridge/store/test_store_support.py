"""Helpers shared by the store tests (no tests here): batches of scalar
columns, stores of both engines, and the reference answer (M4 over all raw
points, :func:`curvestream_bridge.store.m4.m4_indices`)."""

from __future__ import annotations

import itertools
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import Store, open_store
from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.m4.query import frame, points_result

__all__ = ["T0", "Points", "batches", "write_all", "reference", "assert_same", "duckdb_store", "influx_store",
           "curve", "opener"]

T0 = 1_700_000_000_000_000_000
_db_names = itertools.count(1)


class Points:
    """One series' raw points (any order), as logged."""

    def __init__(self, steps: np.ndarray, walls: np.ndarray, values: np.ndarray) -> None:
        self.steps = np.asarray(steps, dtype=np.int64)
        self.walls = np.asarray(walls, dtype=np.int64)
        self.values = np.asarray(values, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.steps)


def curve(rng: np.random.Generator, n: int, regress: bool = False, hostile_values: bool = True) -> Points:
    """A noisy training curve; optionally resumed from an earlier step half-way
    (steps repeat), with NaN, ±Inf, repeated values and -0.0."""
    steps = np.cumsum(rng.integers(1, 3, n))
    if regress:
        steps[n // 2:] -= n // 3
    walls = T0 + np.cumsum(rng.integers(1, 3_000_000, n))
    values = rng.standard_normal(n).cumsum()
    if hostile_values:
        values[rng.integers(0, n, 5)] = np.nan
        values[rng.integers(0, n)] = np.inf
        values[rng.integers(0, n)] = -np.inf
        values[rng.integers(0, n, 20)] = 0.5
        values[rng.integers(0, n, 3)] = -0.0
    return Points(steps, walls, values)


def batches(points: Points, cuts: Any, key: str = "loss", project: str = "proj", run: str = "run",
            producer: bytes = b"producer-1", first_seq: int = 1) -> list[DecodedBatch]:
    """The points in wall-time order, split at ``cuts`` (indices) into batches."""
    order = np.argsort(points.walls, kind="stable")
    out = []
    for seq, part in enumerate(np.split(order, np.asarray(cuts, dtype=np.int64)), start=first_seq):
        col = ScalarColumn(key, points.steps[part], points.walls[part], points.values[part])
        out.append(DecodedBatch(producer, seq, project, run, [col], [], [], None, None, 0))
    return out


def write_all(store: Store, items: list[DecodedBatch], per_write: int = 5) -> None:
    for i in range(0, len(items), per_write):
        store.write(items[i:i + per_write])


def reference(q: SeriesQuery, points: Points) -> SeriesResult:
    """What the store must answer: M4 over every raw point (or all of them)."""
    xs = points.steps if q.x == "step" else points.walls
    f = frame(q, int(points.walls.min()), (int(xs.min()), int(xs.max())), None)
    assert f is not None
    return points_result(f, points.steps, points.walls, points.values)


def assert_same(got: SeriesResult, exp: SeriesResult, what: str = "") -> None:
    assert (got.raw, got.total) == (exp.raw, exp.total), what
    assert np.array_equal(got.step, exp.step), what
    assert np.array_equal(got.wall_ns, exp.wall_ns), what
    assert np.array_equal(got.y, exp.y, equal_nan=True), what
    assert np.array_equal(got.x, exp.x), what
    assert (got.before, got.after) == (exp.before, exp.after), what


def duckdb_store(path: pathlib.Path, **params: str) -> Store:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return open_store(f"duckdb://{path}" + (f"?{query}" if query else ""))


def influx_store(influxd: Any, database: str | None = None, **params: str) -> Store:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    url = influxd.store_url(database or f"t{next(_db_names)}")
    return open_store(url + (f"?{query}" if query else ""))


def opener(kind: str, tmp_path: pathlib.Path, request: Any) -> Callable[..., Store]:
    """A function that opens (again) the same store of engine ``kind``; URL
    parameters as keyword arguments. InfluxDB comes from the ``influxd`` fixture."""
    if kind == "duckdb":
        return lambda **p: duckdb_store(tmp_path / "store.duckdb", **p)
    server = request.getfixturevalue("influxd")
    database = f"t{next(_db_names)}"
    return lambda **p: influx_store(server, database, **p)


def test_a_duckdb_store_checkpoints_at_the_wal_size_its_url_names(tmp_path):
    for url, mb in ((f"duckdb:///{tmp_path}/a.duckdb", 128), (f"duckdb:///{tmp_path}/b.duckdb?checkpoint_mb=16", 16)):
        store = open_store(url)
        try:
            (setting,) = store._db.cursor().execute("SELECT current_setting('checkpoint_threshold')").fetchone()
            assert setting == f"{mb}.0 MiB", setting
        finally:
            store.close()
    with pytest.raises(ValueError, match="checkpoint_mb"):
        open_store(f"duckdb:///{tmp_path}/c.duckdb?checkpoint_mb=0")
