"""Many series queries answered together: the reads of :mod:`.points`, one
statement per phase for all of them instead of a few per series.

The queries of an overlay chart (ten runs, one key, the same range and width)
go through the phases of :func:`..m4.query.rollup_answers` side by side:

1. one statement reads the extent and count of every series;
2. one statement reads the rollup rows of every series' frame (its pixel
   columns' pieces, its straddling bottom buckets, its top level), one more
   the chunks of the straddling buckets; a second round of both only for
   ranges that looked small enough to be raw and were not;
3. one statement reads the raw points of the series answered raw.

Reads of chunks are one ``UNION ALL`` of one arm per series, each with its
own id or x range, so that DuckDB's zone maps skip other series' row groups
as they do for one series (a single join over all of them reads every
chunk's blob).

So ten series cost about as many statements as one (3 to 6), and each answer
is exactly the single-series answer: the same frames, the same rows, merged by
the same code. A series too short for rollups (under ``MIN_POINTS``) is read
on its own by :func:`.points.series_query`: a few points, a cheap query.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import duckdb
import numpy as np

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.duckdb import chunks as chunk_codec
from curvestream_bridge.store.duckdb.aggrows import AGG_NAMES, agg_from, ints, scan
from curvestream_bridge.store.duckdb.points import (
    RAW_BELOW,
    _span,
    by_level,
    cached_straddler_chunks,
    series_query,
    straddler_chunks,
)
from curvestream_bridge.store.duckdb.rollcache import Reader
from curvestream_bridge.store.duckdb.rollrows import Entry
from curvestream_bridge.store.duckdb.upper import upper_rows
from curvestream_bridge.store.m4.agg import FIRST, LAST, M4Agg
from curvestream_bridge.store.m4.levels import LevelPlan
from curvestream_bridge.store.m4.query import Frame, RollupJob, assemble, raw_result, rollup_answers, rollup_axis

__all__ = ["ManyItem", "series_many"]

ManyItem = tuple[SeriesQuery, int | None, LevelPlan | None, int]
"""(query, sid or None when the series does not exist, its levels or None, the run's origin in wall ns)."""


def series_many(cur: duckdb.DuckDBPyConnection, items: list[ManyItem], empty: Any,
                cache: Reader | None = None) -> list[SeriesResult]:
    """The answers of ``items``, in order; ``empty(query)`` answers a missing
    series; rollup rows from ``cache`` when given (:mod:`.rollcache`)."""
    out: list[SeriesResult | None] = [None] * len(items)
    known = [i for i, (_, sid, _, _) in enumerate(items) if sid is not None]
    stats = _stats(cur, [items[i][1] for i in known])  # type: ignore[misc]
    by_axis: dict[str, list[tuple[int, RollupJob, int]]] = {}
    for i, (q, sid, plan, origin) in enumerate(items):
        found = stats.get(sid) if sid is not None else None
        axis = rollup_axis(q.x)
        if found is None or found[axis] is None:
            out[i] = empty(q)
        elif plan is None:
            out[i] = series_query(cur, q, sid, None, origin, cache)  # type: ignore[arg-type]
        else:
            count, extent = found["count"], found[axis]
            by_axis.setdefault(axis, []).append((i, RollupJob(q, origin, extent, count, plan), sid))  # type: ignore[arg-type]
    for axis, entries in by_axis.items():
        sids = [sid for _, _, sid in entries]
        answers = rollup_answers(
            [job for _, job, _ in entries],
            functools.partial(_rolled_up_of, cur, axis, sids, cache),
            functools.partial(_raw_of, cur, axis, sids),
            RAW_BELOW, RAW_BELOW)
        for (i, _, _), answer in zip(entries, answers):
            out[i] = answer
    return out  # type: ignore[return-value]


def _stats(cur: duckdb.DuckDBPyConnection, sids: list[int]) -> dict[int, dict[str, Any]]:
    if not sids:
        return {}
    rows = cur.execute("SELECT sid, count, min_step, max_step, first_ns, last_ns FROM series "
                       "WHERE sid IN (SELECT unnest(?))", [sorted(set(sids))]).fetchall()
    return {sid: {"count": int(n),
                  "step": (int(s0), int(s1)) if s0 is not None else None,
                  "time": (int(w0), int(w1)) if w0 is not None else None}
            for sid, n, s0, s1, w0, w1 in rows}


def _rolled_up_of(cur: duckdb.DuckDBPyConnection, axis: str, sids: list[int], cache: Reader | None,
                  jobs: list[tuple[int, Frame]]) -> list[tuple[None, M4Agg]]:
    """``rolled_up`` of :func:`.rollup_answers` for series ``sids`` (jobs name them by index)."""
    return [(None, agg) for agg in _rolled_up(cur, axis, [(sids[j], f) for j, f in jobs], cache)]


def _raw_of(cur: duckdb.DuckDBPyConnection, axis: str, sids: list[int],
            jobs: list[tuple[int, Frame, None, M4Agg]]) -> list[SeriesResult]:
    """``raw`` of :func:`.rollup_answers` for series ``sids`` (jobs name them by index)."""
    return _raw(cur, axis, [(sids[j], f, agg) for j, f, _, agg in jobs])


def _rolled_up(cur: duckdb.DuckDBPyConnection, axis: str, frames: list[tuple[int, Frame]],
               cache: Reader | None) -> list[M4Agg]:
    """:func:`.points._rolled_up` of many (sid, frame) pairs: two statements
    (one when ``cache`` holds the rollup rows of every series)."""
    kept = [cache.entry(sid, axis, f.pieces.plan) if cache is not None else None  # type: ignore[union-attr]
            for sid, f in frames]
    unkept = [i for i, e in enumerate(kept) if e is None]
    read = iter(_rollup_rows(cur, axis, [frames[i] for i in unkept]) if unkept else [])
    rows: list[list[tuple[int, np.ndarray, M4Agg]] | Entry] = []
    want: dict[str, list[np.ndarray]] = {"i": [], "cid": []}
    for i, ((_sid, f), entry) in enumerate(zip(frames, kept)):
        assert f.pieces is not None
        if entry is not None:
            rows.append(entry)
            cids = cached_straddler_chunks(entry, f.pieces)
        else:
            fresh = next(read)
            rows.append(fresh)
            cids = straddler_chunks(fresh, f.pieces)
        want["i"].append(np.full(len(cids), i, np.int64))
        want["cid"].append(cids)
    # one arm per frame, each with its own id range: zone maps then skip the row
    # groups of other series (one join over all of them would read every chunk's blob)
    w = {k: np.concatenate(v) for k, v in want.items()}
    arms = []
    for i, (sid, _) in enumerate(frames):
        mine = w["cid"][w["i"] == i]
        if len(mine):
            arms.append(f"SELECT {i} AS i, c.pts, c.cid FROM chunks c JOIN want_c w ON c.cid = w.cid AND w.i = {i} "
                        f"WHERE c.sid = {int(sid)} AND c.cid BETWEEN {int(mine.min())} AND {int(mine.max())}")
    raws = _blobs_by(cur, len(frames), arms, w)
    return [assemble(f, levels, (raw["step"], raw["wall"], raw["value"]))
            for (_, f), levels, raw in zip(frames, rows, raws)]


def _rollup_rows(cur: duckdb.DuckDBPyConnection, axis: str,
                 frames: list[tuple[int, Frame]]) -> list[list[tuple[int, np.ndarray, M4Agg]]]:
    """For each frame, the rows of its pieces at every level (and of its
    straddling bottom buckets), all read by one statement: the ``UNION ALL``
    of :func:`.points._rollup_rows`' statement for each."""
    want_b: dict[str, list[np.ndarray]] = {"i": [], "b": []}
    want: dict[str, list[np.ndarray]] = {"i": [], "k": [], "b": []}
    for i, (_, f) in enumerate(frames):
        assert f.pieces is not None
        plan = f.pieces.plan
        bottom = np.union1d(f.pieces.keys(0), f.pieces.straddlers)
        want_b["i"].append(np.full(len(bottom), i, np.int64))
        want_b["b"].append(bottom.astype(np.int64))
        for k in plan.levels:
            if 0 < k < plan.top:
                keys = f.pieces.keys(k)
                want["i"].append(np.full(len(keys), i, np.int64))
                want["k"].append(np.full(len(keys), k, np.int8))
                want["b"].append(keys.astype(np.int64))
    wb = {k: np.concatenate(v) for k, v in want_b.items()}
    wu = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in want.items()}
    cols = ", ".join(f"m.{c}" for c in AGG_NAMES)
    arms = []
    for i, (sid, f) in enumerate(frames):
        # as .points._rollup_rows for one series: its sid and the BETWEENs let zone maps skip row groups
        b, u = wb["b"][wb["i"] == i], wu["b"][wu["i"] == i]
        assert f.pieces is not None
        arms += [
            f"SELECT w.i, 0 AS k, m.b, {cols}, m.c0, m.c1 FROM m4b_{axis} m JOIN want_b w ON m.b = w.b "
            f"AND w.i = {i} WHERE m.sid = {int(sid)} AND m.b BETWEEN {_span(b)[0]} AND {_span(b)[1]}",
            f"SELECT w.i, m.k, m.b, {cols}, -1, -1 FROM {upper_rows(axis)} m JOIN want w ON m.k = w.k "
            f"AND m.b = w.b AND w.i = {i} WHERE m.sid = {int(sid)} AND m.b BETWEEN {_span(u)[0]} AND {_span(u)[1]}",
            f"SELECT {i}, k, b, {', '.join(AGG_NAMES)}, -1, -1 FROM {upper_rows(axis)} "
            f"WHERE sid = {int(sid)} AND k = {int(f.pieces.plan.top)}",
        ]
    with scan(cur, "want_b", wb), scan(cur, "want", wu):
        got = cur.execute(" UNION ALL ".join(arms)).fetchnumpy()
    i_all, k_all, b_all, agg = ints(got["i"]), ints(got["k"]), ints(got["b"]), agg_from(got)
    if len(i_all) > 1 and not bool(np.all(i_all[1:] >= i_all[:-1])):  # arms came interleaved
        order = np.argsort(i_all, kind="stable")
        i_all, k_all, b_all, agg = i_all[order], k_all[order], b_all[order], agg.take(order)
    bounds = np.searchsorted(i_all, np.arange(len(frames) + 1))
    return [by_level(k_all[a:b], b_all[a:b], agg.take(slice(a, b)), f.pieces.plan.levels)  # type: ignore[union-attr]
            for (_, f), a, b in zip(frames, bounds[:-1], bounds[1:])]


