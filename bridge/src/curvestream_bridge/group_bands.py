"""A group of runs as one curve: per pixel column, the mean of its runs' values
and the band of their minimum and maximum (``GET /api/v1/groups/series``),
computed on the bridge from the runs' M4 answers, so a page draws a sweep of
hundreds of runs without loading any of their curves.

Every run of a group is read over the same range and pixel columns (the
union of their extents unless the query gives one). Each run's M4 answer
holds, for every column, its first, last, lowest and highest point (or every
point of a small range), so per column:

- ``min`` / ``max`` are exactly the lowest and highest value any run of the
  group has in that column (NaN left out; ±Inf kept: a run that reached it
  did reach it);
- a run's *value* in a column is its last value there (what its line
  shows at the column's right edge); in a column where other runs of the
  group have points, a run with none there but points on both sides counts
  with its line's value at the column's middle (in ``min`` / ``max`` too: its
  line passes there), so a run logged every 100 steps does not leave the mean
  between its points; a run outside its own extent does not count;
- a column is answered when a run of the group has a point in it (between
  such columns the lines are drawn straight, as each run's own line is);
- ``mean`` and ``std`` (population) are over the runs' values, ``count`` says
  how many there were; ``x``, ``step`` and ``time_ms`` are the mean x, step and
  wall time of those values (a line's value: its points' step and time at the
  column's middle, in proportion);
- a run whose value in a column is NaN or ±Inf is left out of that column's
  mean and counted in ``non_finite``.

Each of these is exact: the last point of a column, its extremes and the
points around an empty column are all in the run's M4 answer.

    >>> r = SeriesResult(True, 3, np.array([0., 1, 1, 6]), np.array([0, 1, 1, 6]), np.array([0, 1, 2, 6]),
    ...                  np.array([5., 7, 1, 2]), 0, 6)
    >>> c = member_columns(r, 0, 6, 3)  # columns [0, 2), [2, 4), [4, 6]: the middle one has no point
    >>> c.lo.tolist(), c.hi.tolist(), c.value.tolist(), c.x.tolist(), c.points.tolist()
    ([1.0, 1.4, 2.0], [7.0, 1.4, 2.0], [1.0, 1.4, 2.0], [1.0, 3.0, 6.0], [True, False, True])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from curvestream_bridge.configtext import group_label
from curvestream_bridge.jsonnum import json_floats
from curvestream_bridge.runs_table import natural_key
from curvestream_bridge.store.base import SeriesQuery, SeriesResult, XAxis
from curvestream_bridge.store.cancel import check
from curvestream_bridge.store.m4.kernel import pixel_columns

__all__ = ["GroupQuery", "member_columns", "MemberColumns", "GroupAccumulator", "group_bands", "group_table", "CHUNK"]

CHUNK = 64
"""Runs read per ``series_many`` call: a group's memory is that many answers, whatever its size."""


@dataclasses.dataclass
class MemberColumns:
    """One run's figures per column; NaN where it has none."""

    lo: np.ndarray
    hi: np.ndarray
    value: np.ndarray  # its last finite value (or its line's value at the column's middle)
    x: np.ndarray  # where that value is
    step: np.ndarray  # its step and wall time (ms)
    time_ms: np.ndarray
    non_finite: np.ndarray  # bool: its value there is NaN or ±Inf
    points: np.ndarray  # bool: it has points there (not only its line)


