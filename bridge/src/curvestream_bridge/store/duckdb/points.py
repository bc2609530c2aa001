"""Scalar points in DuckDB: raw chunks, M4 rollups, and the series query.

Tables (``<axis>`` is ``step`` or ``time``)::

    chunks(sid, cid, n, s0, s1, w0, w1, pts)      -- raw points, see .chunks; s0/s1, w0/w1: step and wall extents
    m4b_<axis>(sid, b, <aggregate>, c0, c1)        -- bottom level 0: one partial row per batch and bucket,
                                                    -- c0..c1: the chunks holding its points
    m4_<axis>, m4p_<axis>                          -- levels 1 .. 7, merged and partial rows, see .upper

``<aggregate>``: see :mod:`.aggrows`. Everything is written in the caller's
transaction, together with the points.

A query of a series with rollups reads the rows of the buckets that cover its
pixel columns (:mod:`..m4.plan`) and the chunks of the straddling bottom
buckets, then merges them (:mod:`..m4.query`): O(width · fanout · levels) rows
whatever the length of the series. The rows come from memory when the store
keeps them (:mod:`.rollcache`: binary searches in the series' sorted rows
instead of a join against every series' rows; a thread loads them after the
series' first read), else from the tables by one statement; the chunks always
come from the table, by the chunk ids of the straddling buckets' rows.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.duckdb import chunks as chunk_codec
from curvestream_bridge.store.duckdb.aggrows import AGG_COLS, AGG_NAMES, agg_columns, agg_from, ints, scan
from curvestream_bridge.store.duckdb.rollcache import Reader
from curvestream_bridge.store.duckdb.rollrows import Added, Entry
from curvestream_bridge.store.duckdb.upper import SCHEMA as UPPER_SCHEMA
from curvestream_bridge.store.duckdb.upper import UpperRows, upper_rows
from curvestream_bridge.store.m4.agg import FIRST, LAST, M4Agg
from curvestream_bridge.store.m4.levels import AXES, MIN_POINTS, LevelPlan, choose_base, many_partials, order_by_x
from curvestream_bridge.store.m4.query import (
    Frame,
    assemble,
    empty_result,
    frame,
    points_result,
    raw_result,
    rollup_answer,
    rollup_axis,
)

__all__ = ["SCHEMA", "PointWriter", "SortedPoints", "series_query", "scan", "BOTTOM_TARGET_POINTS"]

BOTTOM_TARGET_POINTS = 64
"""A bottom bucket holds up to about this many points (8 to 64 on a regular series)."""

RAW_BELOW = 32
"""A range of at most 32 points per pixel column is answered from its raw
points (their M4 past 4 per column); a denser one from the rollups and the
straddling buckets' chunks. Reading a range's consecutive chunks grows with
its points, the rollup path with its columns (about two chunks per column
edge), and the rollup path is as fast or faster from ~20 points per column
up, one series or ten read together (``bench/raw_below.py``, figures in
bench/README.md). It is also the bound below which a range is counted first
(``probe_below`` of :func:`..m4.query.rollup_answers`): with the rollup rows in
memory a count is cheap, from the tables it costs a statement nearly as dear
as the rows of the full frame."""

SCHEMA = "\n".join(
    ["CREATE TABLE IF NOT EXISTS chunks (sid INTEGER NOT NULL, cid BIGINT NOT NULL, n INTEGER NOT NULL, "
     "s0 BIGINT NOT NULL, s1 BIGINT NOT NULL, w0 BIGINT NOT NULL, w1 BIGINT NOT NULL, pts BLOB NOT NULL);"]
    + [f"CREATE TABLE IF NOT EXISTS m4b_{a} (sid INTEGER NOT NULL, b BIGINT NOT NULL, {AGG_COLS}, "
       "c0 BIGINT, c1 BIGINT);" for a in AXES]
    + [UPPER_SCHEMA]
)


class SortedPoints:
    """The points of a write, every series' together in wall-time order (ties
    as they came), series by sid: ``sids`` (one per series), ``bounds`` (the
    offsets where each series' points start, and the end), ``series`` (each
    point's index into ``sids``)."""

    def __init__(self, sids: np.ndarray, bounds: np.ndarray, series: np.ndarray, steps: np.ndarray,
                 walls: np.ndarray, values: np.ndarray) -> None:
        self.sids, self.bounds, self.series = sids, bounds, series
        self.steps, self.walls, self.values = steps, walls, values

    @classmethod
    def of(cls, columns: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]) -> SortedPoints:
        sid_of_col = np.array([c[0] for c in columns], np.int64)
        lens = np.array([len(c[1]) for c in columns], np.int64)
        sid_pt = np.repeat(sid_of_col, lens)
        steps, walls = (np.concatenate([c[i] for c in columns]).astype(np.int64, copy=False) for i in (1, 2))
        values = np.concatenate([c[3] for c in columns]).astype(np.float64, copy=False)
        order = np.lexsort((walls, sid_pt))
        sid_pt, steps, walls, values = sid_pt[order], steps[order], walls[order], values[order]
        first = np.flatnonzero(np.concatenate(([True], sid_pt[1:] != sid_pt[:-1])))
        series = np.cumsum(np.concatenate(([False], sid_pt[1:] != sid_pt[:-1]))).astype(np.int64)
        return cls(sid_pt[first], np.append(first, len(sid_pt)), series, steps, walls, values)


