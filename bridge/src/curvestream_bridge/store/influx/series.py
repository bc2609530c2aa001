"""The series query on InfluxDB rollups (see :mod:`.rollup`).

A frame is folded from rollup rows kept in the bridge's memory
(:mod:`.rowcache`): a snapped frame (:mod:`..m4.snap`) from the rows of the
levels its grid unit is a multiple of, and no raw point (:mod:`.aligned`);
another one that holds at most :data:`KEPT_BOTTOM_ROWS` bottom buckets from
the rows of every level, and the points of the buckets its edges cut, read
by one statement (:mod:`.cut`). A range of at most 4 points per column is
answered from its points, read from the packed points of the time rollups'
bottom rows (one statement).

Longer frames that are not snapped read what their edges cut, edge by edge.
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

import dataclasses
from collections.abc import Callable

import numpy as np

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.influx.aligned import aligned_level, needed_buckets, planned
from curvestream_bridge.store.influx.cut import cut_points, inner_straddlers
from curvestream_bridge.store.influx.rollup import MEASUREMENT, PACKED_AXES
from curvestream_bridge.store.influx.rowcache import RowCache, Rows
from curvestream_bridge.store.influx.rows import (
    NONFINITE,
    POINT,
    SELECT_FIELDS,
    SeriesKey,
    Statements,
    aggs_of_points,
    bucket_runs,
    packs_of,
    points_of,
    raw_stmt,
    rows_of,
    series_where,
    unpack_points,
)
from curvestream_bridge.store.m4.agg import FIRST, LAST, M4Agg
from curvestream_bridge.store.m4.levels import LevelPlan
from curvestream_bridge.store.m4.query import Frame, assemble, empty_result, raw_result, rollup_answer, rollup_axis

__all__ = ["series_query", "points_of", "range_points", "GAP_BUCKETS", "NONFINITE", "KEPT_BOTTOM_ROWS"]

Points = tuple[np.ndarray, np.ndarray, np.ndarray]  # steps, wall times, values

GAP_BUCKETS = 24
"""Runs of needed buckets closer than this are read by one statement: a
statement costs about as much as a couple dozen rows."""

RAW_GAP_BUCKETS = 8
"""Straddling buckets whose points lie closer than this many time bottom buckets share a statement."""


KEPT_BOTTOM_ROWS = 65_536
"""A frame not aligned above the bottom level is read from kept rows (the
bottom level's included) when its range holds at most this many bottom
buckets (~1M points; a snapped frame's columns hold whole buckets above the
bottom from about 16 bottom buckets a column: at most 32 per column below);
a longer one reads what its edges cut, edge by edge."""

FEW_CUT = 8
"""Up to this many cut buckets are read as runs of buckets, more by one filtered statement (:mod:`.cut`)."""


def series_query(run: Statements, key: SeriesKey, q: SeriesQuery, plan: LevelPlan, origin: int,
                 time_bottom: int, source: Callable[[str], str], cache: RowCache) -> SeriesResult:
    """The answer from the rollups of ``plan``; ``time_bottom``: the bottom bucket
    size of the series' time rollups, whose packed points serve x = step too;
    ``source(axis)``: the rollups of an axis as a FROM clause names them;
    ``cache``: the rows kept in memory."""
    axis = rollup_axis(q.x)
    where = series_where(key)
    result = run([f'SELECT {SELECT_FIELDS} FROM {source(axis)} WHERE {where} AND "k" = \'{plan.top}\' GROUP BY "w"'])[0]
    top = rows_of(result, plan.size(plan.top))
    if len(top[1]) == 0:
        return empty_result(q)
    # every write of a series rewrites its top rows last: they are the version of the kept rows
    version = tuple(sorted((str(s.get("tags", {}).get("w")), tuple(map(tuple, s["values"]))) for s in result))
    xs = top[1].step if axis == "step" else top[1].wall
    extent = (int(xs[FIRST].min()), int(xs[LAST].max()))

    def rolled_up(f: Frame) -> tuple[object, M4Agg]:
        k0 = aligned_level(f, plan)
        if k0 is None and (f.hi - f.lo) // plan.size(0) + 2 <= KEPT_BOTTOM_ROWS:
            k0 = 0
        if k0 is None:
            return _rolled_up(run, where, f, top, time_bottom, source(axis), extent)
        return _from_kept_rows(run, where, f, top, k0, extent, time_bottom, source(axis), cache, (key, axis, version))

    return rollup_answer(q, origin, extent, int(top[1].n.sum()), plan, rolled_up,
                         lambda f, _, agg: _raw_answer(run, where, f, agg, time_bottom))


def _from_kept_rows(run: Statements, where: str, f: Frame, top: tuple[np.ndarray, M4Agg], k0: int,
                    extent: tuple[int, int], time_bottom: int, measurement: str, cache: RowCache,
                    version: tuple) -> tuple[Rows, M4Agg]:
    """A frame read at level ``k0`` and up from the cache (read there once per
    range), its edges moved onto ``k0``'s buckets where their points allow
    (:mod:`.aligned`); for the edges that stay inside a bucket, the rows below
    ``k0`` and the points of the bottom buckets they cut, from InfluxDB."""
    assert f.pieces is not None
    plan = f.pieces.plan
    key, axis, at = version

    def read(wanted: list[tuple[int, int, int]]) -> list[tuple[np.ndarray, M4Agg]]:
        results = run([f'SELECT {SELECT_FIELDS} FROM {measurement} WHERE {where} AND "k" = \'{k}\' AND '
                       f'time >= {lo * plan.size(k)} AND time < {hi * plan.size(k)}' for k, lo, hi in wanted])
        return [rows_of(r, plan.size(k)) for (k, _, _), r in zip(wanted, results)]

    entry = cache.rows((key, axis), at, axis, needed_buckets(f, plan, k0, extent), read)
    g = dataclasses.replace(f, pieces=planned(f, plan, k0, entry.level(k0)))
    assert g.pieces is not None
    if k0 == 0 and len(inner_straddlers(g)) > FEW_CUT:
        below: list[tuple[int, np.ndarray, M4Agg]] = []
        raws = cut_points(run, where, g, entry.level(0), time_bottom)
    else:
        below, raws = _pieces_read(run, where, g, range(k0), time_bottom, measurement, extent)
    rows = Rows(entry, k0, plan.top, below, top)
    return rows, assemble(g, rows, _concat_points(raws))


def _rolled_up(run: Statements, where: str, f: Frame, top: tuple[np.ndarray, M4Agg], time_bottom: int,
               measurement: str, extent: tuple[int, int]) -> tuple[list[tuple[int, np.ndarray, M4Agg]], M4Agg]:
    """The rollup rows a frame needs (and the raw points of its straddling
    buckets), and its per-interval aggregates."""
    assert f.pieces is not None
    plan = f.pieces.plan
    rows, raws = _pieces_read(run, where, f, range(plan.top), time_bottom, measurement, extent)
    rows.insert(0, (plan.top, *top))
    return rows, assemble(f, rows, _concat_points(raws))


def _pieces_read(run: Statements, where: str, f: Frame, levels: range, time_bottom: int, measurement: str,
                 extent: tuple[int, int]) -> tuple[list[tuple[int, np.ndarray, M4Agg]], list[Points]]:
    """The rows of a frame's pieces at ``levels`` (below the top) and the raw points of its
    straddling buckets (their rows come along at level 0, read by the same statements,
    also when level 0 is not one of ``levels``); pieces outside the series' ``extent``
    (those beside the sentinels that bound the intervals before and after the range) are not read."""
    assert f.pieces is not None
    plan = f.pieces.plan
    packed = f.axis in PACKED_AXES
    stmts: list[str] = []
    targets: list[int] = []  # the level of each statement
    straddled = len(f.pieces.straddlers) > 0
    for k in sorted(set(levels) | ({0} if straddled else set())):
        size = plan.size(k)
        keys = f.pieces.keys(k) if k in levels else np.zeros(0, np.int64)
        keys = keys[(keys >= extent[0] // size) & (keys <= extent[1] // size)]
        fields = SELECT_FIELDS
        if k == 0:
            # the straddling buckets' rows come along (their extent, and at level 0 of a packed
            # axis their points, read by the same statement as the pieces beside them)
            keys = np.union1d(keys, f.pieces.straddlers)
            if packed:
                fields = '"p"'
        for lo, hi in bucket_runs(np.unique(keys), GAP_BUCKETS):
            stmts.append(f'SELECT {fields} FROM {measurement} WHERE {where} AND "k" = \'{k}\' AND '
                         f'time >= {lo * size} AND time < {(hi + 1) * size}')
            targets.append(k)
    rows: list[tuple[int, np.ndarray, M4Agg]] = []
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
    return rows, raws


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
    out = [(buckets, aggs_of_points([p for p in packs if p is not None]), packs)]
    stmts = [f'SELECT {SELECT_FIELDS} FROM {measurement} WHERE {where} AND "k" = \'0\' AND '
             f'time >= {lo * s0} AND time < {(hi + 1) * s0}' for lo, hi in bucket_runs(missing, 0)]
    for result in run(stmts) if stmts else []:
        b, agg = rows_of(result, s0)
        out.append((b, agg, [None] * len(b)))
    return (np.concatenate([b for b, _, _ in out]), M4Agg.concat([a for _, a, _ in out]),
            [p for _, _, ps in out for p in ps])


def _raw_answer(run: Statements, where: str, f: Frame, agg: M4Agg, time_bottom: int) -> SeriesResult:
    """The answer from every point of the frame's range (its M4 past 4 per column),
    read from the packed points of the time rollups' bottom rows; at x = step
    within the wall-time extent of the range's points (from the frame's aggregates)."""
    before, after = agg.point(LAST, 0), agg.point(FIRST, len(agg) - 1)
    if f.axis == "time":
        wlo, whi = f.lo, f.hi
    else:
        cols = agg.take(f.columns)
        held = cols.n > 0
        if not held.any():
            return raw_result(f, *_concat_points([]), before, after)
        wlo, whi = int(cols.wlo[held].min()), int(cols.whi[held].max())
    return raw_result(f, *range_points(run, where, wlo, whi, time_bottom), before, after)


def range_points(run: Statements, where: str, wlo: int, whi: int,
                 time_bottom: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every point with wall time in ``[wlo, whi]`` (and some beside: the rest of
    the bottom buckets at both ends), from the ``p`` of the time rollups' bottom
    rows (one statement; all packs decoded at once), and from cs_scalar for a
    bucket whose row holds too many points to pack them."""
    first = wlo // time_bottom * time_bottom
    result = run([f'SELECT "p" FROM "{MEASUREMENT["time"]}" WHERE {where} AND "k" = \'0\' AND '
                  f'time >= {first} AND time <= {whi}'])[0]
    texts: list[str] = []
    unpacked: list[int] = []
    for s in result:
        for t, p in s["values"]:
            if p:
                texts.append(p)  # each pack is a whole number of base64 quads: they decode as one
            else:
                unpacked.append(t)
    pts = unpack_points(texts) if texts else np.zeros(0, dtype=POINT)
    parts = [(pts["step"], pts["wall"], pts["value"])]
    stmts = [raw_stmt(where, t, t + time_bottom - 1) for t in sorted(set(unpacked))]
    parts.extend(points_of(r) for r in (run(stmts) if stmts else []))
    return _concat_points(parts)


