"""Scalar points in DuckDB: raw chunks, M4 rollups, and the series query.

Tables (``<axis>`` is ``step`` or ``time``)::

    chunks(sid, cid, n, s0, s1, w0, w1, pts)      -- raw points, see .chunks; s0/s1, w0/w1: step and wall extents
    m4b_<axis>(sid, b, <aggregate>, c0, c1)        -- bottom level 0: one partial row per batch and bucket,
                                                    -- c0..c1: the chunks holding its points
    m4_<axis>(sid, k, b, <aggregate>)              -- levels 1 .. 7: one row per bucket, merged on write
                                                    -- (INSERT .. ON CONFLICT DO UPDATE on the primary key)

``<aggregate>`` is ``n`` and the first, last, min, max points (``f_s, f_w,
f_v`` …: step, wall, value), the first NaN (``nan_s, nan_w``) and the
``has_mn``/``has_mx``/``has_nan`` flags (see :mod:`..m4.agg`). Everything is
written in the caller's transaction, together with the points.

A query of a series with rollups reads the rows of the buckets that cover its
pixel columns (:mod:`..m4.plan`) and the chunks of the straddling bottom
buckets, then merges them (:mod:`..m4.query`): O(width · fanout · levels) rows
whatever the length of the series.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import duckdb
import numpy as np

from curvestream_bridge.store.duckdb import chunks as chunk_codec
from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.m4.levels import AXES, MIN_POINTS, LevelPlan, batch_partials, choose_base, order_by_x
from curvestream_bridge.store.m4.agg import FIRST, LAST, MAX, MIN, NAN, M4Agg, merge
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

__all__ = ["SCHEMA", "PointWriter", "series_query", "scan", "BOTTOM_TARGET_POINTS"]

BOTTOM_TARGET_POINTS = 64
"""A bottom bucket holds up to about this many points (8 to 64 on a regular series)."""

PROBE_BELOW = 4
"""Count a range first only when it likely holds at most 4·width points (is
likely answered raw): a count costs a statement nearly as dear as the rows of
the full frame, so counting a range that then needs its columns after all
costs about half again."""

_AGG_COLS = ("n BIGINT NOT NULL, f_s BIGINT, f_w BIGINT, f_v DOUBLE, l_s BIGINT, l_w BIGINT, l_v DOUBLE, "
             "mn_s BIGINT, mn_w BIGINT, mn_v DOUBLE, mx_s BIGINT, mx_w BIGINT, mx_v DOUBLE, nan_s BIGINT, "
             "nan_w BIGINT, has_mn BOOLEAN, has_mx BOOLEAN, has_nan BOOLEAN")
_AGG_NAMES = ("n", "f_s", "f_w", "f_v", "l_s", "l_w", "l_v", "mn_s", "mn_w", "mn_v", "mx_s", "mx_w", "mx_v",
              "nan_s", "nan_w", "has_mn", "has_mx", "has_nan")
_KIND_PREFIX = ((FIRST, "f"), (LAST, "l"), (MIN, "mn"), (MAX, "mx"), (NAN, "nan"))

SCHEMA = "\n".join(
    ["CREATE TABLE IF NOT EXISTS chunks (sid INTEGER NOT NULL, cid BIGINT NOT NULL, n INTEGER NOT NULL, "
     "s0 BIGINT NOT NULL, s1 BIGINT NOT NULL, w0 BIGINT NOT NULL, w1 BIGINT NOT NULL, pts BLOB NOT NULL);"]
    + [f"CREATE TABLE IF NOT EXISTS m4b_{a} (sid INTEGER NOT NULL, b BIGINT NOT NULL, {_AGG_COLS}, "
       "c0 BIGINT, c1 BIGINT);" for a in AXES]
    + [f"CREATE TABLE IF NOT EXISTS m4_{a} (sid INTEGER NOT NULL, k TINYINT NOT NULL, b BIGINT NOT NULL, "
       f"{_AGG_COLS}, PRIMARY KEY (sid, k, b));" for a in AXES]
)


@contextlib.contextmanager
def scan(cur: duckdb.DuckDBPyConnection, name: str, columns: dict[str, np.ndarray]) -> Iterator[None]:
    """Numpy columns visible to SQL as table ``name`` while in the block."""
    cur.register(name, columns)
    try:
        yield
    finally:
        cur.unregister(name)


def _upsert_sql(axis: str) -> str:
    """Merge a row into the stored one, with the tie rules of .m4agg.merge."""
    x = "s" if axis == "step" else "w"

    def key(p: str, t: str, with_value: bool = False) -> str:
        parts = ([f"{t}.{p}_v"] if with_value else []) + [f"{t}.{p}_{x}", f"{t}.{p}_w"]
        return "(" + ", ".join(parts) + ")"

    wins = {
        "f": f"{key('f', 'excluded')} < {key('f', 't')}",
        "l": f"{key('l', 'excluded')} > {key('l', 't')}",
        "mn": f"excluded.has_mn AND (NOT t.has_mn OR {key('mn', 'excluded', True)} < {key('mn', 't', True)})",
        "mx": f"excluded.has_mx AND (NOT t.has_mx OR {key('mx', 'excluded', True)} > {key('mx', 't', True)})",
        "nan": f"excluded.has_nan AND (NOT t.has_nan OR {key('nan', 'excluded')} < {key('nan', 't')})",
    }
    sets = ["n = t.n + excluded.n"]
    for prefix, cond in wins.items():
        cols = [f"{prefix}_s", f"{prefix}_w"] + ([] if prefix == "nan" else [f"{prefix}_v"])
        sets += [f"{c} = CASE WHEN {cond} THEN excluded.{c} ELSE t.{c} END" for c in cols]
    sets += ["has_mn = t.has_mn OR excluded.has_mn", "has_mx = t.has_mx OR excluded.has_mx",
             "has_nan = t.has_nan OR excluded.has_nan"]
    return (f"INSERT INTO m4_{axis} AS t SELECT sid, k, b, {', '.join(_AGG_NAMES)} FROM new_rows "
            f"ON CONFLICT (sid, k, b) DO UPDATE SET {', '.join(sets)}")


_UPSERT = {a: _upsert_sql(a) for a in AXES}


def _agg_columns(agg: M4Agg) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {"n": agg.n}
    for kind, p in _KIND_PREFIX:
        cols[f"{p}_s"] = agg.step[kind]
        cols[f"{p}_w"] = agg.wall[kind]
        if kind != NAN:
            cols[f"{p}_v"] = agg.value[kind]  # NaN (first/last) becomes NULL, read back as NaN
    cols["has_mn"], cols["has_mx"], cols["has_nan"] = agg.has[MIN], agg.has[MAX], agg.has[NAN]
    return cols


def _agg_from(rows: dict[str, Any]) -> M4Agg:
    m = len(rows["n"])
    agg = M4Agg.empty(m)
    agg.n = np.asarray(rows["n"], dtype=np.int64)
    for kind, p in _KIND_PREFIX:
        agg.step[kind] = _ints(rows[f"{p}_s"])
        agg.wall[kind] = _ints(rows[f"{p}_w"])
        agg.value[kind] = np.nan if kind == NAN else _floats(rows[f"{p}_v"])
    agg.has[FIRST] = agg.has[LAST] = True
    agg.has[MIN], agg.has[MAX], agg.has[NAN] = (np.asarray(rows[c], dtype=bool) for c in ("has_mn", "has_mx", "has_nan"))
    if "c0" in rows:
        agg.c0, agg.c1 = _ints(rows["c0"]), _ints(rows["c1"])
    return agg


def _ints(a: Any) -> np.ndarray:
    return np.ma.filled(np.ma.asarray(a, dtype=np.int64), 0)


def _floats(a: Any) -> np.ndarray:
    return np.ma.filled(np.ma.asarray(a, dtype=np.float64), np.nan)


class PointWriter:
    """Writes scalar columns as chunks and rollups, inside the caller's
    transaction. ``commit()`` after COMMIT makes new state visible to readers;
    ``reload()`` after a ROLLBACK forgets what did not happen."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, rollups: bool) -> None:
        self.rollups = rollups
        self.plans: dict[int, dict[str, LevelPlan]] = {}
        self._pending_plans: dict[int, dict[str, LevelPlan]] = {}
        self.reload(cur)

    def reload(self, cur: duckdb.DuckDBPyConnection) -> None:
        self.next_cid = int(cur.execute("SELECT coalesce(max(cid), 0) + 1 FROM chunks").fetchall()[0][0])
        self.plans = {}
        for sid, bs, bt in cur.execute("SELECT sid, m4_base_step, m4_base_time FROM series "
                                       "WHERE m4_base_step IS NOT NULL").fetchall():
            self.plans[sid] = {"step": LevelPlan("step", int(bs)), "time": LevelPlan("time", int(bt))}
        self._pending_plans = {}

    def commit(self) -> None:
        self.plans.update(self._pending_plans)
        self._pending_plans = {}

    def plan(self, sid: int, axis: str) -> LevelPlan | None:
        plans = self.plans.get(sid)
        return plans[axis] if plans else None

    def write(self, cur: duckdb.DuckDBPyConnection, columns: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
              counts: dict[int, int]) -> None:
        """``columns``: (sid, steps, walls, values) per batch and key; ``counts``:
        points stored per sid before this write."""
        chunk_rows: dict[str, list[Any]] = {k: [] for k in ("sid", "cid", "n", "s0", "s1", "w0", "w1", "pts")}
        bottom: dict[str, list[tuple[int, np.ndarray, M4Agg]]] = {a: [] for a in AXES}
        upper: dict[str, list[tuple[int, int, np.ndarray, M4Agg]]] = {a: [] for a in AXES}
        pending = dict(counts)
        held: dict[int, list[tuple[np.ndarray, ...]]] = {}
        for sid, steps, walls, values in columns:
            order = np.argsort(walls, kind="stable")
            steps, walls, values = steps[order], walls[order], values[order]
            plans = self.plans.get(sid) or self._pending_plans.get(sid)
            cids = self._add_chunks(chunk_rows, sid, steps, walls, values, plans if self.rollups else None)
            pending[sid] = pending.get(sid, 0) + len(steps)
            if plans is None and self.rollups:
                held.setdefault(sid, []).append((steps, walls, values, cids))  # not in the table until the end
                if pending[sid] >= MIN_POINTS:
                    plans = self._start_rollups(cur, sid, held.pop(sid), bottom, upper)
            elif plans is not None and self.rollups:
                self._partials(plans, sid, steps, walls, values, cids, bottom, upper)
        if chunk_rows["sid"]:
            new_chunks = {k: np.concatenate(v) for k, v in chunk_rows.items() if k != "pts"}
            new_chunks["pts"] = np.array(chunk_rows["pts"], dtype=object)
            with scan(cur, "new_chunks", new_chunks):
                cur.execute("INSERT INTO chunks SELECT sid, cid, n, s0, s1, w0, w1, pts FROM new_chunks")
        for axis in AXES:
            self._insert_bottom(cur, axis, bottom[axis])
            self._upsert_upper(cur, axis, upper[axis])

    def _add_chunks(self, rows: dict[str, list[Any]], sid: int, steps: np.ndarray, walls: np.ndarray,
                    values: np.ndarray, plans: dict[str, LevelPlan] | None) -> np.ndarray:
        groups = () if plans is None else (np.right_shift(steps, plans["step"].base),
                                           np.right_shift(walls, plans["time"].base))
        starts = chunk_codec.split(len(steps), groups)
        blobs = chunk_codec.encode(steps, walls, values, starts)
        cid0 = self.next_cid
        self.next_cid += len(blobs)
        rows["sid"].append(np.full(len(starts), sid, np.int32))
        rows["cid"].append(cid0 + np.arange(len(starts), dtype=np.int64))
        rows["n"].append(np.diff(np.append(starts, len(steps))).astype(np.int32))
        rows["s0"].append(np.minimum.reduceat(steps, starts))
        rows["s1"].append(np.maximum.reduceat(steps, starts))
        rows["w0"].append(walls[starts])
        rows["w1"].append(walls[np.append(starts[1:], len(steps)) - 1])
        rows["pts"].extend(blobs)
        return cid0 + np.repeat(np.arange(len(starts), dtype=np.int64), rows["n"][-1])

    def _start_rollups(self, cur: duckdb.DuckDBPyConnection, sid: int, new: list[tuple[np.ndarray, ...]],
                       bottom: dict, upper: dict) -> dict[str, LevelPlan]:
        """The series reaches MIN_POINTS: choose its levels from its points so far
        (stored, and ``new`` in this write) and roll up all of them."""
        rows = cur.execute("SELECT cid, n, pts FROM chunks WHERE sid = ? ORDER BY cid", [sid]).fetchall()
        old = chunk_codec.decode([r[2] for r in rows])
        old_cids = np.repeat(np.array([r[0] for r in rows], dtype=np.int64), [r[1] for r in rows])
        parts = [(old["step"], old["wall"], old["value"], old_cids), *new]
        steps, walls, values, cids = (np.concatenate([p[i] for p in parts]) for i in range(4))
        first = np.argsort(walls, kind="stable")[:4096]
        plans = {"step": LevelPlan("step", choose_base("step", steps[first], BOTTOM_TARGET_POINTS)),
                 "time": LevelPlan("time", choose_base("time", walls[first], BOTTOM_TARGET_POINTS))}
        cur.execute("UPDATE series SET m4_base_step = ?, m4_base_time = ? WHERE sid = ?",
                    [plans["step"].base, plans["time"].base, sid])
        self._pending_plans[sid] = plans
        self._partials(plans, sid, steps, walls, values, cids, bottom, upper)
        return plans

    @staticmethod
    def _partials(plans: dict[str, LevelPlan], sid: int, steps: np.ndarray, walls: np.ndarray, values: np.ndarray,
                  cids: np.ndarray, bottom: dict, upper: dict) -> None:
        for axis, plan in plans.items():
            for k, buckets, agg in batch_partials(plan, steps, walls, values, cids):
                if k == plan.k0:
                    bottom[axis].append((sid, buckets, agg))
                else:
                    upper[axis].append((sid, k, buckets, agg))

    @staticmethod
    def _insert_bottom(cur: duckdb.DuckDBPyConnection, axis: str, parts: list[tuple[int, np.ndarray, M4Agg]]) -> None:
        if not parts:
            return
        agg = M4Agg.concat([p[2] for p in parts])
        new_rows = {"sid": np.concatenate([np.full(len(p[1]), p[0], np.int32) for p in parts]),
                    "b": np.concatenate([p[1] for p in parts]), **_agg_columns(agg), "c0": agg.c0, "c1": agg.c1}
        with scan(cur, "new_rows", new_rows):
            cur.execute(f"INSERT INTO m4b_{axis} SELECT sid, b, {', '.join(_AGG_NAMES)}, c0, c1 FROM new_rows")

    @staticmethod
    def _upsert_upper(cur: duckdb.DuckDBPyConnection, axis: str, parts: list[tuple[int, int, np.ndarray, M4Agg]]) -> None:
        if not parts:
            return
        sid = np.concatenate([np.full(len(p[2]), p[0], np.int64) for p in parts])
        k = np.concatenate([np.full(len(p[2]), p[1], np.int64) for p in parts])
        b = np.concatenate([p[2] for p in parts])
        agg = M4Agg.concat([p[3] for p in parts])
        # one row per key: ON CONFLICT may not touch a row twice in one statement
        keys, group = np.unique(np.stack([sid, k, b]), axis=1, return_inverse=True)
        agg = merge(agg, group.ravel(), keys.shape[1], axis)
        new_rows = {"sid": keys[0].astype(np.int32), "k": keys[1].astype(np.int8), "b": keys[2], **_agg_columns(agg)}
        with scan(cur, "new_rows", new_rows):
            cur.execute(_UPSERT[axis])