def _raw(cur: duckdb.DuckDBPyConnection, axis: str, frames: list[tuple[int, Frame, M4Agg]]) -> list[SeriesResult]:
    """The raw answers of many (sid, frame, aggregates): one statement."""
    x0, x1 = ("s0", "s1") if axis == "step" else ("w0", "w1")
    arms = [f"SELECT {i} AS i, pts, cid FROM chunks WHERE sid = {int(sid)} AND {x1} >= {int(f.lo)} "
            f"AND {x0} <= {int(f.hi)}"
            for i, (sid, f, _) in enumerate(frames)]
    pts = _blobs_by(cur, len(frames), arms)
    return [raw_result(f, p["step"], p["wall"], p["value"], agg.point(LAST, 0), agg.point(FIRST, len(agg) - 1))
            for (_, f, agg), p in zip(frames, pts)]


def _blobs_by(cur: duckdb.DuckDBPyConnection, n: int, arms: list[str],
              want: dict[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """Run the ``UNION ALL`` of ``arms`` (each ``SELECT i, pts, cid …``, integers
    inlined; ``want``: the table ``want_c`` they may join) in one statement,
    and decode the chunks of each ``i`` in ``range(n)``, in the order they
    were written (their points then come in x order, mostly: no sort needed
    to merge them)."""
    if not arms:
        return [np.zeros(0, dtype=chunk_codec.RECORD) for _ in range(n)]
    with scan(cur, "want_c", want if want is not None else {"i": np.zeros(0, np.int64), "cid": np.zeros(0, np.int64)}):
        got = cur.execute(" UNION ALL ".join(arms)).fetchnumpy()  # columns: no Python tuple per chunk
    i, cid = ints(got["i"]), ints(got["cid"])
    order = np.lexsort((cid, i))
    blobs, bounds = got["pts"][order], np.searchsorted(i[order], np.arange(n + 1))
    return [chunk_codec.decode(blobs[a:b]) for a, b in itertools.pairwise(bounds)]