class PointWriter:
    """Writes scalar columns as chunks and rollups, inside the caller's
    transaction. ``commit()`` after COMMIT makes new state visible to readers;
    ``reload()`` after a ROLLBACK forgets what did not happen."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, rollups: bool) -> None:
        self.rollups = rollups
        self.plans: dict[int, dict[str, LevelPlan]] = {}
        self._pending_plans: dict[int, dict[str, LevelPlan]] = {}
        self.upper = UpperRows()
        self.added: list[Added] = []  # the rollup rows of this transaction, for the cache once committed
        self.reload(cur)

    def reload(self, cur: duckdb.DuckDBPyConnection) -> None:
        self.next_cid = int(cur.execute("SELECT coalesce(max(cid), 0) + 1 FROM chunks").fetchall()[0][0])
        self.plans = {}
        for sid, bs, bt in cur.execute("SELECT sid, m4_base_step, m4_base_time FROM series "
                                       "WHERE m4_base_step IS NOT NULL").fetchall():
            self.plans[sid] = {"step": LevelPlan("step", int(bs)), "time": LevelPlan("time", int(bt))}
        self._pending_plans = {}
        self.added = []
        self.upper.reload(cur)

    def commit(self) -> None:
        self.plans.update(self._pending_plans)
        self._pending_plans = {}
        self.added = []
        self.upper.commit()

    def plan(self, sid: int, axis: str) -> LevelPlan | None:
        plans = self.plans.get(sid)
        return plans[axis] if plans else None

    def write(self, cur: duckdb.DuckDBPyConnection, columns: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
              counts: dict[int, int]) -> SortedPoints:
        """``columns``: (sid, steps, walls, values) per series; ``counts``: points
        stored per sid before this write. All series are chunked together (one
        pass over the write's points in (series, wall time) order, not a pass per
        series); returns those sorted points."""
        pts = SortedPoints.of(columns)
        plans_of: list[dict[str, LevelPlan] | None] = \
            [self.plans.get(sid) or self._pending_plans.get(sid) for sid in pts.sids.tolist()] \
            if self.rollups else [None] * len(pts.sids)
        written_from = self.next_cid  # the chunks of this write: not read back as stored ones below
        cids = self._add_chunks(cur, pts, plans_of)
        rolled: list[tuple[int, dict[str, LevelPlan], np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        starting: dict[int, list[tuple[np.ndarray, ...]]] = {}
        if self.rollups:
            bounds = pts.bounds.tolist()
            for i, (sid, plans) in enumerate(zip(pts.sids.tolist(), plans_of)):
                a, b = bounds[i], bounds[i + 1]
                part = (pts.steps[a:b], pts.walls[a:b], pts.values[a:b], cids[a:b])
                if plans is not None:
                    rolled.append((sid, plans, *part))
                elif counts.get(sid, 0) + (b - a) >= MIN_POINTS:  # not in the table until the end
                    starting[sid] = [part]
        if starting:
            self._start_rollups(cur, starting, rolled, written_from)
        if rolled:
            self._rollups(cur, rolled)
        return pts

    def _add_chunks(
        self, cur: duckdb.DuckDBPyConnection, pts: SortedPoints, plans_of: list[dict[str, LevelPlan] | None]
    ) -> np.ndarray:
        """The chunk rows of all series of a write, by one INSERT; each point's chunk id."""
        groups: tuple[np.ndarray, ...] = (pts.series,)
        rolled = np.array([p is not None for p in plans_of], bool)
        if rolled.any():  # a chunk of a series with rollups also ends where a bottom bucket does
            base_s = np.array([p["step"].base if p else 0 for p in plans_of], np.int64)[pts.series]
            base_t = np.array([p["time"].base if p else 0 for p in plans_of], np.int64)[pts.series]
            keep = rolled[pts.series]
            groups += (np.where(keep, np.right_shift(pts.steps, base_s), 0),
                       np.where(keep, np.right_shift(pts.walls, base_t), 0))
        n = len(pts.steps)
        starts = chunk_codec.split(n, groups)
        blobs = chunk_codec.encode(pts.steps, pts.walls, pts.values, starts)
        cid0 = self.next_cid
        self.next_cid += len(blobs)
        ends = np.append(starts[1:], n)
        lens = ends - starts
        new_chunks = {"sid": pts.sids[pts.series[starts]].astype(np.int32),
                      "cid": cid0 + np.arange(len(starts), dtype=np.int64), "n": lens.astype(np.int32),
                      "s0": np.minimum.reduceat(pts.steps, starts), "s1": np.maximum.reduceat(pts.steps, starts),
                      "w0": pts.walls[starts], "w1": pts.walls[ends - 1], "pts": np.array(blobs, dtype=object)}
        with scan(cur, "new_chunks", new_chunks):
            cur.execute("INSERT INTO chunks SELECT sid, cid, n, s0, s1, w0, w1, pts FROM new_chunks")
        return cid0 + np.repeat(np.arange(len(starts), dtype=np.int64), lens)

    def _start_rollups(self, cur: duckdb.DuckDBPyConnection, starting: dict[int, list[tuple[np.ndarray, ...]]],
                       rolled: list[tuple[Any, ...]], written_from: int) -> None:
        """These series reach MIN_POINTS: choose the levels of each from its points
        so far (stored, read for all of them by one statement, and new in this
        write) and roll up all of them."""
        with scan(cur, "starting", {"sid": np.array(list(starting), np.int32)}):
            got = cur.execute("SELECT c.sid, c.cid, c.n, c.pts FROM chunks c JOIN starting s ON c.sid = s.sid "
                              "WHERE c.cid < ? ORDER BY c.sid, c.cid", [written_from]).fetchnumpy()
        sids, cids, ns = ints(got["sid"]), ints(got["cid"]), ints(got["n"])
        bounds = np.searchsorted(sids, np.array(sorted(starting), np.int64), side="left").tolist() + [len(sids)]
        plan_rows = []
        for i, sid in enumerate(sorted(starting)):
            a, b = bounds[i], bounds[i + 1]
            old = chunk_codec.decode(got["pts"][a:b])
            old_cids = np.repeat(cids[a:b], ns[a:b])
            parts = [(old["step"], old["wall"], old["value"], old_cids), *starting[sid]]
            steps, walls, values, point_cids = (np.concatenate([p[j] for p in parts]) for j in range(4))
            first = np.argsort(walls, kind="stable")[:4096]
            plans = {"step": LevelPlan("step", choose_base("step", steps[first], BOTTOM_TARGET_POINTS)),
                     "time": LevelPlan("time", choose_base("time", walls[first], BOTTOM_TARGET_POINTS))}
            plan_rows.append((sid, plans["step"].base, plans["time"].base))
            self._pending_plans[sid] = plans
            rolled.append((sid, plans, steps, walls, values, point_cids))
        new_plans: dict[str, np.ndarray] = {"sid": np.array([r[0] for r in plan_rows], np.int32),
                     "bs": np.array([r[1] for r in plan_rows], np.int16),
                     "bt": np.array([r[2] for r in plan_rows], np.int16)}
        with scan(cur, "new_plans", new_plans):
            cur.execute("UPDATE series SET m4_base_step = p.bs, m4_base_time = p.bt FROM new_plans p "
                        "WHERE series.sid = p.sid")

    def _rollups(self, cur: duckdb.DuckDBPyConnection, rolled: list[tuple[Any, ...]]) -> None:
        """The partial rows of every level for ``(sid, plans, steps, walls, values, cids)``
        of each series, all series of an axis at once."""
        sids = np.array([r[0] for r in rolled], np.int32)
        columns = [[r[i] for r in rolled] for i in range(2, 6)]
        for axis in AXES:
            upper = []
            for k, series, buckets, agg in many_partials([r[1][axis] for r in rolled], *columns):
                self.added.append((axis, k, sids[series], buckets, agg))
                if k == 0:
                    self._insert_bottom(cur, axis, sids[series], buckets, agg)
                else:
                    upper.append((sids[series], k, buckets, agg))
            self.upper.append(cur, axis, upper)

    @staticmethod
    def _insert_bottom(cur: duckdb.DuckDBPyConnection, axis: str, sids: np.ndarray, buckets: np.ndarray,
                       agg: M4Agg) -> None:
        new_rows = {"sid": sids, "b": buckets, **agg_columns(agg), "c0": agg.c0, "c1": agg.c1}
        with scan(cur, "new_rows", new_rows):
            cur.execute(f"INSERT INTO m4b_{axis} SELECT sid, b, {', '.join(AGG_NAMES)}, c0, c1 FROM new_rows")