def member_columns(result: SeriesResult, start: float, end: float, width: int) -> MemberColumns:
    nan = np.full(width, np.nan)
    out = MemberColumns(nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(), np.zeros(width, bool),
                        np.zeros(width, bool))
    first = 1 if result.before is not None else 0
    last = len(result.x) - (1 if result.after is not None else 0)
    x, y = result.x[first:last], result.y[first:last]
    if len(x):
        cols = pixel_columns(x, start, end, width)
        starts = np.flatnonzero(np.concatenate(([True], cols[1:] != cols[:-1])))
        ends = np.concatenate((starts[1:], [len(x)])) - 1
        where = cols[starts]
        with np.errstate(invalid="ignore"):
            out.lo[where] = np.fmin.reduceat(y, starts)  # fmin / fmax leave NaN out
            out.hi[where] = np.fmax.reduceat(y, starts)
        finite = np.isfinite(y[ends])
        out.value[where[finite]] = y[ends[finite]]
        out.x[where[finite]] = x[ends[finite]]
        out.step[where[finite]] = result.step[first:last][ends[finite]]
        out.time_ms[where[finite]] = result.wall_ns[first:last][ends[finite]] / 1e6
        out.non_finite[where[~finite]] = True
        out.points[where] = True
        empty = np.ones(width, bool)
        empty[where] = False
    else:
        empty = np.ones(width, bool)
    # columns its line crosses without a point: its value at their middle, between the points around them
    xs, ys = result.x, result.y
    middle = start + (np.flatnonzero(empty) + 0.5) * ((end - start) / width)
    after = np.searchsorted(xs, middle, side="right")
    inside = (after > 0) & (after < len(xs))
    cols, after, middle = np.flatnonzero(empty)[inside], after[inside], middle[inside]
    x0, x1, y0, y1 = xs[after - 1], xs[after], ys[after - 1], ys[after]
    ok = np.isfinite(y0) & np.isfinite(y1)
    share = (middle[ok] - x0[ok]) / (x1[ok] - x0[ok])
    line = y0[ok] + (y1[ok] - y0[ok]) * share
    out.lo[cols[ok]] = out.hi[cols[ok]] = out.value[cols[ok]] = line
    out.x[cols[ok]] = middle[ok]
    for field, values in (("step", result.step), ("time_ms", result.wall_ns / 1e6)):
        v0, v1 = values[after - 1][ok].astype(np.float64), values[after][ok].astype(np.float64)
        getattr(out, field)[cols[ok]] = v0 + (v1 - v0) * share
    out.non_finite[cols[~ok]] = True
    return out


class GroupAccumulator:
    """The columns of one group, run by run (Welford's mean and variance)."""

    def __init__(self, width: int) -> None:
        self.lo = np.full(width, np.nan)
        self.hi = np.full(width, np.nan)
        self.count = np.zeros(width, np.int64)
        self.mean = np.zeros(width)
        self.m2 = np.zeros(width)
        self.x_sum = np.zeros(width)
        self.step_sum = np.zeros(width)
        self.time_sum = np.zeros(width)
        self.points = np.zeros(width, bool)
        self.non_finite = np.zeros(width, np.int64)

    def add(self, c: MemberColumns) -> None:
        with np.errstate(invalid="ignore"):
            self.lo = np.fmin(self.lo, c.lo)
            self.hi = np.fmax(self.hi, c.hi)
        has = np.isfinite(c.value)
        self.count += has
        delta = np.where(has, c.value - self.mean, 0.0)
        self.mean += np.where(has, delta / np.maximum(self.count, 1), 0.0)
        self.m2 += np.where(has, delta * (np.where(has, c.value, 0.0) - self.mean), 0.0)
        self.x_sum += np.where(has, c.x, 0.0)
        self.step_sum += np.where(has, c.step, 0.0)
        self.time_sum += np.where(has, c.time_ms, 0.0)
        self.points |= c.points
        self.non_finite += c.non_finite

    def columns(self, start: float, end: float) -> dict[str, Any]:
        """The columns where a run of the group has points (JSON)."""
        shown = np.flatnonzero(self.points)
        n = self.count[shown]
        middle = start + (shown + 0.5) * ((end - start) / len(self.count))
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.where(n > 0, self.x_sum[shown] / n, middle)
            step = np.where(n > 0, self.step_sum[shown] / n, np.nan)
            time_ms = np.where(n > 0, self.time_sum[shown] / n, np.nan)
            mean = np.where(n > 0, self.mean[shown], np.nan)
            std = np.where(n > 0, np.sqrt(self.m2[shown] / n), np.nan)
        return {"column": shown.tolist(), "x": x.tolist(), "step": _or_null(step), "time_ms": _or_null(time_ms),
                "mean": json_floats(mean), "std": json_floats(std), "min": json_floats(self.lo[shown]),
                "max": json_floats(self.hi[shown]), "count": n.tolist()}


