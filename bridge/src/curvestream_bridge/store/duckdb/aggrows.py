"""Aggregate rows between numpy and DuckDB: the columns of an aggregate row
(see :mod:`..m4.agg`), how numpy columns become a table for one statement, and
how fetched rows become an :class:`M4Agg` again.

``<aggregate>`` is ``n`` and the first, last, min, max points (``f_s, f_w,
f_v`` …: step, wall, value), the first NaN (``nan_s, nan_w``) and the
``has_mn``/``has_mx``/``has_nan`` flags. A NaN first or last value is stored as
NULL and read back as NaN.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import duckdb
import numpy as np

from curvestream_bridge.store.m4.agg import FIRST, LAST, MAX, MIN, NAN, M4Agg

__all__ = ["AGG_COLS", "AGG_NAMES", "scan", "agg_columns", "agg_from", "ints", "floats"]

AGG_COLS = ("n BIGINT NOT NULL, f_s BIGINT, f_w BIGINT, f_v DOUBLE, l_s BIGINT, l_w BIGINT, l_v DOUBLE, "
            "mn_s BIGINT, mn_w BIGINT, mn_v DOUBLE, mx_s BIGINT, mx_w BIGINT, mx_v DOUBLE, nan_s BIGINT, "
            "nan_w BIGINT, has_mn BOOLEAN, has_mx BOOLEAN, has_nan BOOLEAN")
AGG_NAMES = ("n", "f_s", "f_w", "f_v", "l_s", "l_w", "l_v", "mn_s", "mn_w", "mn_v", "mx_s", "mx_w", "mx_v",
             "nan_s", "nan_w", "has_mn", "has_mx", "has_nan")
_KIND_PREFIX = ((FIRST, "f"), (LAST, "l"), (MIN, "mn"), (MAX, "mx"), (NAN, "nan"))


@contextlib.contextmanager
def scan(cur: duckdb.DuckDBPyConnection, name: str, columns: dict[str, np.ndarray]) -> Iterator[None]:
    """Numpy columns visible to SQL as table ``name`` while in the block."""
    cur.register(name, columns)
    try:
        yield
    finally:
        cur.unregister(name)


def agg_columns(agg: M4Agg) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {"n": agg.n}
    for kind, p in _KIND_PREFIX:
        cols[f"{p}_s"] = agg.step[kind]
        cols[f"{p}_w"] = agg.wall[kind]
        if kind != NAN:
            cols[f"{p}_v"] = agg.value[kind]  # NaN (first/last) becomes NULL, read back as NaN
    cols["has_mn"], cols["has_mx"], cols["has_nan"] = agg.has[MIN], agg.has[MAX], agg.has[NAN]
    return cols


def agg_from(rows: dict[str, Any]) -> M4Agg:
    m = len(rows["n"])
    agg = M4Agg.empty(m)
    agg.n = np.asarray(rows["n"], dtype=np.int64)
    for kind, p in _KIND_PREFIX:
        agg.step[kind] = ints(rows[f"{p}_s"])
        agg.wall[kind] = ints(rows[f"{p}_w"])
        agg.value[kind] = np.nan if kind == NAN else floats(rows[f"{p}_v"])
    agg.has[FIRST] = agg.has[LAST] = True
    agg.has[MIN], agg.has[MAX], agg.has[NAN] = (
        np.asarray(rows[c], dtype=bool) for c in ("has_mn", "has_mx", "has_nan")
    )
    if "c0" in rows:
        agg.c0, agg.c1 = ints(rows["c0"]), ints(rows["c1"])
    return agg


def ints(a: Any) -> np.ndarray:
    return np.ma.filled(np.ma.asarray(a, dtype=np.int64), 0)


def floats(a: Any) -> np.ndarray:
    return np.ma.filled(np.ma.asarray(a, dtype=np.float64), np.nan)


