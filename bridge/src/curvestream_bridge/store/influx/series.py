"""The series query on InfluxDB rollups (see :mod:`.rollup`).

InfluxQL cannot OR several time ranges in one statement, so every run of
needed buckets is a statement of its own; all go in one request: the rollup
rows of the pieces of every pixel column, and the points (``p``) of the
straddling bottom buckets. Only a bucket with too many points to pack sends
a second request, to ``cs_scalar``.
"""

from __future__ import annotations

import numpy as np

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.influx.rollup import MEASUREMENT
from curvestream_bridge.store.influx.rows import (
    SELECT_FIELDS,
    SeriesKey,
    Statements,
    bucket_runs,
    packs_of,
    rows_of,
    series_where,
)
from curvestream_bridge.store.m4.levels import LevelPlan
from curvestream_bridge.store.m4.agg import FIRST, LAST, M4Agg
from curvestream_bridge.store.m4.query import Frame, assemble, empty_result, raw_result, rollup_answer, rollup_axis

__all__ = ["series_query", "points_of", "GAP_BUCKETS", "NONFINITE"]

GAP_BUCKETS = 24
"""Runs of needed buckets closer than this are read by one statement: a
statement costs about as much as a couple dozen rows."""

RAW_GAP_BUCKETS = 8
"""Straddling bottom buckets closer than this share a statement for their raw points."""

NONFINITE = {1: np.nan, 2: np.inf, 3: -np.inf}


def series_query(run: Statements, key: SeriesKey, q: SeriesQuery, plan: LevelPlan, origin: int) -> SeriesResult:
    axis = rollup_axis(q.x)
    where = series_where(key)
    top = rows_of(run([f'SELECT {SELECT_FIELDS} FROM "{MEASUREMENT[axis]}" WHERE {where} AND "k" = \'{plan.top}\''])[0],
                  plan.size(plan.top))
    if len(top[1]) == 0:
        return empty_result(q)
    xs = top[1].step if axis == "step" else top[1].wall
    extent = (int(xs[FIRST].min()), int(xs[LAST].max()))
    return rollup_answer(q, origin, extent, int(top[1].n.sum()), plan, lambda f: _rolled_up(run, where, f, top),
                         lambda f, rows, agg: _raw_answer(run, where, f, rows, agg))


def _rolled_up(run: Statements, where: str, f: Frame,
               top: tuple[np.ndarray, M4Agg]) -> tuple[list[tuple[int, np.ndarray, M4Agg]], M4Agg]:
    """The rollup rows a frame needs (and the raw points of its straddling
    buckets), and its per-interval aggregates."""
    assert f.pieces is not None
    plan = f.pieces.plan
    measurement = MEASUREMENT[f.axis]
    stmts: list[str] = []
    targets: list[tuple[str, int]] = []  # ("m4", level) or ("points", 0)
    for k in plan.levels:
        if k == plan.top:
            continue
        keys = f.pieces.keys(k)
        if k == 0:
            keys = np.union1d(keys, f.pieces.straddlers)
        size = plan.size(k)
        for lo, hi in bucket_runs(np.unique(keys), GAP_BUCKETS):
            stmts.append(f'SELECT {SELECT_FIELDS} FROM "{measurement}" WHERE {where} AND "k" = \'{k}\' AND '
                         f'time >= {lo * size} AND time < {(hi + 1) * size}')
            targets.append(("m4", k))
    s0 = plan.size(0)
    for lo, hi in bucket_runs(f.pieces.straddlers, RAW_GAP_BUCKETS):
        stmts.append(f'SELECT "p" FROM "{measurement}" WHERE {where} AND "k" = \'0\' AND '
                     f'time >= {lo * s0} AND time < {(hi + 1) * s0}')
        targets.append(("points", 0))
    rows: list[tuple[int, np.ndarray, M4Agg]] = [(plan.top, *top)]
    raws = []
    unpacked: list[int] = []
    for (kind, k), result in zip(targets, run(stmts) if stmts else []):
        if kind == "m4":
            rows.append((k, *rows_of(result, plan.size(k))))
        else:
            buckets, packs = packs_of(result, s0)
            raws.extend((p["step"], p["wall"], p["value"]) for p in packs if p is not None)
            unpacked.extend(int(b) for b, p in zip(buckets, packs) if p is None)
    if unpacked:
        raws.extend(_unpacked_points(run, where, f, rows, np.unique(np.array(unpacked, dtype=np.int64))))
    return rows, assemble(f, rows, _concat_points(raws))