# ---------------------------------------------------------------------- reading
def series_query(cur: duckdb.DuckDBPyConnection, q: SeriesQuery, sid: int, plan: LevelPlan | None,
                 origin: int, cache: Reader | None = None) -> SeriesResult:
    """One series' answer; its rollup rows from ``cache`` when given (:mod:`.rollcache`)."""
    axis = rollup_axis(q.x)
    xc = ("s0", "s1") if axis == "step" else ("w0", "w1")
    col = ("min_step", "max_step") if axis == "step" else ("first_ns", "last_ns")
    found = cur.execute(f"SELECT count, {col[0]}, {col[1]} FROM series WHERE sid = ?", [sid]).fetchall()
    if not found or found[0][1] is None:
        return empty_result(q)
    count, extent = int(found[0][0]), (int(found[0][1]), int(found[0][2]))
    raw_where = f"sid = ? AND {xc[1]} >= ? AND {xc[0]} <= ?"
    if plan is not None:
        def raw(f: Frame, _: None, agg: M4Agg) -> SeriesResult:
            pts = _chunk_points(cur, raw_where, [sid, f.lo, f.hi])
            return raw_result(f, pts["step"], pts["wall"], pts["value"], agg.point(LAST, 0),
                              agg.point(FIRST, len(agg) - 1))

        return rollup_answer(q, origin, extent, count, plan,
                             lambda f: (None, _rolled_up(cur, sid, plan, f, cache)), raw, RAW_BELOW, RAW_BELOW)
    f = frame(q, origin, extent, None)
    if f is None or f.lo > f.hi:
        return empty_result(q)
    pts = _chunk_points(cur, raw_where, [sid, f.lo, f.hi])
    before = _neighbour(cur, sid, axis, f.lo, before=True)
    after = _neighbour(cur, sid, axis, f.hi, before=False)
    step, wall, value = (np.concatenate([p[k] for p in (pts, before, after)]) for k in ("step", "wall", "value"))
    return points_result(f, step, wall, value)