def _unpacked_points(run: Statements, where: str, f: Frame, rows: list[tuple[int, np.ndarray, M4Agg]],
                     buckets: np.ndarray, time_bottom: int | None) -> list[Points]:
    """Points of straddling bottom buckets that carry none: by time from
    cs_scalar; for x = step within the wall-time extent of the bucket's rows,
    from the packed points of the time rollups' bottom rows there
    (``time_bottom``: their bucket size) unless one of them has none, then
    from cs_scalar."""
    assert f.pieces is not None
    s0 = f.pieces.plan.size(0)
    if f.axis == "time":
        stmts = [raw_stmt(where, q * s0, (q + 1) * s0 - 1) for q in buckets.tolist()]
        return [points_of(r) for r in run(stmts)] if stmts else []
    bottom = [(b, a) for k, b, a in rows if k == 0]
    stored = np.concatenate([b for b, _ in bottom])
    agg = M4Agg.concat([a for _, a in bottom])
    extents = []
    for q in buckets.tolist():
        sel = np.flatnonzero(stored == q)
        if len(sel):
            extents.append((q, int(agg.wlo[sel].min()), int(agg.whi[sel].max())))
    out: list[Points] = []
    if time_bottom is None:
        missing = extents
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
                out.extend((p["step"], p["wall"], p["value"]) for p in packs if p is not None)
    stmts = [raw_stmt(where, wlo, whi) + f' AND "step" >= {q * s0} AND "step" < {(q + 1) * s0}'
             for q, wlo, whi in missing]
    return out + ([points_of(r) for r in run(stmts)] if stmts else [])


def _concat_points(parts: list[Points]) -> Points:
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    step, wall, value = (np.concatenate([p[i] for p in parts]) for i in range(3))
    _, idx = np.unique(wall, return_index=True)  # windows may overlap: one point per time
    return step[idx], wall[idx], value[idx]
