"""A series' rollup rows as the rollup cache keeps them (:mod:`.rollcache`):
per level, one merged row per bucket sorted by bucket, and the rows later
writes added, as they were written; the chunk-id ranges of every bottom row
beside them. Loaded from the tables in one statement, extended by copying
(entries are shared by the reads that hold them), compacted now and then.
"""

from __future__ import annotations

import dataclasses

import duckdb
import numpy as np

from curvestream_bridge.store.duckdb.aggrows import AGG_NAMES, agg_from, ints
from curvestream_bridge.store.duckdb.upper import upper_rows
from curvestream_bridge.store.m4.agg import M4Agg, merge
from curvestream_bridge.store.m4.fold import Folded
from curvestream_bridge.store.m4.levels import LevelPlan
from curvestream_bridge.store.m4.plan import Pieces

__all__ = ["Added", "Level", "Entry", "load", "extend", "freeze", "COMPACT_SHARE", "COMPACT_MIN"]

COMPACT_SHARE = 16
"""A level's added rows are merged in once they exceed 1/16 of its merged rows…"""
COMPACT_MIN = 512
"""… and this many: a live series' small writes append, a merge copies the level."""

Added = tuple[str, int, np.ndarray, np.ndarray, M4Agg]
"""Rows a write added: (axis, level, sids, buckets, aggregates; bottom ones with c0/c1)."""


@dataclasses.dataclass(frozen=True)
class Level:
    """One level's rows: merged (``b`` sorted, unique) and added since (``pb``, any order)."""

    b: np.ndarray
    agg: M4Agg
    pb: np.ndarray
    pagg: M4Agg

    def fold_into(self, acc: Folded, k: int, pieces: Pieces, axis: str) -> None:
        """Fold the rows of level k's pieces: each piece's merged rows are a
        range of ``b`` (read in place), the added rows are picked one by one."""
        r = pieces.ranges[k]
        if len(r):
            acc.rows(self.agg, np.searchsorted(self.b, r[:, 0]), np.searchsorted(self.b, r[:, 1]), r[:, 2], axis)
        if len(self.pb):
            acc.each_row(self.pagg, pieces.interval_of(k, self.pb), axis)


