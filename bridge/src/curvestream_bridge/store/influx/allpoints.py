"""Every point of a series from InfluxDB, in time order, a page at a time:
``time >= t ORDER BY time LIMIT n``, then on from the last time + 1 (a point's
time is its wall time, unique within its series). Each page is one query, so
the series is never held whole; points written meanwhile behind the page
being read are not included, those after it are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from curvestream_bridge.store.base import PointColumns
from curvestream_bridge.store.influx.rows import SeriesKey, series_where
from curvestream_bridge.store.influx.series import points_of

__all__ = ["PAGE_POINTS", "all_points"]

PAGE_POINTS = 100_000


def all_points(series: Callable[..., list[dict[str, Any]]], key: SeriesKey) -> Iterator[PointColumns]:
    """``series(statement, chunked=True)``: the store's query function."""
    page_points = PAGE_POINTS
    where = series_where(key)
    lo = None
    while True:
        after = "" if lo is None else f" AND time >= {lo}"
        step, wall, value = points_of(series(
            f'SELECT "step", "value", "nonfinite" FROM "cs_scalar" WHERE {where}{after} '
            f'ORDER BY time ASC LIMIT {int(page_points)}', chunked=True))
        if len(step):
            yield PointColumns(step, wall, value)
        if len(step) < page_points:
            return
        lo = int(wall[-1]) + 1