# ---------------------------------------------------------------------- reading
def series_query(cur: duckdb.DuckDBPyConnection, q: SeriesQuery, sid: int, plan: LevelPlan | None,
                 origin: int) -> SeriesResult:
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

        return rollup_answer(q, origin, extent, count, plan, lambda f: (None, _rolled_up(cur, sid, plan, f)), raw,
                             PROBE_BELOW)
    f = frame(q, origin, extent, None)
    if f is None or f.lo > f.hi:
        return empty_result(q)
    pts = _chunk_points(cur, raw_where, [sid, f.lo, f.hi])
    before = _neighbour(cur, sid, axis, f.lo, before=True)
    after = _neighbour(cur, sid, axis, f.hi, before=False)
    step, wall, value = (np.concatenate([p[k] for p in (pts, before, after)]) for k in ("step", "wall", "value"))
    return points_result(f, step, wall, value)


def _rolled_up(cur: duckdb.DuckDBPyConnection, sid: int, plan: LevelPlan, f: Frame) -> M4Agg:
    """Per-interval aggregates of a frame: its rollup rows and the chunks of its straddling buckets."""
    assert f.pieces is not None
    rows = _rollup_rows(cur, sid, f.axis, plan, f.pieces)
    bottom = rows[0][2]
    strad = np.flatnonzero(np.isin(rows[0][1], f.pieces.straddlers) & (bottom.c0 >= 0))
    raw = _chunks_by_id(cur, sid, _expand(bottom.c0[strad], bottom.c1[strad]))
    return assemble(f, rows, (raw["step"], raw["wall"], raw["value"]))


