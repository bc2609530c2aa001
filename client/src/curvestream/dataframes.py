"""Points read from the bridge made into DataFrames (``ApiRun.history``).

Columns: ``_step``, ``_time`` (UTC, nanoseconds; underscored as W&B's
``_step``, so that no metric key can take their place), then one per key.
A row holds the keys one ``log()`` call logged together: points of
different keys with the same step and wall time. Keys logged apart (their own
wall times) get rows of their own, null in the other keys' columns; in
pandas such a column is ``Float64`` with ``<NA>`` for the missing rows and
NaN where NaN was logged, in polars null and NaN. When every key has a point
in every row (a training loop logging the same keys each step), the columns
are the arrays as read, with no copy.

    >>> import numpy as np
    >>> pts = {"a": (np.array([0, 1]), np.array([10, 20]), np.array([0.5, np.nan])),
    ...        "b": (np.array([1]), np.array([20]), np.array([np.inf]))}
    >>> rows = history_columns(pts, "step")
    >>> rows["_step"].tolist(), rows["a"][0].tolist(), rows["b"][0].tolist(), rows["b"][1].tolist()
    ([0, 1], [0.5, nan], [nan, inf], [False, True])
"""

from __future__ import annotations

from typing import Any

__all__ = ["read_points", "history_columns", "history_frame"]

_NEED = ("curvestream history() returns a DataFrame: install pandas or polars "
         "(pip install 'curvestream[pandas]' or 'curvestream[polars]')")


def _numpy() -> Any:
    try:
        import numpy as np
    except ImportError:
        raise ImportError(f"{_NEED}; numpy is missing") from None
    return np


def read_points(stream: Any) -> dict[str, tuple[Any, Any, Any]]:
    """key -> (step, time_ns, value) arrays from a points stream (frames of a key concatenated)."""
    np = _numpy()
    from curvestream_wire.pointstream import read_frames

    parts: dict[str, list[tuple[Any, Any, Any]]] = {}
    for key, step, time_ns, value in read_frames(stream):
        parts.setdefault(key, []).append((step, time_ns, value))
    return {key: got[0] if len(got) == 1 else tuple(np.concatenate([g[i] for g in got]) for i in range(3))
            for key, got in parts.items()}


def history_columns(points: dict[str, tuple[Any, Any, Any]], x: str) -> dict[str, Any]:
    """``{"_step": ..., "_time_ns": ..., key: (values, present)}`` with rows sorted by ``x``
    (stable: ties in time order); ``present`` is None when the key has every row."""
    np = _numpy()
    keys = list(points)
    if not keys:
        empty = np.zeros(0, np.int64)
        return {"_step": empty, "_time_ns": empty}
    first_step, first_time = points[keys[0]][0], points[keys[0]][1]
    aligned = all(np.array_equal(points[k][1], first_time) and np.array_equal(points[k][0], first_step)
                  for k in keys[1:])
    if aligned:
        step, time_ns = first_step, first_time
        columns = {k: (points[k][2], None) for k in keys}
    else:
        all_time = np.concatenate([points[k][1] for k in keys])
        all_step = np.concatenate([points[k][0] for k in keys])
        order = np.lexsort((all_step, all_time))
        t, s = all_time[order], all_step[order]
        new_row = np.ones(len(t), dtype=bool)
        new_row[1:] = (t[1:] != t[:-1]) | (s[1:] != s[:-1])
        row_of = np.empty(len(t), dtype=np.int64)
        row_of[order] = np.cumsum(new_row) - 1
        step, time_ns = s[new_row], t[new_row]
        columns = {}
        at = 0
        for k in keys:
            n = len(points[k][0])
            rows = row_of[at:at + n]
            at += n
            values = np.full(len(step), np.nan)
            present = np.zeros(len(step), dtype=bool)
            values[rows] = points[k][2]
            present[rows] = True
            columns[k] = (values, None if present.all() else present)
    if x == "step" and len(step) > 1 and not bool(np.all(step[1:] >= step[:-1])):
        order = np.argsort(step, kind="stable")
        step, time_ns = step[order], time_ns[order]
        columns = {k: (v[order], None if p is None else p[order]) for k, (v, p) in columns.items()}
    return {"_step": step, "_time_ns": time_ns, **columns}


def history_frame(points: dict[str, tuple[Any, Any, Any]], x: str, library: str | None = None) -> Any:
    cols = history_columns(points, x)
    library = library or _installed()
    if library == "pandas":
        return _pandas(cols)
    if library == "polars":
        return _polars(cols)
    raise ValueError(f"curvestream history: library must be 'pandas' or 'polars', got {library!r}")


def _installed() -> str:
    import importlib.util

    for name in ("pandas", "polars"):
        if importlib.util.find_spec(name) is not None:
            return name
    raise ImportError(_NEED)


def _pandas(cols: dict[str, Any]) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(_NEED) from None
    data: dict[str, Any] = {"_step": cols.pop("_step"),
                            "_time": pd.to_datetime(cols.pop("_time_ns"), unit="ns", utc=True)}
    for key, (values, present) in cols.items():
        data[key] = values if present is None else pd.arrays.FloatingArray(values, ~present)
    return pd.DataFrame(data, copy=False)


def _polars(cols: dict[str, Any]) -> Any:
    try:
        import polars as pl
    except ImportError:
        raise ImportError(_NEED) from None
    series = [pl.Series("_step", cols.pop("_step")),
              pl.Series("_time", cols.pop("_time_ns")).cast(pl.Datetime("ns", "UTC"))]
    for key, (values, present) in cols.items():
        s = pl.Series(key, values, nan_to_null=False)
        if present is not None:
            s = s.to_frame().select(pl.when(pl.Series(present)).then(pl.col(key)).otherwise(None))[key]
        series.append(s)
    return pl.DataFrame(series)
