"""The compiled loops of :mod:`.fold` (numba, GIL released, cached beside this
file). Imported by :mod:`.fold` on first use only: importing numba costs the
bridge's start a few tenths of a second."""

from __future__ import annotations

import numba
import numpy as np

from curvestream_bridge.store.m4.agg import FIRST, KINDS, LAST, MAX, MIN, NAN

__all__ = ["fold_rows", "fold_points"]

_i8, _f8, _b1 = numba.int64, numba.float64, numba.boolean
_ACC = (_i8[:], _i8[:, :], _i8[:, :], _f8[:, :], _b1[:, :], _i8[:], _i8[:])  # the aggregates folded into


def _ro(dtype: numba.types.Type, ndim: int) -> numba.types.Array:
    """An array the loops only read: the rollup cache's are read-only (a writable one converts)."""
    return numba.types.Array(dtype, ndim, "A", readonly=True)


_ROWS = (_ro(_i8, 1), _ro(_i8, 2), _ro(_i8, 2), _ro(_f8, 2), _ro(_b1, 2), _ro(_i8, 1), _ro(_i8, 1))


@numba.njit(cache=True, nogil=True, inline="always")
def _before(xa: int, wa: int, xb: int, wb: int) -> bool:
    """Key a sorts before key b."""
    return xa < xb or (xa == xb and wa < wb)


@numba.njit(cache=True, nogil=True, inline="always")
def _take(kind: int, t: int, step: int, wall: int, value: float, step_axis: bool,
          a_step: np.ndarray, a_wall: np.ndarray, a_value: np.ndarray, a_has: np.ndarray) -> None:
    """Fold one candidate (step, wall, value) of ``kind`` into interval t."""
    if a_has[kind, t]:
        x, xa = (step, a_step[kind, t]) if step_axis else (wall, a_wall[kind, t])
        wa = a_wall[kind, t]
        if kind == FIRST or kind == NAN:
            if not _before(x, wall, xa, wa):
                return
        elif kind == LAST:
            if _before(x, wall, xa, wa):
                return
        elif kind == MIN:
            va = a_value[kind, t]
            if value > va or (value == va and not _before(x, wall, xa, wa)):
                return
        else:  # MAX
            va = a_value[kind, t]
            if value < va or (value == va and _before(x, wall, xa, wa)):
                return
    a_step[kind, t] = step
    a_wall[kind, t] = wall
    a_value[kind, t] = value
    a_has[kind, t] = True


@numba.njit((*_ACC, *_ROWS, _i8[:], _i8[:], _i8[:], _b1), cache=True, nogil=True)
def fold_rows(a_n, a_step, a_wall, a_value, a_has, a_wlo, a_whi,
              n, step, wall, value, has, wlo, whi, lo, hi, target, step_axis):
    """Fold rows ``lo[r]:hi[r]`` into interval ``target[r]``, for each r."""
    for r in range(len(lo)):
        t = target[r]
        for i in range(lo[r], hi[r]):
            a_n[t] += n[i]
            for kind in range(KINDS):
                if has[kind, i]:
                    _take(kind, t, step[kind, i], wall[kind, i], value[kind, i], step_axis,
                          a_step, a_wall, a_value, a_has)
            if wlo[i] < a_wlo[t]:
                a_wlo[t] = wlo[i]
            if whi[i] > a_whi[t]:
                a_whi[t] = whi[i]


@numba.njit((*_ACC, _ro(_i8, 1), _ro(_i8, 1), _ro(_f8, 1), _ro(_i8, 1), _ro(_i8, 1), _i8, _b1),
            cache=True, nogil=True)
def fold_points(a_n, a_step, a_wall, a_value, a_has, a_wlo, a_whi,
                step, wall, value, edges, straddlers, s0, step_axis):
    """Fold each point whose bottom bucket (``x // s0``) is one of ``straddlers``
    (not empty) into the interval of ``edges`` it falls in (see :meth:`.fold.Folded.points`)."""
    e, s = 0, 0  # cursors: points come mostly in x order, so each moves a little
    for p in range(len(step)):
        x = step[p] if step_axis else wall[p]
        b = x // s0
        while s + 1 < len(straddlers) and straddlers[s + 1] <= b:
            s += 1
        while s > 0 and straddlers[s] > b:
            s -= 1
        if straddlers[s] != b:
            continue  # outside every straddling bucket: its rows count it
        while e + 1 < len(edges) and edges[e + 1] <= x:
            e += 1
        while e > 0 and edges[e] > x:
            e -= 1
        a_n[e] += 1
        v = value[p]
        _take(FIRST, e, step[p], wall[p], v, step_axis, a_step, a_wall, a_value, a_has)
        _take(LAST, e, step[p], wall[p], v, step_axis, a_step, a_wall, a_value, a_has)
        if np.isnan(v):
            _take(NAN, e, step[p], wall[p], v, step_axis, a_step, a_wall, a_value, a_has)
        else:
            _take(MIN, e, step[p], wall[p], v, step_axis, a_step, a_wall, a_value, a_has)
            _take(MAX, e, step[p], wall[p], v, step_axis, a_step, a_wall, a_value, a_has)
        if wall[p] < a_wlo[e]:
            a_wlo[e] = wall[p]
        if wall[p] > a_whi[e]:
            a_whi[e] = wall[p]