def _rollup_rows(cur: duckdb.DuckDBPyConnection, sid: int, axis: str, plan: LevelPlan,
                 pieces: Any) -> list[tuple[int, np.ndarray, M4Agg]]:
    """The rows of the pieces of every level (and of the straddling bottom
    buckets), read by one statement so that DuckDB scans the tables side by side."""
    bottom = np.union1d(pieces.keys(0), pieces.straddlers)
    upper = [(k, pieces.keys(k)) for k in plan.levels if 0 < k < plan.top]
    want = {"k": np.concatenate([np.full(len(b), k, np.int8) for k, b in upper]),
            "b": np.concatenate([b for _, b in upper])}
    cols = ", ".join(_AGG_NAMES)
    # the BETWEENs let zone maps skip row groups when the view is zoomed in
    with scan(cur, "want_b", {"b": bottom}), scan(cur, "want", want):
        got = cur.execute(
            f"SELECT 0 AS k, m.b, {cols}, m.c0, m.c1 FROM m4b_{axis} m JOIN want_b w ON m.b = w.b "
            f"WHERE m.sid = $1 AND m.b BETWEEN $3 AND $4 "
            f"UNION ALL SELECT m.k, m.b, {cols}, -1, -1 FROM m4_{axis} m JOIN want w ON m.k = w.k AND m.b = w.b "
            f"WHERE m.sid = $1 AND m.b BETWEEN $5 AND $6 "
            f"UNION ALL SELECT k, b, {cols}, -1, -1 FROM m4_{axis} WHERE sid = $1 AND k = $2",
            [sid, plan.top, *_span(bottom), *_span(want["b"])]).fetchnumpy()
    return by_level(_ints(got["k"]), _ints(got["b"]), _agg_from(got), plan.levels)


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
        rows = cur.execute("SELECT c.cid, c.pts FROM chunks c JOIN want_c w ON c.cid = w.cid WHERE c.sid = ? "
                           "AND c.cid BETWEEN ? AND ?", [sid, int(cids[0]), int(cids[-1])]).fetchall()
    rows.sort()  # in the order written: their points then come in x order, mostly (no sort needed to merge them)
    return chunk_codec.decode([r[1] for r in rows])


def _chunk_points(cur: duckdb.DuckDBPyConnection, where: str, params: list[Any]) -> np.ndarray:
    rows = cur.execute(f"SELECT pts FROM chunks WHERE {where}", params).fetchall()
    return chunk_codec.decode([r[0] for r in rows])


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
