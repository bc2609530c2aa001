"""Frames whose column edges lie on the buckets of one level: read from kept rows.

A snapped frame (:mod:`..m4.snap`) has every column edge at a multiple of its
grid unit; the series' levels whose bucket size divides the unit (the
*aligned* levels, from :func:`aligned_level` up) then cover each column with
whole buckets, and no edge cuts a bottom bucket: the frame needs the rows of
those levels near its edges and no raw point. They come from the
:class:`.rowcache.RowCache`, which reads what it does not hold by one statement
per level and range.

An edge that cuts a bucket of the level whose rows a frame reads is planned
at that bucket's start or end when the bucket's points all lie on one side of
it (:func:`planned_edges`): at x = time the edges of a snapped frame are found
in integer nanoseconds by the float formula of the pixel columns and may lie
a few hundred nanoseconds off the grid (a float of milliseconds since the
epoch has ~244 ns steps), and a frame read at the bottom level has edges
everywhere. Only the buckets an edge really cuts need their points.
"""

from __future__ import annotations

import numpy as np

from curvestream_bridge.store.influx.rowcache import Level
from curvestream_bridge.store.m4.agg import FIRST, LAST, x_of
from curvestream_bridge.store.m4.levels import LevelPlan
from curvestream_bridge.store.m4.plan import Intervals, Pieces, plan_pieces
from curvestream_bridge.store.m4.query import Frame

__all__ = ["aligned_level", "needed_buckets", "planned_edges", "planned"]


def aligned_level(f: Frame, plan: LevelPlan) -> int | None:
    """The lowest level of ``plan`` whose buckets make up the frame's columns
    (the highest whose size divides the frame's grid unit), None when the frame
    is not snapped or its unit is finer than the bottom buckets."""
    if f.unit is None or f.intervals is None:
        return None
    fitting = [k for k in plan.levels if f.unit % plan.size(k) == 0]
    return fitting[-1] if fitting else None


def needed_buckets(f: Frame, plan: LevelPlan, k0: int, extent: tuple[int, int]) -> dict[int, tuple[int, int]]:
    """Per level from ``k0`` below the top, the buckets ``[lo, hi)`` whose rows a frame
    aligned at ``k0`` can use: those of its range, and beside it those of the pieces
    of the intervals before and after it (within one bucket of the next level),
    clipped to the series' extent."""
    assert f.intervals is not None
    first, last = int(f.intervals.edges[1]), int(f.intervals.edges[-2])
    out = {}
    for k in range(k0, plan.top):
        size, up = plan.size(k), plan.size(k + 1)
        lo, hi = max(first - up, extent[0]), min(last + up, extent[1])
        if lo <= hi:
            out[k] = (lo // size, hi // size + 1)
    return out


def planned_edges(f: Frame, plan: LevelPlan, k0: int, level: Level) -> Intervals:
    """The edges to plan the frame's pieces on: an edge inside a bucket of level
    ``k0`` moves to the start of that bucket when all of its points lie at or
    after the edge (or it holds none), to its end when all lie before it, and
    stays where it is otherwise (``level``: the rows of ``k0`` around the edges).
    Moved edges leave every point in its column; they keep their order."""
    assert f.intervals is not None
    edges = f.intervals.edges[1:-1]
    size = plan.size(k0)
    start = np.floor_divide(edges, size) * size
    off = np.flatnonzero(edges != start)
    if len(off) == 0:
        return f.intervals
    buckets = start[off] // size
    if len(level.b):
        at = np.minimum(np.searchsorted(level.b, buckets), len(level.b) - 1)
        found = level.b[at] == buckets
        xs = x_of(level.agg, f.axis)
        first, last = xs[FIRST, at], xs[LAST, at]
    else:
        found, first, last = np.zeros(len(off), bool), np.zeros(len(off), np.int64), np.zeros(len(off), np.int64)
    to_start = ~found | (first >= edges[off])
    to_end = found & (last < edges[off]) & ~to_start
    planned = edges.copy()
    planned[off[to_start]] = start[off[to_start]]
    planned[off[to_end]] = start[off[to_end]] + size
    return Intervals.of(planned)


def planned(f: Frame, plan: LevelPlan, k0: int, level: Level) -> Pieces:
    """The pieces of the frame on its planned edges."""
    return plan_pieces(planned_edges(f, plan, k0, level), plan)
