"""Pixel columns snapped to a grid of whole rollup buckets.

An exact M4 of a pixel column needs the points of the bottom bucket each
column edge cuts. On an engine that reads many small ranges cheaply (DuckDB)
that costs little; on InfluxDB 1.x every edge is a statement that decodes a
whole block of packed points (seconds for a view of 2,000 columns). A query
that asks for snapped columns (``SeriesQuery.snap``) is answered over a range
widened so that every column is a whole number of grid units and every
column edge a multiple of the unit: no edge cuts a bucket of any engine whose
buckets divide the unit, and the rollup rows alone give every column's M4.

The grid depends only on the request (the axis, the range and the width),
never on a series, so every run of an overlay (and every engine) answers the
same range:

- ``x = step``: units are powers of two (InfluxDB's and DuckDB's step buckets
  are ``2**b * 8**k`` steps);
- ``x = time``: units are the Grafana intervals that nest,
  :data:`TIME_UNITS_MS` (InfluxDB's time buckets, :mod:`..influx.ladder`);
- ``x = relative``: not snapped (each run has its own origin).

A column holds more than :data:`MIN_UNITS` units, so the range grows by at
most 1/16 of itself (half on each side, rounded to units); a range too short
for that (at most 16 units of 1 step or 1 ms per column) is not snapped. The
answered ``start``/``end`` are the snapped range: a page draws its x axis over
exactly that range. For x = step they lie half a step outside the integer
edges, so that the float column formula of :func:`.kernel.pixel_columns`
puts every edge exactly on a multiple of the unit.

    >>> from curvestream_bridge.store.m4.plan import AxisScale
    >>> s = snap(AxisScale("step"), 0, 999_999, 2000)
    >>> s.start, s.end, s.unit, (s.end - s.start) / 2000
    (-12000.5, 1011999.5, 16, 512.0)
    >>> snap(AxisScale("step"), -12000, 1011999, 2000) == s  # a snapped range snaps to itself
    True
    >>> snap(AxisScale("step"), 0, 31_999, 2000) is None  # 16 steps a column: too short
    True
"""

from __future__ import annotations

import dataclasses

from curvestream_bridge.store.m4.plan import AxisScale

__all__ = ["MIN_UNITS", "Snapped", "snap", "TIME_UNITS_MS", "FLOAT_SLACK_NS"]

MIN_UNITS = 16
"""A column holds more grid units than this: the range grows by at most 1/MIN_UNITS."""

TIME_UNITS_MS = (
    1, 10, 20, 100, 200, 1_000, 2_000, 10_000, 20_000, 60_000, 120_000, 600_000, 1_200_000, 3_600_000, 7_200_000,
    21_600_000, 43_200_000, 86_400_000,
)
"""The values of Grafana's rounded interval that nest (each divides the next):
the time grid, and InfluxDB's time rollup levels (:data:`..influx.ladder.LADDER_MS`)."""
_TIME_UNITS_NS = tuple(ms * 1_000_000 for ms in TIME_UNITS_MS)

FLOAT_SLACK_NS = 1024
"""At x = time an integer range comes from a range of float milliseconds since the
epoch (~244 ns apart): its ends within this of a grid point are taken to lie on it,
so that a snapped range, asked again, snaps to itself."""


@dataclasses.dataclass(frozen=True)
class Snapped:
    """A snapped range: integer positions ``lo .. lo + width * column - 1``, each
    column ``column`` positions (a multiple of ``unit``), ``lo`` a multiple of
    ``unit``; ``start``/``end`` the range in x units."""

    start: float
    end: float
    lo: int
    column: int
    unit: int


def snap(scale: AxisScale, lo: int, hi: int, width: int) -> Snapped | None:
    """The snapped range that holds the integer range ``[lo, hi]`` (at x = time up
    to :data:`FLOAT_SLACK_NS` at either end) at ``width`` columns, or None when the
    axis or the range is not snapped. A column is
    ``m`` units with ``MIN_UNITS < m``, and ``m`` units of the next larger unit
    would be at most ``MIN_UNITS``: so snapping a snapped range gives it back."""
    if scale.axis == "relative" or hi < lo or width < 1:
        return None
    span = hi + 1 - lo
    slack = FLOAT_SLACK_NS if scale.axis == "time" else 0
    units = _units(scale.axis, (span - 2 * slack) / width)
    if not units:
        return None
    for i, unit in enumerate(units):
        first = (lo + slack) // unit * unit
        per = max(-(-(hi + 1 - slack - first) // (width * unit)), MIN_UNITS + 1)  # units per column
        if i + 1 == len(units) or per * unit <= MIN_UNITS * units[i + 1]:
            break
    column = per * unit
    total = width * column
    # the slack goes half to each side, in whole units (the range still holds [lo, hi])
    shift = max(0, min((total - span) // 2 // unit, (first + total - (hi + 1 - slack)) // unit))
    start = first - shift * unit
    if scale.axis == "step":
        return Snapped(start - 0.5, start + total - 0.5, start, column, unit)
    return Snapped(start / 1e6, (start + total) / 1e6, start, column, unit)


def _units(axis: str, per_column: float) -> list[int]:
    """The grid units to try, smallest first: the largest unit of which a column
    of ``per_column`` positions holds more than MIN_UNITS, and the next ones (a
    column rounded up to whole units may reach the next unit)."""
    if axis == "step":
        if per_column <= MIN_UNITS:
            return []
        unit = 1
        while unit * 2 * MIN_UNITS < per_column:
            unit *= 2
        return [unit, unit * 2, unit * 4]
    fitting = [i for i, u in enumerate(_TIME_UNITS_NS) if u * MIN_UNITS < per_column]
    return list(_TIME_UNITS_NS[fitting[-1]:fitting[-1] + 3]) if fitting else []
