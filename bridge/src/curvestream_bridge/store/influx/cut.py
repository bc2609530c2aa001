"""The points of the bottom buckets a frame's column edges cut, by one statement.

InfluxQL 1.x cannot OR time ranges, but it can filter rows by arithmetic on
their fields, ``%`` included. Column edges lie about ``a + c*C`` apart
(``a`` the first edge, ``C`` the column width, a float), so the buckets an
edge cuts are those whose points come within one bucket of such a value:

- x = time: the bottom rows of the time rollups whose last point
  (``time_hi``) lies within a bucket (and a few µs of float error) of
  ``a + c*C``, read with their packed points ``p`` (each writer's row of a
  bucket is a row of its own: its points may all lie on one side);
- x = step: the bottom rows of the time rollups (within the wall-time extent
  of the cut buckets) whose steps (``first_step`` to ``last_step``) come
  within a bucket of ``a + c*C``: all the cut buckets' points when steps grow
  with wall time, which their counts confirm; else the points of ``cs_scalar``
  whose ``step`` lies within a bucket of ``a + c*C``.

The statement still decodes the range's blocks, but InfluxDB answers (and the
bridge parses) only the rows near edges: at 300,000 points in range, ~40 ms
of InfluxDB's CPU and 5 ms of the bridge's, against 80 and 60 ms for every
point. What the filter lets through beyond the cut buckets is left out here.
"""

from __future__ import annotations

import numpy as np

from curvestream_bridge.store.influx.rollup import MEASUREMENT
from curvestream_bridge.store.influx.rowcache import Level
from curvestream_bridge.store.influx.rows import POINT, Statements, points_of, raw_stmt, unpack_points
from curvestream_bridge.store.m4.query import Frame

__all__ = ["cut_points", "inner_straddlers", "SLACK_NS"]

SLACK_NS = 8192
"""How far an edge found by the float column formula may lie from ``a + c*C`` (x = time: ~250 ns)."""


def cut_points(run: Statements, where: str, f: Frame, bottom: Level,
               time_bottom: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every point of the frame's straddling buckets (``f.pieces.straddlers``),
    and perhaps some others; ``bottom``: the rows of the bottom level around them,
    ``time_bottom``: the bottom bucket size of the time rollups."""
    assert f.pieces is not None and f.intervals is not None
    size = f.pieces.plan.size(0)
    edges = f.intervals.edges[1:-1]
    straddlers = inner_straddlers(f)
    if len(straddlers) == 0:
        return []
    a = int(edges[0])
    column = (int(edges[-1]) - a) / max(len(edges) - 1, 1)
    if f.axis != "step":
        # a row's last point lies within a bucket of the edge its bucket holds (before it or after)
        near = (f'(("time_hi" - {a}) % {column!r} < {size + SLACK_NS} OR ("time_hi" - {a}) % {column!r} > '
                f'{column - size - SLACK_NS!r})')
        return [_time_rows(run, where, near, int(straddlers[0]) * size, (int(straddlers[-1]) + 1) * size - 1,
                           time_bottom)]
    rows = np.isin(bottom.b, straddlers)
    if not rows.any():
        return []
    wlo, whi = int(bottom.agg.wlo[rows].min()), int(bottom.agg.whi[rows].max())
    # A time row whose steps run from first_step to last_step comes within a bucket of an edge. That holds
    # the cut buckets' points when steps grow with wall time; the counts tell, else cs_scalar by step.
    near = f'("last_step" + {size - a}) % {column!r} < "last_step" - "first_step" + {2 * size + 1}'
    step, wall, value = _time_rows(run, where, near, wlo, whi, time_bottom)
    keep = np.isin(np.floor_divide(step, size), straddlers)
    step, wall, value = step[keep], wall[keep], value[keep]
    _, unique = np.unique(wall, return_index=True)  # several writers' rows may hold a point
    found = np.bincount(np.searchsorted(straddlers, np.floor_divide(step[unique], size)),
                        minlength=len(straddlers))
    if np.array_equal(found, bottom.agg.n[np.searchsorted(bottom.b, straddlers)]):
        return [(step, wall, value)]
    near = f'(("step" - {a}) % {column!r} < {size + 1} OR ("step" - {a}) % {column!r} > {column - size - 1!r})'
    step, wall, value = points_of(run([f'{raw_stmt(where, wlo, whi)} AND {near}'])[0])
    keep = np.isin(np.floor_divide(step, size), straddlers)
    return [(step[keep], wall[keep], value[keep])]


def _time_rows(run: Statements, where: str, near: str, lo: int, hi: int,
               time_bottom: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points of the time rollups' bottom rows in ``[lo, hi]`` that pass ``near``
    (from cs_scalar for a row whose points were too many to pack)."""
    result = run([f'SELECT "p" FROM "{MEASUREMENT["time"]}" WHERE {where} AND "k" = \'0\' AND '
                  f'time >= {lo // time_bottom * time_bottom} AND time <= {hi} AND {near}'])[0]
    texts = [p for r in result for _, p in r["values"] if p]
    unpacked = sorted({t for r in result for t, p in r["values"] if not p})
    pts = unpack_points(texts) if texts else np.zeros(0, dtype=POINT)
    parts = [(pts["step"], pts["wall"], pts["value"])]
    stmts = [raw_stmt(where, t, t + time_bottom - 1) for t in unpacked]
    parts.extend(points_of(r) for r in (run(stmts) if stmts else []))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def inner_straddlers(f: Frame) -> np.ndarray:
    """The straddling buckets of a frame's column edges (not those of the sentinels
    that bound the intervals before and after the range, which hold no point)."""
    assert f.pieces is not None and f.intervals is not None
    size = f.pieces.plan.size(0)
    s = f.pieces.straddlers
    return s[(s >= f.intervals.edges[1] // size) & (s <= f.intervals.edges[-2] // size)]