def _rolled_up(cur: duckdb.DuckDBPyConnection, sid: int, plan: LevelPlan, f: Frame, cache: Reader | None) -> M4Agg:
    """Per-interval aggregates of a frame: its rollup rows and the chunks of its straddling buckets."""
    assert f.pieces is not None
    entry = cache.entry(sid, f.axis, plan) if cache is not None else None
    rows: list[tuple[int, np.ndarray, M4Agg]] | Entry
    if entry is not None:
        rows, cids = entry, cached_straddler_chunks(entry, f.pieces)
    else:
        rows = _rollup_rows(cur, sid, f.axis, plan, f.pieces)
        cids = straddler_chunks(rows, f.pieces)
    raw = _chunks_by_id(cur, sid, cids)
    return assemble(f, rows, (raw["step"], raw["wall"], raw["value"]))


def straddler_chunks(rows: list[tuple[int, np.ndarray, M4Agg]], pieces: Any) -> np.ndarray:
    """The ids of the chunks of the straddling buckets, from a frame's rows as read from the tables."""
    bottom = rows[0][2]
    strad = np.flatnonzero(np.isin(rows[0][1], pieces.straddlers) & (bottom.c0 >= 0))
    return _expand(bottom.c0[strad], bottom.c1[strad])


def cached_straddler_chunks(entry: Entry, pieces: Any) -> np.ndarray:
    """The ids of the chunks of a frame's straddling buckets, from a cache entry
    (whose rows the frame then folds where they lie: :meth:`.rollrows.Entry.fold_into`)."""
    c0, c1 = entry.chunk_ranges(pieces.straddlers)
    known = c0 >= 0
    return _expand(c0[known], c1[known])