def _or_null(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]


@dataclasses.dataclass(frozen=True)
class GroupQuery:
    key: str
    group_by: str
    x: XAxis = "step"
    start: float | None = None
    end: float | None = None
    width: int = 1000


def _group_order(value: str | None) -> tuple:
    """Groups in value order, numbers by value, the runs without a value last."""
    if value is None:
        return (2, 0.0, ())
    try:
        number = float(value)
    except ValueError:
        return (1, 0.0, natural_key(value))
    return (0, number, natural_key(value)) if np.isfinite(number) else (1, 0.0, natural_key(value))


def group_bands(q: GroupQuery, members: Sequence[tuple[tuple[str, str], str | None]],
                series_many: Callable[[list[SeriesQuery]], list[SeriesResult]]) -> dict[str, Any]:
    """The answer for ``members`` (each run with its group value): the range, then
    per group its runs and columns. Reads the runs ``CHUNK`` at a time."""
    runs = [ref for ref, _ in members]
    start, end = q.start, q.end
    if start is None or end is None:  # the union of the runs' extents: one column each, cheap to read
        extents = _read(runs, lambda p, r: SeriesQuery(p, r, q.key, q.x, start, end, 1), series_many)
        found = [(e.start, e.end) for e in extents if e.total > 0 and e.start is not None and e.end is not None]
        if not found:
            start = end = None
        else:
            start = start if start is not None else min(s for s, _ in found)
            end = end if end is not None else max(e for _, e in found)
    groups: dict[str | None, list[tuple[str, str]]] = {}
    for ref, value in members:
        groups.setdefault(value, []).append(ref)
    ordered = sorted(groups, key=_group_order)
    out: dict[str, Any] = {"key": q.key, "x": q.x, "group_by": q.group_by, "start": start, "end": end,
                           "width": q.width, "groups": []}
    if start is None or end is None:
        out["groups"] = [_group_json(q, v, groups[v], None, 0, 0) for v in ordered]
        return out
    accumulators = {v: GroupAccumulator(q.width) for v in ordered}
    value_of = dict(members)
    for i in range(0, len(runs), CHUNK):
        part = runs[i:i + CHUNK]
        answers = _read(part, lambda p, r: SeriesQuery(p, r, q.key, q.x, start, end, q.width), series_many)
        for ref, result in zip(part, answers):
            accumulators[value_of[ref]].add(member_columns(result, start, end, q.width))
    out["groups"] = [_group_json(q, v, groups[v], accumulators[v], start, end) for v in ordered]
    return out


def group_table(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer as rows, one per group and column (``format=table``): what a table-reading client takes
    (Grafana's Infinity data source, a dataframe), each row naming its group."""
    rows = []
    for g in answer["groups"]:
        cols = g["columns"]
        names = [k for k in cols if k != "column"]
        for i, column in enumerate(cols["column"]):
            rows.append({"group": g["label"], "value": g["value"], "runs": len(g["runs"]), "column": column,
                         **{k: cols[k][i] for k in names}})
    return {"key": answer["key"], "x": answer["x"], "group_by": answer["group_by"], "start": answer["start"],
            "end": answer["end"], "width": answer["width"], "rows": rows}


def _read(runs: list[tuple[str, str]], query: Callable[[str, str], SeriesQuery],
          series_many: Callable[[list[SeriesQuery]], list[SeriesResult]]) -> list[SeriesResult]:
    check()  # the client may have gone away
    return series_many([query(p, r) for p, r in runs]) if runs else []


def _group_json(q: GroupQuery, value: str | None, runs: list[tuple[str, str]], acc: GroupAccumulator | None,
                start: float, end: float) -> dict[str, Any]:
    empty: dict[str, list] = {k: [] for k in ("column", "x", "step", "time_ms", "mean", "std", "min", "max", "count")}
    return {"value": value, "label": group_label(q.group_by, value),
            "runs": [{"project": p, "run": r} for p, r in runs],
            "non_finite": int(acc.non_finite[acc.points].sum()) if acc is not None else 0,
            "columns": acc.columns(start, end) if acc is not None else empty}
