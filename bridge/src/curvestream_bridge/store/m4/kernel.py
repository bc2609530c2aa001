"""M4 downsampling (Jugel et al., VLDB 2014) in numpy.

For a view of ``width`` pixel columns over ``[start, end]``, a point at ``x``
falls in column ``floor((x - start) * width / (end - start))`` (the last
column also takes ``x == end``). Keeping the first, last, minimum and maximum
point of every column draws exactly the same line as all the points. NaN
values take no part in min/max; the first NaN of a column is kept as well so
the chart can mark it.

    >>> import numpy as np
    >>> x = np.arange(10.0); y = np.array([0, 5, 1, 1, 1, -3, 1, 1, 1, 2.0])
    >>> m4_indices(x, y, 0, 9, 2).tolist()
    [0, 1, 4, 5, 9]
"""

from __future__ import annotations

import numpy as np

__all__ = ["pixel_columns", "m4_indices"]


def pixel_columns(x: np.ndarray, start: float, end: float, width: int) -> np.ndarray:
    if end <= start:
        return np.zeros(len(x), dtype=np.int64)
    cols = np.floor((x - start) * (width / (end - start))).astype(np.int64)
    np.clip(cols, 0, width - 1, out=cols)
    return cols


def m4_indices(x: np.ndarray, y: np.ndarray, start: float, end: float, width: int) -> np.ndarray:
    """Sorted indices (into x, y; x sorted ascending) of the M4 points: per
    column the first and the last point, the earliest of its minima and the
    latest of its maxima (NaN left out) and its first NaN. In O(n): a column's
    points are consecutive, so its extremes come from one reduction per column,
    nothing is sorted."""
    n = len(x)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    cols = pixel_columns(np.asarray(x, dtype=np.float64), start, end, width)
    bounds = np.flatnonzero(np.diff(cols)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [n])) - 1
    picks = [starts, ends]
    nan = np.isnan(y)
    if not nan.all():
        group = np.repeat(np.arange(len(starts)), ends - starts + 1)
        # a column of NaN alone has min +inf and max -inf, which no value of it equals
        lowest = np.minimum.reduceat(np.where(nan, np.inf, y), starts)
        highest = np.maximum.reduceat(np.where(nan, -np.inf, y), starts)
        at_min = np.flatnonzero(y == lowest[group])
        at_max = np.flatnonzero(y == highest[group])
        g = group[at_min]
        picks.append(at_min[np.concatenate(([True], g[1:] != g[:-1]))])  # the earliest of each column
        g = group[at_max]
        picks.append(at_max[np.concatenate((g[1:] != g[:-1], [True]))])  # the latest of each column
    if nan.any():
        nan_idx = np.flatnonzero(nan)
        g = np.searchsorted(ends, nan_idx)  # group of each NaN
        keep = np.concatenate(([True], g[1:] != g[:-1]))
        picks.append(nan_idx[keep])
    return np.unique(np.concatenate(picks))