def _raw_answer(run: Statements, where: str, f: Frame, rows: list[tuple[int, np.ndarray, M4Agg]],
                agg: M4Agg) -> SeriesResult:
    if f.axis == "time":
        stmt = _raw_stmt(where, f.lo, f.hi)
    else:
        wlo, whi = _wall_extent(f, rows, f.lo, f.hi)
        if wlo > whi:
            return raw_result(f, *_concat_points([]), agg.point(LAST, 0), agg.point(FIRST, len(agg) - 1))
        stmt = _raw_stmt(where, wlo, whi) + f' AND "step" >= {f.lo} AND "step" <= {f.hi}'
    step, wall, value = points_of(run([stmt])[0])
    return raw_result(f, step, wall, value, agg.point(LAST, 0), agg.point(FIRST, len(agg) - 1))


def _unpacked_points(run: Statements, where: str, f: Frame, rows: list[tuple[int, np.ndarray, M4Agg]],
                     buckets: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Raw points of straddling bottom buckets with too many points to pack,
    from cs_scalar: by time (for x = step within the wall-time extent of the
    bucket's rows, then by step)."""
    assert f.pieces is not None
    s0 = f.pieces.plan.size(0)
    bottom = [(b, a) for k, b, a in rows if k == 0]
    stored = np.concatenate([b for b, _ in bottom])
    agg = M4Agg.concat([a for _, a in bottom])
    stmts = []
    for q in buckets.tolist():
        if f.axis == "time":
            stmts.append(_raw_stmt(where, q * s0, (q + 1) * s0 - 1))
            continue
        sel = np.flatnonzero(stored == q)
        if len(sel):
            stmts.append(_raw_stmt(where, int(agg.wlo[sel].min()), int(agg.whi[sel].max()))
                         + f' AND "step" >= {q * s0} AND "step" < {(q + 1) * s0}')
    return [points_of(r) for r in run(stmts)] if stmts else []


def _wall_extent(f: Frame, rows: list[tuple[int, np.ndarray, M4Agg]], lo: int, hi: int) -> tuple[int, int]:
    """Wall-time extent of the points with step in [lo, hi]: from the rows of
    the pieces of the range's columns and of the straddling bottom buckets."""
    assert f.pieces is not None and f.intervals is not None
    wlo, whi = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    for k, buckets, agg in rows:
        iv = f.pieces.interval_of(k, buckets)
        sel = (iv >= 1) & (iv <= len(f.intervals) - 2)
        if k == 0:
            sel |= np.isin(buckets, f.pieces.straddlers)
        if sel.any():
            wlo, whi = min(wlo, int(agg.wlo[sel].min())), max(whi, int(agg.whi[sel].max()))
    return wlo, whi


def _raw_stmt(where: str, lo: int, hi: int) -> str:
    return f'SELECT "step", "value", "nonfinite" FROM "cs_scalar" WHERE {where} AND time >= {lo} AND time <= {hi}'


def points_of(result: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, wall, value) of ``SELECT step, value, nonfinite`` result series."""
    times, steps, values = [], [], []
    for s in result:
        for t, step, value, nf in s["values"]:
            times.append(t)
            steps.append(step)
            values.append(NONFINITE[nf] if nf else value)
    return (np.asarray(steps, dtype=np.int64), np.asarray(times, dtype=np.int64),
            np.asarray(values, dtype=np.float64))


def _concat_points(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    step, wall, value = (np.concatenate([p[i] for p in parts]) for i in range(3))
    _, idx = np.unique(wall, return_index=True)  # windows may overlap: one point per time
    return step[idx], wall[idx], value[idx]