def _rollup_rows(cur: duckdb.DuckDBPyConnection, sid: int, axis: str, plan: LevelPlan,
                 pieces: Any) -> list[tuple[int, np.ndarray, M4Agg]]:
    """The rows of the pieces of every level (and of the straddling bottom
    buckets), read by one statement so that DuckDB scans the tables side by side."""
    bottom = np.union1d(pieces.keys(0), pieces.straddlers)
    upper = [(k, pieces.keys(k)) for k in plan.levels if 0 < k < plan.top]
    want = {"k": np.concatenate([np.full(len(b), k, np.int8) for k, b in upper]),
            "b": np.concatenate([b for _, b in upper])}
    cols = ", ".join(AGG_NAMES)
    # the BETWEENs let zone maps skip row groups when the view is zoomed in
    with scan(cur, "want_b", {"b": bottom}), scan(cur, "want", want):
        got = cur.execute(
            f"SELECT 0 AS k, m.b, {cols}, m.c0, m.c1 FROM m4b_{axis} m JOIN want_b w ON m.b = w.b "
            f"WHERE m.sid = $1 AND m.b BETWEEN $3 AND $4 "
            f"UNION ALL SELECT m.k, m.b, {cols}, -1, -1 FROM {upper_rows(axis)} m JOIN want w ON m.k = w.k "
            f"AND m.b = w.b WHERE m.sid = $1 AND m.b BETWEEN $5 AND $6 "
            f"UNION ALL SELECT k, b, {cols}, -1, -1 FROM {upper_rows(axis)} WHERE sid = $1 AND k = $2",
            [sid, plan.top, *_span(bottom), *_span(want["b"])]).fetchnumpy()
    return by_level(ints(got["k"]), ints(got["b"]), agg_from(got), plan.levels)


