"""The series query on InfluxDB rollups (see :mod:`.rollup`).

InfluxQL cannot OR several time ranges in one statement, so every run of
needed buckets is a statement of its own; all go in one request: the rollup
rows of the pieces of every pixel column, and at the bottom level, in the same
statements, the points (``p``) of the pieces and of the straddling bottom
buckets, from which their aggregates are made (see :func:`_packed_bottom`).
The step rollups carry no points (see ``PACKED_AXES``): a second request
reads those of their cut buckets from the time rollups' bottom rows, within
each bucket's wall-time extent; a bucket with too many points to pack is read
from ``cs_scalar``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.influx.rollup import MEASUREMENT, PACKED_AXES
from curvestream_bridge.store.influx.rows import (
    SELECT_FIELDS,
    SeriesKey,
    Statements,
    aggs_of_points,
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
"""Straddling buckets whose points lie closer than this many time bottom buckets share a statement."""

NONFINITE = {1: np.nan, 2: np.inf, 3: -np.inf}


def series_query(run: Statements, key: SeriesKey, q: SeriesQuery, plan: LevelPlan, origin: int,
                 time_bottom: int | None, source: Callable[[str], str]) -> SeriesResult:
    """The answer from the rollups of ``plan``; ``time_bottom``: the bottom bucket
    size of the series' time rollups, whose packed points serve x = step too;
    ``source(axis)``: the rollups of an axis as a FROM clause names them."""
    axis = rollup_axis(q.x)
    where = series_where(key)
    top = rows_of(run([f'SELECT {SELECT_FIELDS} FROM {source(axis)} WHERE {where} AND "k" = \'{plan.top}\''])[0],
                  plan.size(plan.top))
    if len(top[1]) == 0:
        return empty_result(q)
    xs = top[1].step if axis == "step" else top[1].wall
    extent = (int(xs[FIRST].min()), int(xs[LAST].max()))
    return rollup_answer(q, origin, extent, int(top[1].n.sum()), plan,
                         lambda f: _rolled_up(run, where, f, top, time_bottom, source(axis)),
                         lambda f, rows, agg: _raw_answer(run, where, f, rows, agg))


def _rolled_up(run: Statements, where: str, f: Frame, top: tuple[np.ndarray, M4Agg],
               time_bottom: int | None, measurement: str) -> tuple[list[tuple[int, np.ndarray, M4Agg]], M4Agg]:
    """The rollup rows a frame needs (and the raw points of its straddling
    buckets), and its per-interval aggregates."""
    assert f.pieces is not None
    plan = f.pieces.plan
    packed = f.axis in PACKED_AXES
    stmts: list[str] = []
    targets: list[int] = []  # the level of each statement
    for k in plan.levels:
        if k == plan.top:
            continue
        keys = f.pieces.keys(k)
        fields = SELECT_FIELDS
        if k == 0:
            # the straddling buckets' rows come along (their extent, and at level 0 of a packed
            # axis their points, read by the same statement as the pieces beside them)
            keys = np.union1d(keys, f.pieces.straddlers)
            if packed:
                fields = '"p"'
        size = plan.size(k)
        for lo, hi in bucket_runs(np.unique(keys), GAP_BUCKETS):
            stmts.append(f'SELECT {fields} FROM {measurement} WHERE {where} AND "k" = \'{k}\' AND '
                         f'time >= {lo * size} AND time < {(hi + 1) * size}')
            targets.append(k)
    rows: list[tuple[int, np.ndarray, M4Agg]] = [(plan.top, *top)]
    raws = []
    unpacked: list[int] = [] if packed else f.pieces.straddlers.tolist()
    straddling = set(f.pieces.straddlers.tolist())
    bottom = []
    for k, result in zip(targets, run(stmts) if stmts else []):
        if k == 0 and packed:
            bottom.append(result)
        else:
            rows.append((k, *rows_of(result, plan.size(k))))
    if bottom:
        buckets, agg, packs = _packed_bottom(run, where, f, bottom, measurement)
        rows.append((0, buckets, agg))
        for b, pts in zip(buckets.tolist(), packs):
            if b in straddling:
                if pts is None:
                    unpacked.append(b)
                else:
                    raws.append((pts["step"], pts["wall"], pts["value"]))
    if unpacked:
        raws.extend(_unpacked_points(run, where, f, rows, np.unique(np.array(unpacked, dtype=np.int64)),
                                     time_bottom))
    return rows, assemble(f, rows, _concat_points(raws))


def _packed_bottom(run: Statements, where: str, f: Frame,
                   results: list[list[dict]], measurement: str) -> tuple[np.ndarray, M4Agg, list[np.ndarray | None]]:
    """Buckets, aggregates and points of the bottom rows of a packed axis read
    as ``p`` alone: the aggregate of a row is made from its points, since
    reading ``m`` beside ``p`` cost InfluxDB a second string block per
    statement (a fifth of a whole-range query). The rows of a bucket that has
    one row without points (too many to pack) are read again from ``m``."""
    assert f.pieces is not None
    s0 = f.pieces.plan.size(0)
    parts = [packs_of(r, s0) for r in results]
    buckets = np.concatenate([b for b, _ in parts])
    packs = [p for _, ps in parts for p in ps]
    missing = np.unique(buckets[[p is None for p in packs]])
    keep = np.flatnonzero(~np.isin(buckets, missing))
    buckets, packs = buckets[keep], [packs[i] for i in keep.tolist()]
    out = [(buckets, aggs_of_points(packs), packs)]
    stmts = [f'SELECT {SELECT_FIELDS} FROM {measurement} WHERE {where} AND "k" = \'0\' AND '
             f'time >= {lo * s0} AND time < {(hi + 1) * s0}' for lo, hi in bucket_runs(missing, 0)]
    for result in run(stmts) if stmts else []:
        b, agg = rows_of(result, s0)
        out.append((b, agg, [None] * len(b)))
    return (np.concatenate([b for b, _, _ in out]), M4Agg.concat([a for _, a, _ in out]),
            [p for _, _, ps in out for p in ps])


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
                     buckets: np.ndarray, time_bottom: int | None) -> list[tuple[np.ndarray, ...]]:
    """Points of straddling bottom buckets that carry none: by time from
    cs_scalar; for x = step within the wall-time extent of the bucket's rows,
    from the packed points of the time rollups' bottom rows there
    (``time_bottom``: their bucket size) unless one of them has none, then
    from cs_scalar."""
    assert f.pieces is not None
    s0 = f.pieces.plan.size(0)
    if f.axis == "time":
        stmts = [_raw_stmt(where, q * s0, (q + 1) * s0 - 1) for q in buckets.tolist()]
        return [points_of(r) for r in run(stmts)] if stmts else []
    bottom = [(b, a) for k, b, a in rows if k == 0]
    stored = np.concatenate([b for b, _ in bottom])
    agg = M4Agg.concat([a for _, a in bottom])
    extents = []
    for q in buckets.tolist():
        sel = np.flatnonzero(stored == q)
        if len(sel):
            extents.append((q, int(agg.wlo[sel].min()), int(agg.whi[sel].max())))
    if time_bottom is None:
        missing = extents
        out = []
    else:
        groups: list[list[tuple[int, int, int]]] = []  # extents close in time share a statement
        reach = 0  # the end of the last group's extents
        for extent in sorted(extents, key=lambda e: e[1]):
            if groups and extent[1] <= reach + RAW_GAP_BUCKETS * time_bottom:
                groups[-1].append(extent)
                reach = max(reach, extent[2])
            else:
                groups.append([extent])
                reach = extent[2]
        stmts = [f'SELECT "p" FROM "{MEASUREMENT["time"]}" WHERE {where} AND "k" = \'0\' AND '
                 f'time >= {min(e[1] for e in g) // time_bottom * time_bottom} AND time <= {max(e[2] for e in g)}'
                 for g in groups]
        out, missing = [], []
        for group, result in zip(groups, run(stmts) if stmts else []):
            packs = packs_of(result, time_bottom)[1]
            if not packs or any(p is None for p in packs):
                missing.extend(group)
            else:
                out.extend((p["step"], p["wall"], p["value"]) for p in packs)
    stmts = [_raw_stmt(where, wlo, whi) + f' AND "step" >= {q * s0} AND "step" < {(q + 1) * s0}'
             for q, wlo, whi in missing]
    return out + ([points_of(r) for r in run(stmts)] if stmts else [])


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
