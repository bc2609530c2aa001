"""The M4 aggregate of a set of points, as numpy columns, and how aggregates merge.

An aggregate row summarises some points of one series: how many (``n``) and
five of them: the first and the last (in x order), the minimum (the earliest
one on ties) and the maximum (the latest one on ties) among the non-NaN
values, and the first NaN. Each is kept whole (step, wall time, value) so a
rollup answers with real points. This is exactly what :func:`.m4.m4_indices`
picks from raw points, which is why merging aggregates gives the same answer
as running M4 over the raw points, whatever the grouping.

x order is ``(step, wall_ns)`` for x = step and ``wall_ns`` for x = time; both
are ``(x, wall_ns)`` with x the axis column.

Aggregates are mergeable and idempotent except for ``n``: merging the same
points twice changes only the count.

    >>> a = M4Agg.from_points(np.array([0, 1, 2]), np.array([10, 11, 12]), np.array([5.0, np.nan, -1.0]))
    >>> m = merge(a, np.zeros(3, dtype=np.int64), 1, "step")
    >>> int(m.n[0]), m.point(MIN, 0), m.point(NAN, 0)
    (3, (2, 12, -1.0), (1, 11, nan))
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["M4Agg", "FIRST", "LAST", "MIN", "MAX", "NAN", "merge", "merge_runs", "points_runs", "x_of"]

FIRST, LAST, MIN, MAX, NAN = range(5)
KINDS = 5


@dataclasses.dataclass
class M4Agg:
    """Aggregate rows. ``step``, ``wall``, ``value`` and ``has`` are ``(5, m)``
    arrays indexed by kind (FIRST, LAST, MIN, MAX, NAN). ``wlo``/``whi`` are the
    wall-time extent of the points and ``c0``/``c1`` the extent of the ids of
    the chunks that hold them (-1 when unknown)."""

    n: np.ndarray
    step: np.ndarray
    wall: np.ndarray
    value: np.ndarray
    has: np.ndarray
    wlo: np.ndarray
    whi: np.ndarray
    c0: np.ndarray
    c1: np.ndarray

    def __len__(self) -> int:
        return len(self.n)

    @classmethod
    def empty(cls, m: int = 0) -> M4Agg:
        z = np.zeros(m, dtype=np.int64)
        return cls(z.copy(), np.zeros((KINDS, m), np.int64), np.zeros((KINDS, m), np.int64),
                   np.zeros((KINDS, m), np.float64), np.zeros((KINDS, m), bool), z.copy(), z.copy(),
                   np.full(m, -1, np.int64), np.full(m, -1, np.int64))

    @classmethod
    def from_points(cls, step: np.ndarray, wall: np.ndarray, value: np.ndarray,
                    cid: np.ndarray | None = None) -> M4Agg:
        """One row per point."""
        m = len(step)
        step = np.asarray(step, dtype=np.int64)
        wall = np.asarray(wall, dtype=np.int64)
        value = np.asarray(value, dtype=np.float64)
        isnan = np.isnan(value)
        has = np.empty((KINDS, m), bool)
        has[FIRST] = has[LAST] = True
        has[MIN] = has[MAX] = ~isnan
        has[NAN] = isnan
        cids = np.full(m, -1, np.int64) if cid is None else np.asarray(cid, dtype=np.int64)
        return cls(np.ones(m, np.int64), np.broadcast_to(step, (KINDS, m)).copy(),
                   np.broadcast_to(wall, (KINDS, m)).copy(), np.broadcast_to(value, (KINDS, m)).copy(), has,
                   wall.copy(), wall.copy(), cids, cids.copy())

    def take(self, idx: np.ndarray | slice) -> M4Agg:
        """Rows ``idx``: copies, or views when ``idx`` is a slice."""
        return M4Agg(self.n[idx], self.step[:, idx], self.wall[:, idx], self.value[:, idx], self.has[:, idx],
                     self.wlo[idx], self.whi[idx], self.c0[idx], self.c1[idx])

    def put(self, idx: np.ndarray, rows: M4Agg) -> None:
        """Set rows ``idx`` to ``rows``."""
        self.n[idx] = rows.n
        for name in ("step", "wall", "value", "has"):
            getattr(self, name)[:, idx] = getattr(rows, name)
        for name in ("wlo", "whi", "c0", "c1"):
            getattr(self, name)[idx] = getattr(rows, name)

    @staticmethod
    def concat(parts: list[M4Agg]) -> M4Agg:
        if not parts:
            return M4Agg.empty()
        return M4Agg(np.concatenate([p.n for p in parts]), np.concatenate([p.step for p in parts], axis=1),
                     np.concatenate([p.wall for p in parts], axis=1), np.concatenate([p.value for p in parts], axis=1),
                     np.concatenate([p.has for p in parts], axis=1), np.concatenate([p.wlo for p in parts]),
                     np.concatenate([p.whi for p in parts]), np.concatenate([p.c0 for p in parts]),
                     np.concatenate([p.c1 for p in parts]))

    def point(self, kind: int, i: int) -> tuple[int, int, float] | None:
        if not self.has[kind, i]:
            return None
        return int(self.step[kind, i]), int(self.wall[kind, i]), float(self.value[kind, i])


def x_of(agg: M4Agg, axis: str) -> np.ndarray:
    """The x column (per kind) of an aggregate: step, or wall time."""
    return agg.step if axis == "step" else agg.wall


def merge_runs(agg: M4Agg, starts: np.ndarray) -> M4Agg:
    """Merge consecutive rows in runs beginning at ``starts``, in O(m).

    The rows must be in x order and cover disjoint x ranges (points sorted by x,
    or one batch's partials by bucket): then the first row with the smallest
    minimum holds the earliest minimum, and so on."""
    m = len(agg)
    starts = np.asarray(starts, dtype=np.int64)
    g = len(starts)
    if g == 0:
        return M4Agg.empty()
    ends = np.append(starts[1:], m) - 1
    group = np.repeat(np.arange(g), np.diff(np.append(starts, m)))
    out = M4Agg.empty(g)
    out.n = np.add.reduceat(agg.n, starts)
    for kind, rows in ((FIRST, starts), (LAST, ends)):
        for name in ("step", "wall", "value", "has"):
            getattr(out, name)[kind] = getattr(agg, name)[kind, rows]
    idx = np.arange(m)
    for kind, reduce_value, pick in ((MIN, np.fmin, np.minimum), (MAX, np.fmax, np.maximum)):
        has = agg.has[kind]
        vals = np.where(has, agg.value[kind], np.nan)
        best = reduce_value.reduceat(vals, starts)
        hit = has & (vals == best[group])
        sentinel = m if pick is np.minimum else -1
        rows = pick.reduceat(np.where(hit, idx, sentinel), starts)
        ok = (rows >= 0) & (rows < m)
        _copy_kind(out, agg, kind, np.where(ok, rows, 0), ok)
    rows = np.minimum.reduceat(np.where(agg.has[NAN], idx, m), starts)
    ok = rows < m
    _copy_kind(out, agg, NAN, np.where(ok, rows, 0), ok)
    out.wlo = np.minimum.reduceat(agg.wlo, starts)
    out.whi = np.maximum.reduceat(agg.whi, starts)
    out.c0 = np.minimum.reduceat(np.where(agg.c0 < 0, np.iinfo(np.int64).max, agg.c0), starts)
    out.c0[out.c0 == np.iinfo(np.int64).max] = -1
    out.c1 = np.maximum.reduceat(agg.c1, starts)
    return out


def points_runs(step: np.ndarray, wall: np.ndarray, value: np.ndarray, starts: np.ndarray) -> M4Agg:
    """:func:`merge_runs` of :meth:`M4Agg.from_points` without building one row per point."""
    m = len(step)
    starts = np.asarray(starts, dtype=np.int64)
    g = len(starts)
    out = M4Agg.empty(g)
    if g == 0:
        return out
    ends = np.append(starts[1:], m) - 1
    out.n = np.diff(np.append(starts, m))
    group = np.repeat(np.arange(g), out.n)
    isnan = np.isnan(value)
    idx = np.arange(m)
    picks = {FIRST: (starts, np.ones(g, bool)), LAST: (ends, np.ones(g, bool))}
    for kind, reduce_value, pick in ((MIN, np.fmin, np.minimum), (MAX, np.fmax, np.maximum)):
        best = reduce_value.reduceat(value, starts)
        hit = ~isnan & (value == best[group])
        rows = pick.reduceat(np.where(hit, idx, m if pick is np.minimum else -1), starts)
        ok = (rows >= 0) & (rows < m)
        picks[kind] = (np.where(ok, rows, 0), ok)
    rows = np.minimum.reduceat(np.where(isnan, idx, m), starts)
    picks[NAN] = (np.where(rows < m, rows, 0), rows < m)
    for kind, (rows, ok) in picks.items():
        out.step[kind] = np.where(ok, step[rows], 0)
        out.wall[kind] = np.where(ok, wall[rows], 0)
        out.value[kind] = np.where(ok, value[rows], 0.0)
        out.has[kind] = ok
    out.wlo = np.minimum.reduceat(wall, starts)
    out.whi = np.maximum.reduceat(wall, starts)
    return out


def merge(agg: M4Agg, group: np.ndarray, groups: int, axis: str) -> M4Agg:
    """Merge rows by ``group`` (0..groups-1), in any order, overlapping or not.

    Ties are broken by x order, so the answer does not depend on the order of
    the rows: the minimum is the earliest of equal minima, the maximum the
    latest of equal maxima, as in :func:`.m4.m4_indices`."""
    out = M4Agg.empty(groups)
    group = np.asarray(group, dtype=np.int64)
    if len(agg) == 0:
        return out
    out.n = np.bincount(group, weights=agg.n, minlength=groups).astype(np.int64)
    xs = x_of(agg, axis)
    for kind in range(KINDS):
        sel = np.flatnonzero(agg.has[kind])
        if len(sel) == 0:
            continue
        g = group[sel]
        if kind in (MIN, MAX):
            order = np.lexsort((agg.wall[kind, sel], xs[kind, sel], agg.value[kind, sel], g))
        else:
            order = np.lexsort((agg.wall[kind, sel], xs[kind, sel], g))
        gs = g[order]
        if kind in (LAST, MAX):
            pick = np.append(gs[1:] != gs[:-1], True)
        else:
            pick = np.insert(gs[1:] != gs[:-1], 0, True)
        rows = sel[order[pick]]
        target = gs[pick]
        out.step[kind, target] = agg.step[kind, rows]
        out.wall[kind, target] = agg.wall[kind, rows]
        out.value[kind, target] = agg.value[kind, rows]
        out.has[kind, target] = True
    big = np.iinfo(np.int64).max
    out.wlo = np.full(groups, big, np.int64)
    np.minimum.at(out.wlo, group, agg.wlo)
    out.whi = np.full(groups, -big, np.int64)
    np.maximum.at(out.whi, group, agg.whi)
    c0 = np.full(groups, big, np.int64)
    np.minimum.at(c0, group, np.where(agg.c0 < 0, big, agg.c0))
    out.c0 = np.where(c0 == big, -1, c0)
    out.c1 = np.full(groups, -1, np.int64)
    np.maximum.at(out.c1, group, agg.c1)
    return out


def _copy_kind(out: M4Agg, agg: M4Agg, kind: int, rows: np.ndarray, ok: np.ndarray) -> None:
    out.step[kind] = np.where(ok, agg.step[kind, rows], 0)
    out.wall[kind] = np.where(ok, agg.wall[kind, rows], 0)
    out.value[kind] = np.where(ok, agg.value[kind, rows], 0.0)
    out.has[kind] = ok
