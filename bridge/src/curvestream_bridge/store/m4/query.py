"""One series query, engine-independent: the frame (range, columns, pieces),
the assembly of fetched rollup rows and raw points into per-column M4, and the
:class:`~.base.SeriesResult` built from it.

An engine answers a query in three steps:

1. :func:`frame` fixes the integer range and the pixel columns.
2. It fetches, for every level, the rows of the buckets in
   ``frame.pieces.keys(k)`` (all rows of the top level), and the raw points of
   the straddling bottom buckets.
3. :func:`assemble` merges them per column; :func:`m4_result` turns that into
   the answer, or, when the range holds few enough points (``raw_below`` per
   column: 4, or more for an engine that reads a range's points cheaply), the
   engine reads them and calls :func:`raw_result`, which answers them all (at
   most 4 per column) or their M4.

A series without rollups (too short yet, or ``rollups=off``) is answered from
its raw points by :func:`points_result`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol, TypeVar

import numpy as np

from curvestream_bridge.store.base import SeriesQuery, SeriesResult
from curvestream_bridge.store.m4.agg import FIRST, LAST, M4Agg
from curvestream_bridge.store.m4.fold import Folded
from curvestream_bridge.store.m4.kernel import m4_indices
from curvestream_bridge.store.m4.levels import LevelPlan, order_by_x
from curvestream_bridge.store.m4.plan import AxisScale, Intervals, Pieces, column_intervals, plan_pieces
from curvestream_bridge.store.m4.snap import snap

__all__ = ["Frame", "frame", "assemble", "m4_result", "raw_result", "points_result", "empty_result", "rollup_axis",
           "rollup_answer", "rollup_answers", "RollupJob", "RowSource"]

T = TypeVar("T")

_KIND_ORDER = (0, 2, 3, 4, 1)  # first, min, max, nan, last


def rollup_axis(x: str) -> str:
    """The rollups that serve an x axis: relative time uses the time rollups."""
    return "step" if x == "step" else "time"


@dataclasses.dataclass
class Frame:
    query: SeriesQuery
    scale: AxisScale
    lo: int  # integer range, inclusive
    hi: int
    start: float  # the range in x units, as answered
    end: float
    width: int
    intervals: Intervals | None = None
    pieces: Pieces | None = None
    unit: int | None = None  # snapped: every column edge lies at a multiple of this (see .snap)

    @property
    def axis(self) -> str:
        return rollup_axis(self.query.x)

    @property
    def columns(self) -> slice:
        return slice(1, len(self.intervals) - 1) if self.intervals is not None else slice(0, 0)


def frame(q: SeriesQuery, origin: int, extent: tuple[int, int] | None, plan: LevelPlan | None,
          columns: bool = True) -> Frame | None:
    """The integer range of a query (``extent``: the series' min and max
    position, used where start or end is omitted), widened to whole grid units
    when the query asks for snapped columns (:mod:`.snap`); None when it is empty.
    ``columns=False``: the whole range as one interval (to count its points
    and find its neighbours before deciding between raw points and M4)."""
    scale = AxisScale(q.x, origin)
    if q.start is None or q.end is None:
        if extent is None:
            return None
        lo_end, hi_end = extent
    else:
        lo_end = hi_end = 0  # not read: both ends are given
    lo = scale.first_at_or_after(q.start) if q.start is not None else lo_end
    hi = scale.last_at_or_before(q.end) if q.end is not None else hi_end
    start = q.start if q.start is not None else float(scale.x(np.array([lo]))[0])
    end = q.end if q.end is not None else float(scale.x(np.array([hi]))[0])
    width = max(1, int(q.width))
    snapped = snap(scale, lo, hi, width) if q.snap else None
    if snapped is not None:
        start, end = snapped.start, snapped.end
        lo, hi = scale.first_at_or_after(start), scale.last_at_or_before(end)
    f = Frame(q, scale, lo, hi, start, end, width, unit=snapped.unit if snapped is not None else None)
    if plan is not None and lo <= hi:
        edges = column_intervals(scale, lo, hi, start, end, width) if columns else np.array([lo, hi + 1])
        f.intervals = Intervals.of(edges)
        f.pieces = plan_pieces(f.intervals, plan)
    return f


def rollup_answer(q: SeriesQuery, origin: int, extent: tuple[int, int], count: int, plan: LevelPlan,
                  rolled_up: Callable[[Frame], tuple[T, M4Agg]],
                  raw: Callable[[Frame, T, M4Agg], SeriesResult], probe_below: float = 16,
                  raw_below: float = 4) -> SeriesResult:
    """The answer of an engine with rollups: the raw points of the range when it
    holds at most 4·width of them, else its M4. ``rolled_up(frame)`` reads what a
    frame needs and gives its per-interval aggregates (and whatever ``raw``, which
    reads the range's points, wants of that read). ``probe_below``, ``raw_below``:
    see :func:`rollup_answers`."""
    return rollup_answers([RollupJob(q, origin, extent, count, plan)],
                          lambda jobs: [rolled_up(f) for _, f in jobs],
                          lambda jobs: [raw(f, state, agg) for _, f, state, agg in jobs], probe_below, raw_below)[0]


@dataclasses.dataclass(frozen=True)
class RollupJob:
    """One series query of :func:`rollup_answers`: the query, its run's origin,
    the series' extent on the query's axis, its point count and its levels."""

    query: SeriesQuery
    origin: int
    extent: tuple[int, int]
    count: int
    plan: LevelPlan


def rollup_answers(jobs: list[RollupJob],
                   rolled_up: Callable[[list[tuple[int, Frame]]], list[tuple[T, M4Agg]]],
                   raw: Callable[[list[tuple[int, Frame, T, M4Agg]]], list[SeriesResult]],
                   probe_below: float = 16, raw_below: float = 4) -> list[SeriesResult]:
    """:func:`rollup_answer` of many series at once, phase by phase, so that an
    engine reads what all of them need in each phase together (one statement,
    one request): ``rolled_up`` gets ``(job index, frame)`` pairs and ``raw``
    ``(job index, frame, state, agg)``; each answers in the order it was given.
    At most two ``rolled_up`` phases (a count of the range, then its columns,
    for ranges that looked small enough to be raw and were not) and one
    ``raw`` phase.

    A range is counted first when the series' density says it holds at most
    ``probe_below``·width points. The answer does not depend on it, only the
    cost: an engine whose full frame costs much more than a count (one
    statement per straddling bucket) wants a generous bound, one whose
    statements cost about the same whatever they read wants 4 (count only
    what is likely raw).

    A range of at most ``raw_below``·width points is answered from its raw
    points (``raw``; their M4 past 4 per column), a larger one from its rollup
    rows. The answer is the same either way; an engine that reads a range's
    points cheaply (DuckDB: consecutive chunks, ~45 ns a point) sets it higher
    than 4, where those points cost less than the straddling buckets' chunks
    and the frame's assembly."""
    out: list[SeriesResult | None] = [None] * len(jobs)
    first: list[tuple[int, Frame, bool]] = []  # (job, frame, probe)
    for i, job in enumerate(jobs):
        f = frame(job.query, job.origin, job.extent, None)
        if f is None or f.lo > f.hi:
            out[i] = empty_result(job.query)
        elif _probably_raw(f, job.count, job.extent, probe_below):
            probe = frame(job.query, job.origin, job.extent, job.plan, columns=False)
            assert probe is not None
            first.append((i, probe, True))
        else:
            full = frame(job.query, job.origin, job.extent, job.plan)
            assert full is not None
            first.append((i, full, False))
    raws: list[tuple[int, Frame, T, M4Agg]] = []
    again: list[tuple[int, Frame, bool]] = []
    for (i, f, probed), (state, agg) in zip(first, rolled_up([(i, f) for i, f, _ in first]) if first else []):
        n = int(agg.n[f.columns].sum())
        if n <= raw_below * f.width:
            raws.append((i, f, state, agg))
        elif probed:
            job = jobs[i]
            full = frame(job.query, job.origin, job.extent, job.plan)
            assert full is not None
            again.append((i, full, False))
        else:
            out[i] = m4_result(f, agg)
    for (i, f, _), (state, agg) in zip(again, rolled_up([(i, f) for i, f, _ in again]) if again else []):
        if int(agg.n[f.columns].sum()) > raw_below * f.width:
            out[i] = m4_result(f, agg)
        else:
            raws.append((i, f, state, agg))
    for (i, *_), result in zip(raws, raw(raws) if raws else []):
        out[i] = result
    assert all(r is not None for r in out)
    return out  # type: ignore[return-value]


def _probably_raw(f: Frame, count: int, extent: tuple[int, int], factor: float) -> bool:
    """Whether the range likely holds few enough points to be answered raw
    (then one interval is counted first instead of ``width`` columns)."""
    lo, hi = max(f.lo, extent[0]), min(f.hi, extent[1])
    if hi < lo:
        return True
    share = (hi - lo + 1) / max(extent[1] - extent[0] + 1, 1)
    return count * share <= factor * f.width


class RowSource(Protocol):
    """Rollup rows an engine keeps where they lie (the DuckDB rollup cache's
    sorted levels): it folds the rows of a frame's pieces itself."""

    def fold_into(self, acc: Folded, pieces: Pieces, axis: str) -> None: ...


def assemble(f: Frame, rows: list[tuple[int, np.ndarray, M4Agg]] | RowSource,
             raw: tuple[np.ndarray, np.ndarray, np.ndarray]) -> M4Agg:
    """Per-interval aggregates from rollup rows ``(k, buckets, agg)`` (any
    level, any order, several partial rows per bucket allowed, unneeded buckets
    ignored) or a :class:`RowSource`, and raw points (step, wall, value, any
    order) that include every point of the straddling bottom buckets (others
    are ignored).

    Pieces and straddling buckets never overlap, so each row and each such
    point belongs to one interval: each is folded into its interval's
    aggregate (:mod:`.fold`, in O(rows + points), nothing sorted)."""
    assert f.intervals is not None and f.pieces is not None
    acc = Folded(len(f.intervals))
    if isinstance(rows, list):
        for k, buckets, agg in rows:
            acc.each_row(agg, f.pieces.interval_of(k, buckets), f.axis)
    else:
        rows.fold_into(acc, f.pieces, f.axis)
    plan = f.pieces.plan
    acc.points(*raw, f.intervals.edges, f.pieces.straddlers, plan.size(plan.k0), f.axis)
    return acc.agg


def _neighbour(agg: M4Agg, kind: int, i: int) -> tuple[int, int, float] | None:
    return agg.point(kind, i)


def m4_result(f: Frame, agg: M4Agg) -> SeriesResult:
    """The M4 points of the columns, with the neighbours outside the range."""
    cols = agg.take(slice(1, len(agg) - 1))
    total = int(cols.n.sum())
    steps, walls, values = [], [], []
    for kind in _KIND_ORDER:
        sel = cols.has[kind]
        steps.append(cols.step[kind, sel])
        walls.append(cols.wall[kind, sel])
        values.append(cols.value[kind, sel])
    step, wall, value = np.concatenate(steps), np.concatenate(walls), np.concatenate(values)
    # in x order (a stable sort), each point once: a point several kinds picked is kept at its first pick
    order = order_by_x(f.axis, step, wall)
    step, wall, value = step[order], wall[order], value[order]
    again = wall[1:] == wall[:-1]
    if f.axis == "step":
        again &= step[1:] == step[:-1]
    keep = np.concatenate(([True], ~again))[:len(step)]
    return _result(f, False, total, step[keep], wall[keep], value[keep],
                   _neighbour(agg, LAST, 0), _neighbour(agg, FIRST, len(agg) - 1))


def raw_result(f: Frame, step: np.ndarray, wall: np.ndarray, value: np.ndarray,
               before: tuple[int, int, float] | None, after: tuple[int, int, float] | None) -> SeriesResult:
    """The answer from every point of the range (any order; points outside it
    are dropped): all of them when they are at most 4 per column, else their M4."""
    x = step if f.axis == "step" else wall
    keep = (x >= f.lo) & (x <= f.hi)
    step, wall, value = step[keep], wall[keep], value[keep]
    order = order_by_x(f.axis, step, wall)
    return _all_or_m4(f, step[order], wall[order], value[order], before, after)


def points_result(f: Frame, step: np.ndarray, wall: np.ndarray, value: np.ndarray) -> SeriesResult:
    """The answer from raw points alone: ``step, wall, value`` must hold every
    point of the range and at least the neighbours on both sides."""
    order = order_by_x(f.axis, step, wall)
    step, wall, value = step[order], wall[order], value[order]
    x = step if f.axis == "step" else wall
    i0 = int(np.searchsorted(x, f.lo, side="left"))
    i1 = int(np.searchsorted(x, f.hi, side="right"))
    before = (int(step[i0 - 1]), int(wall[i0 - 1]), float(value[i0 - 1])) if i0 > 0 else None
    after = (int(step[i1]), int(wall[i1]), float(value[i1])) if i1 < len(x) else None
    return _all_or_m4(f, step[i0:i1], wall[i0:i1], value[i0:i1], before, after)


def _all_or_m4(f: Frame, step: np.ndarray, wall: np.ndarray, value: np.ndarray,
               before: tuple[int, int, float] | None, after: tuple[int, int, float] | None) -> SeriesResult:
    """The answer from the range's points in x order: all of them (at most 4 per column), or their M4."""
    if len(step) <= 4 * f.width:
        return _result(f, True, len(step), step, wall, value, before, after)
    idx = m4_indices(f.scale.x(step if f.axis == "step" else wall), value, f.start, f.end, f.width)
    return _result(f, False, len(step), step[idx], wall[idx], value[idx], before, after)


def empty_result(q: SeriesQuery) -> SeriesResult:
    e = np.zeros(0)
    return SeriesResult(True, 0, e, e.astype(np.int64), e.astype(np.int64), e, q.start, q.end)


def _result(f: Frame, raw: bool, total: int, step: np.ndarray, wall: np.ndarray, value: np.ndarray,
            before: tuple[int, int, float] | None, after: tuple[int, int, float] | None) -> SeriesResult:
    res_before = res_after = None
    if before is not None:
        step, wall, value = (np.concatenate(([before[0]], step)), np.concatenate(([before[1]], wall)),
                             np.concatenate(([before[2]], value)))
        res_before = 0
    if after is not None:
        step, wall, value = (np.concatenate((step, [after[0]])), np.concatenate((wall, [after[1]])),
                             np.concatenate((value, [after[2]])))
        res_after = len(step) - 1
    step = np.asarray(step, dtype=np.int64)
    wall = np.asarray(wall, dtype=np.int64)
    xs = f.scale.x(step if f.query.x == "step" else wall)
    return SeriesResult(raw, int(total), xs, step, wall, np.asarray(value, dtype=np.float64), f.start, f.end,
                        res_before, res_after)