@dataclasses.dataclass(frozen=True)
class Entry:
    """The rows of one series and axis as of commit ``as_of``. ``cb``/``c0``/``c1``:
    the chunk-id range of every bottom row, sorted by bucket (those added since
    ride in ``levels[0].pagg``)."""

    plan: LevelPlan
    levels: tuple[Level, ...]
    cb: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    as_of: int

    @property
    def nbytes(self) -> int:
        n = self.cb.nbytes + self.c0.nbytes + self.c1.nbytes
        for lv in self.levels:
            n += lv.b.nbytes + lv.pb.nbytes + _agg_bytes(lv.agg) + _agg_bytes(lv.pagg)
        return n

    def fold_into(self, acc: Folded, pieces: Pieces, axis: str) -> None:
        """Fold the rows of a frame's pieces, every level (a :class:`..m4.query.RowSource`)."""
        for k, lv in enumerate(self.levels):
            lv.fold_into(acc, k, pieces, axis)

    def chunk_ranges(self, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chunk-id ranges ``(c0, c1)`` of every bottom row of ``buckets`` (sorted)."""
        lo, hi = np.searchsorted(self.cb, buckets, "left"), np.searchsorted(self.cb, buckets, "right")
        lens = hi - lo
        idx = np.repeat(lo, lens) + np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        added = self.levels[0]
        if len(added.pb) == 0:  # most reads: np.isin costs ~0.1 ms even on nothing
            return self.c0[idx], self.c1[idx]
        mine = np.flatnonzero(np.isin(added.pb, buckets))
        return (np.concatenate([self.c0[idx], added.pagg.c0[mine]]),
                np.concatenate([self.c1[idx], added.pagg.c1[mine]]))


def load(cur: duckdb.DuckDBPyConnection, sid: int, axis: str, plan: LevelPlan, as_of: int) -> Entry:
    """All rows of a series and axis, read in ``cur``'s snapshot, merged per bucket."""
    cols = ", ".join(AGG_NAMES)
    got = cur.execute(f"SELECT 0 AS k, b, {cols}, c0, c1 FROM m4b_{axis} WHERE sid = $1 UNION ALL "
                      f"SELECT k, b, {cols}, -1, -1 FROM {upper_rows(axis)} WHERE sid = $1", [sid]).fetchnumpy()
    k, b, agg = ints(got["k"]), ints(got["b"]), agg_from(got)
    if len(b) > 1 and not bool(np.all((k[1:] > k[:-1]) | ((k[1:] == k[:-1]) & (b[1:] >= b[:-1])))):
        order = np.lexsort((b, k))  # rows come in the order written: sorting them here costs less than in SQL
        k, b, agg = k[order], b[order], agg.take(order)
    bounds = np.searchsorted(k, np.arange(plan.top + 2))
    levels = []
    for lv in plan.levels:
        rows = slice(int(bounds[lv]), int(bounds[lv + 1]))
        levels.append(_merged(b[rows], agg.take(rows), axis))
    bottom = slice(0, int(bounds[1]))
    return Entry(plan, tuple(levels), b[bottom].copy(), agg.c0[bottom].copy(), agg.c1[bottom].copy(), as_of)


def _merged(b: np.ndarray, agg: M4Agg, axis: str) -> Level:
    """A level of rows sorted by bucket, duplicates merged (only theirs: a merge sorts)."""
    dup = np.concatenate(([False], b[1:] == b[:-1]))
    if dup.any():
        dup[:-1] |= dup[1:]
        return _compact(Level(b[~dup], agg.take(np.flatnonzero(~dup)), b[dup], agg.take(np.flatnonzero(dup))), axis)
    return Level(b, agg, b[:0], M4Agg.empty())  # slices of the rows read: nothing else holds them


def _compact(lv: Level, axis: str) -> Level:
    """The added rows merged into the merged ones: O(merged) copies, a sort of the added only."""
    keys, group = np.unique(lv.pb, return_inverse=True)
    at = np.searchsorted(lv.b, keys)
    found = at < len(lv.b)
    found[found] = lv.b[at[found]] == keys[found]
    rows = M4Agg.concat([lv.pagg, lv.agg.take(at[found])])
    merged = merge(rows, np.concatenate([group.ravel(), np.flatnonzero(found)]), len(keys), axis)
    new = ~found
    b = np.insert(lv.b, at[new], keys[new])
    agg = _insert(lv.agg, at[new], merged.take(np.flatnonzero(new)))
    agg.put(np.searchsorted(b, keys), merged)
    agg.c0[:] = -1  # the ranges live in the entry's cb/c0/c1
    agg.c1[:] = -1
    return Level(b, agg, b[:0].copy(), M4Agg.empty())


def extend(e: Entry, parts: list[tuple[int, np.ndarray, M4Agg]], as_of: int) -> Entry:
    """``e`` with rows a write added (new arrays: readers keep the old ones)."""
    levels = list(e.levels)
    cb, c0, c1 = e.cb, e.c0, e.c1
    for k in sorted({p[0] for p in parts}):
        mine = [p for p in parts if p[0] == k]
        lv = levels[k]
        lv = Level(lv.b, lv.agg, np.concatenate([lv.pb, *(p[1] for p in mine)]),
                   M4Agg.concat([lv.pagg, *(p[2] for p in mine)]))
        if len(lv.pb) > max(COMPACT_MIN, len(lv.b) // COMPACT_SHARE):
            if k == 0:
                order = np.argsort(lv.pb, kind="stable")
                at = np.searchsorted(cb, lv.pb[order], "right")
                cb, c0, c1 = (np.insert(a, at, v[order]) for a, v in ((cb, lv.pb), (c0, lv.pagg.c0), (c1, lv.pagg.c1)))
            lv = _compact(lv, e.plan.axis)
        levels[k] = lv
    return Entry(e.plan, tuple(levels), cb, c0, c1, as_of)


def _insert(agg: M4Agg, at: np.ndarray, rows: M4Agg) -> M4Agg:
    """A copy of ``agg`` with ``rows`` inserted before positions ``at`` (as :func:`numpy.insert`)."""
    return M4Agg(*(np.insert(getattr(agg, f.name), at, getattr(rows, f.name), axis=getattr(agg, f.name).ndim - 1)
                   for f in dataclasses.fields(M4Agg)))


def freeze(e: Entry) -> None:
    """Make a kept entry's arrays read-only: readers get them as they are (the
    top level's rows uncopied), so a merge that wrote into its input would fail
    instead of changing what later reads see."""
    arrays = [e.cb, e.c0, e.c1]
    for lv in e.levels:
        arrays += [lv.b, lv.pb, *(getattr(a, f.name) for a in (lv.agg, lv.pagg) for f in dataclasses.fields(M4Agg))]
    for a in arrays:
        a.flags.writeable = False


def _agg_bytes(agg: M4Agg) -> int:
    return sum(getattr(agg, f.name).nbytes for f in dataclasses.fields(M4Agg))
