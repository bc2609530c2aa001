"""Folding rollup rows and raw points into per-interval aggregates, compiled.

A query's columns are merged from rows of several levels and the raw points of
the straddling buckets (:func:`.query.assemble`). Each row (or point) is
folded into its interval's aggregate one at a time, by rules that do not
depend on the order of the rows: the first is the one with the smallest x
key, the last the one with the largest, the minimum the earliest of equal
minima, the maximum the latest of equal maxima, the NaN the earliest; the key
is ``(x, wall_ns)`` with x the axis column (:mod:`.agg`). Rows of equal key
(the same point twice) resolve in the order folded, as a stable sort by key
would: the first, minimum and NaN keep the one folded first, the last and
maximum take the one folded last.

So a level's rows are read where they lie (a range of a sorted level, no
copy), rows of the same bucket need no merging first, and nothing is sorted.
The loops (:mod:`.foldloops`) are compiled by numba and release the GIL, so
the read threads of an overlay run side by side.

    >>> from curvestream_bridge.store.m4.agg import FIRST, LAST, MIN, NAN
    >>> acc = Folded(3)
    >>> rows = M4Agg.from_points(np.array([5, 1, 3]), np.array([50, 10, 30]), np.array([2.0, np.nan, -1.0]))
    >>> acc.rows(rows, np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([1, 1, 1]), "step")
    >>> out = acc.agg
    >>> out.n.tolist(), out.point(FIRST, 1), out.point(LAST, 1), out.point(MIN, 1), out.point(NAN, 1)
    ([0, 3, 0], (1, 10, nan), (5, 50, 2.0), (3, 30, -1.0), (1, 10, nan))
"""

from __future__ import annotations

import logging
import sys
import tempfile
import threading
from types import ModuleType
from typing import Any

import numpy as np

from curvestream_bridge.store.m4.agg import M4Agg

__all__ = ["Folded", "load_in_background"]

log = logging.getLogger("curvestream.bridge.m4")

_WLO_NONE = np.iinfo(np.int64).max
_WHI_NONE = np.iinfo(np.int64).min

_lock = threading.Lock()
_loaded: ModuleType | None = None


def _kernels() -> ModuleType:
    """:mod:`.foldloops`, imported on first use: numba is imported then (not
    when the bridge starts), and each loop is loaded from numba's cache beside
    it (or in ``~/.cache/numba``, or ``NUMBA_CACHE_DIR``), or compiled once (a
    few seconds). Where none of those can be written (a read-only image whose
    user has no home), the cache goes to a temporary directory instead of
    every query failing."""
    global _loaded
    with _lock:
        if _loaded is None:
            try:
                from curvestream_bridge.store.m4 import foldloops
            except RuntimeError as exc:
                if "cannot cache" not in str(exc):
                    raise
                import numba

                config: Any = numba.config  # its settings are set at run time: unknown to a type checker
                config.CACHE_DIR = tempfile.mkdtemp(prefix="curvestream-numba-")
                log.warning("curvestream bridge: nowhere to cache compiled M4 loops (%s); using %s for this process",
                            exc, config.CACHE_DIR)
                sys.modules.pop("curvestream_bridge.store.m4.foldloops", None)
                from curvestream_bridge.store.m4 import foldloops
            _loaded = foldloops
        return _loaded


def load_in_background() -> threading.Thread:
    """Import :mod:`.foldloops` on a thread of its own, as a bridge starts: the
    bridge's start does not wait for numba, and its first query does not pay
    for the import and the loops' loading (a query that comes sooner waits on
    the same lock for what is left of it). A failure is logged here and raised
    again by the first query that needs the loops."""
    def load() -> None:
        try:
            _kernels()
        except Exception as exc:
            log.warning("curvestream bridge: loading the compiled M4 loops failed (%s); queries will try again", exc)

    t = threading.Thread(target=load, name="curvestream-m4-loops", daemon=True)
    t.start()
    return t


class Folded:
    """The aggregates of ``m`` intervals, folded into from rows and points."""

    def __init__(self, m: int) -> None:
        self._agg = M4Agg.empty(m)
        self._agg.wlo[:] = _WLO_NONE
        self._agg.whi[:] = _WHI_NONE

    def _acc(self) -> tuple[np.ndarray, ...]:
        a = self._agg
        return a.n, a.step, a.wall, a.value, a.has, a.wlo, a.whi

    def rows(self, agg: M4Agg, lo: np.ndarray, hi: np.ndarray, target: np.ndarray, axis: str) -> None:
        """Fold rows ``lo[r]:hi[r]`` of ``agg`` into interval ``target[r]``, for each r."""
        if len(lo) == 0:
            return
        _kernels().fold_rows(*self._acc(), agg.n, agg.step, agg.wall, agg.value, agg.has, agg.wlo, agg.whi,
                             _ints(lo), _ints(hi), _ints(target), axis == "step")

    def each_row(self, agg: M4Agg, interval: np.ndarray, axis: str) -> None:
        """Fold row i of ``agg`` into interval ``interval[i]``; rows of interval -1 are left out."""
        keep = np.flatnonzero(interval >= 0)
        self.rows(agg, keep, keep + 1, interval[keep], axis)

    def points(self, step: np.ndarray, wall: np.ndarray, value: np.ndarray, edges: np.ndarray,
               straddlers: np.ndarray, bottom_size: int, axis: str) -> None:
        """Fold the points that fall in a straddling bottom bucket (``straddlers``,
        sorted; buckets of ``bottom_size``) into the interval of ``edges`` (sorted
        starts, the first one below every point) they fall in; the others are
        left out (the rows of their buckets count them)."""
        if len(step) == 0 or len(straddlers) == 0:
            return
        _kernels().fold_points(*self._acc(), _ints(step), _ints(wall), np.asarray(value, dtype=np.float64),
                               _ints(edges), _ints(straddlers), int(bottom_size), axis == "step")

    @property
    def agg(self) -> M4Agg:
        """The aggregates (an interval nothing was folded into: n = 0, extent 0)."""
        a = self._agg
        empty = a.wlo == _WLO_NONE
        a.wlo[empty] = 0
        a.whi[empty] = 0
        return a


def _ints(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)