def by_level(k: np.ndarray, b: np.ndarray, agg: M4Agg, levels: range) -> list[tuple[int, np.ndarray, M4Agg]]:
    """Rows ``(k, buckets, agg)`` of each level: a slice of the rows read when
    the level's rows came together (the bottom and top levels, each from its
    own arm), a copy only when they came interleaved (the levels between share
    a table and come in its order)."""
    out = []
    for lv in levels:
        sel = np.flatnonzero(k == lv)
        if len(sel) and sel[-1] - sel[0] + 1 == len(sel):
            rows: np.ndarray | slice = slice(int(sel[0]), int(sel[-1]) + 1)
        else:
            rows = sel
        out.append((lv, b[rows], agg.take(rows)))
    return out


def _span(keys: np.ndarray) -> tuple[int, int]:
    """The smallest and the largest key (0, 0 when there are none): the bounds
    that let zone maps skip the row groups a query cannot need."""
    return (int(keys.min()), int(keys.max())) if len(keys) else (0, 0)


def _expand(c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
    lens = np.maximum(c1 - c0 + 1, 0)
    offsets = np.cumsum(lens) - lens
    ids = np.repeat(c0, lens) + np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(offsets, lens)
    return np.unique(ids)


def _chunks_by_id(cur: duckdb.DuckDBPyConnection, sid: int, cids: np.ndarray) -> np.ndarray:
    if len(cids) == 0:
        return np.zeros(0, dtype=chunk_codec.RECORD)
    with scan(cur, "want_c", {"cid": cids}):
        got = cur.execute("SELECT c.cid, c.pts FROM chunks c JOIN want_c w ON c.cid = w.cid WHERE c.sid = ? "
                          "AND c.cid BETWEEN ? AND ?", [sid, int(cids[0]), int(cids[-1])]).fetchnumpy()
    # in the order written (by id): points with equal (x, wall) keys then fold in the same order on every read
    return chunk_codec.decode(got["pts"][np.argsort(ints(got["cid"]))])


def _chunk_points(cur: duckdb.DuckDBPyConnection, where: str, params: list[Any]) -> np.ndarray:
    return chunk_codec.decode(cur.execute(f"SELECT pts FROM chunks WHERE {where}", params).fetchnumpy()["pts"])


def _neighbour(cur: duckdb.DuckDBPyConnection, sid: int, axis: str, edge: int, before: bool) -> np.ndarray:
    """The nearest point left of ``edge`` (or right): chunks in order of the
    best x they can hold, until none can beat the best found."""
    x0, x1 = ("s0", "s1") if axis == "step" else ("w0", "w1")
    if before:
        bound, cond, order = f"least({x1}, $2 - 1)", f"{x0} < $2", "DESC"
    else:
        bound, cond, order = f"greatest({x0}, $2 + 1)", f"{x1} > $2", "ASC"
    offset, best = 0, None
    while True:
        rows = cur.execute(f"SELECT {bound} AS bnd, pts FROM chunks WHERE sid = $1 AND {cond} "
                           f"ORDER BY bnd {order} LIMIT 8 OFFSET {offset}", [sid, edge]).fetchall()
        for bnd, blob in rows:
            if best is not None and ((bnd < best[0]) if before else (bnd > best[0])):
                return best[1]
            pts = chunk_codec.decode([blob])
            x = pts["step"] if axis == "step" else pts["wall"]
            pts = pts[(x < edge) if before else (x > edge)]
            if len(pts):
                order_idx = order_by_x(axis, pts["step"], pts["wall"])
                cand = pts[order_idx[-1 if before else 0]]
                cx = int(cand["step"] if axis == "step" else cand["wall"])
                key = (cx, int(cand["wall"]))
                if best is None or ((key > best[2]) if before else (key < best[2])):
                    best = (cx, cand.reshape(1), key)
        if len(rows) < 8:
            return best[1] if best is not None else np.zeros(0, dtype=chunk_codec.RECORD)
        offset += 8
