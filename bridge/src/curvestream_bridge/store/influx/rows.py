"""The text of InfluxDB rollup rows (see :mod:`.rollup`), and the InfluxQL
pieces that name a series.

A row holds the aggregate of :mod:`..m4.agg` as plain numeric fields, so that
InfluxQL and Flux read it as they read any measurement::

    count                                   points in the bucket
    first, last, min, max                   their values, when finite (min/max: the finite extremes)
    first_nf, last_nf, min_nf, max_nf       0 when the value is finite, else 1 NaN, 2 +Inf, 3 -Inf
    first_step, first_time, ...             the step and wall time (ns) of each of the four points
    nan_step, nan_time                      the first NaN, if any
    time_lo, time_hi                        the wall-time extent of the points

A field that does not apply is absent (a bucket of NaN only has no min).
``min`` and ``max`` are the extremes among non-NaN values (M4's). A row is
rewritten as its bucket grows and InfluxDB keeps fields a rewrite leaves out,
so ``*_nf`` is always written and the value counts only where it is 0: in a
bucket that holds -Inf (``min_nf`` 3), ``min`` is the finite minimum it had
before, and a dashboard sees smaller finite values there only at finer levels.

The bridge itself reads one more field, ``m``: the same aggregate packed as one
little-endian record (``RECORD``, 138 bytes, base64). InfluxDB reads every field
of a row as a column of its own, so one packed field is read ten times faster
than the numeric ones. ``p`` (bottom level of the time rollups only) packs a
bucket's points (``POINT``, 24 bytes each), read by the bridge for the buckets
a pixel-column edge cuts (on either axis: a step bucket's points are found
within its wall-time extent) and, in place of ``m``, for the other bottom
buckets a time query reads (their aggregates are made from the points).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from curvestream_bridge.store.influx.lineproto import encode_tag, influxql_string, stored_tag
from curvestream_bridge.store.m4.agg import FIRST, KINDS, LAST, MAX, MIN, NAN, M4Agg, points_runs

__all__ = ["RECORD", "POINT", "PACK_POINTS", "FIELDS", "SELECT_FIELDS", "field_texts", "pack", "unpack",
           "pack_points", "unpack_points",
           "Statements", "SeriesKey", "series_where", "series_tags", "tag_literal", "rows_of", "packs_of",
           "aggs_of_points", "bucket_runs", "NONFINITE", "points_of", "raw_stmt"]

PACK_POINTS = 1500
"""At most this many points in a bottom row's ``p`` (a string field holds 64 KB); beyond, ``p`` is
empty and a query reads that bucket's points from cs_scalar."""
POINT = np.dtype([("step", "<i8"), ("wall", "<i8"), ("value", "<f8")])

_POINT_KINDS = ((FIRST, "first"), (LAST, "last"), (MIN, "min"), (MAX, "max"))
FIELDS = ("count",) + tuple(f"{p}{c}" for _, p in _POINT_KINDS for c in ("", "_nf", "_step", "_time")) + (
    "nan_step", "nan_time", "time_lo", "time_hi")
SELECT_FIELDS = '"m"'
"""What the bridge reads of a row: the packed aggregate."""
_NONFINITE_CODE = {"nan": 1, "inf": 2, "-inf": 3}
NONFINITE = {1: np.nan, 2: np.inf, 3: -np.inf}
"""The values of ``nonfinite`` codes (``cs_scalar`` and the rollup rows' ``*_nf``)."""


def field_texts(agg: M4Agg, numeric: bool = True) -> list[str]:
    """The field set of each aggregate row, as line protocol (``numeric=False``:
    only ``m``, for rows no dashboard reads)."""
    if not numeric:
        return [f'm="{text}"' for text in pack(agg)]
    cols = [agg.n.tolist(), agg.wlo.tolist(), agg.whi.tolist()]
    kinds = [(p, agg.has[k].tolist(), agg.step[k].tolist(), agg.wall[k].tolist(), agg.value[k].tolist())
             for k, p in _POINT_KINDS]
    nan_has, nan_step, nan_wall = agg.has[NAN].tolist(), agg.step[NAN].tolist(), agg.wall[NAN].tolist()
    packed = pack(agg)
    out = []
    for i, (n, wlo, whi) in enumerate(zip(*cols)):
        parts = [f"count={n}i"]
        for p, has, step, wall, value in kinds:
            if not has[i]:
                continue
            v = value[i]
            parts.append(f"{p}={v!r},{p}_nf=0i" if math.isfinite(v) else f"{p}_nf={_NONFINITE_CODE[repr(v)]}i")
            parts.append(f"{p}_step={step[i]}i,{p}_time={wall[i]}i")
        if nan_has[i]:
            parts.append(f"nan_step={nan_step[i]}i,nan_time={nan_wall[i]}i")
        parts.append(f"time_lo={wlo}i,time_hi={whi}i")
        parts.append(f'm="{packed[i]}"')
        out.append(",".join(parts))
    return out


_KINDS = ((FIRST, "f"), (LAST, "l"), (MIN, "mn"), (MAX, "mx"), (NAN, "nan"))
RECORD = np.dtype(
    [("n", "<i8")]
    + [
        (f"{p}_{c}", "<i8" if c != "v" else "<f8")
        for _, p in _KINDS
        for c in (("s", "w") if p == "nan" else ("s", "w", "v"))
    ]
    + [("wlo", "<i8"), ("whi", "<i8"), ("has", "<u2")]
)
assert RECORD.itemsize % 3 == 0


def pack(agg: M4Agg) -> list[str]:
    """One base64 text per aggregate row."""
    rec = np.zeros(len(agg), dtype=RECORD)
    rec["n"] = agg.n
    has = np.zeros(len(agg), dtype=np.uint16)
    for kind, p in _KINDS:
        rec[f"{p}_s"], rec[f"{p}_w"] = agg.step[kind], agg.wall[kind]
        if kind != NAN:
            rec[f"{p}_v"] = agg.value[kind]
        has |= agg.has[kind].astype(np.uint16) << kind
    rec["wlo"], rec["whi"], rec["has"] = agg.wlo, agg.whi, has
    raw = rec.tobytes()
    size = RECORD.itemsize
    return [base64.b64encode(raw[i:i + size]).decode("ascii") for i in range(0, len(raw), size)]


def pack_points(points: np.ndarray) -> str:
    """The ``p`` text of a bucket's points (a POINT array); empty when too many."""
    if len(points) > PACK_POINTS:
        return ""
    return base64.b64encode(np.ascontiguousarray(points, dtype=POINT).tobytes()).decode("ascii")


def unpack_points(texts: Iterable[str]) -> np.ndarray:
    return np.frombuffer(base64.b64decode("".join(texts)), dtype=POINT)


def unpack(texts: Iterable[str]) -> M4Agg:
    rec = np.frombuffer(base64.b64decode("".join(texts)), dtype=RECORD)
    agg = M4Agg.empty(len(rec))
    agg.n = rec["n"].astype(np.int64)
    for kind, p in _KINDS:
        agg.step[kind], agg.wall[kind] = rec[f"{p}_s"], rec[f"{p}_w"]
        agg.value[kind] = np.nan if kind == NAN else rec[f"{p}_v"]
        agg.has[kind] = (rec["has"] >> kind) & 1 == 1
    agg.wlo, agg.whi = rec["wlo"].astype(np.int64), rec["whi"].astype(np.int64)
    return agg



assert KINDS == 5 and {FIRST, LAST, MIN, MAX, NAN} == set(range(5))


Statements = Callable[[list[str]], list[list[dict[str, Any]]]]
"""Runs InfluxQL statements in one request; for each, its result series."""

SeriesKey = tuple[str, str, str]  # project, run, metric key


def series_where(key: SeriesKey) -> str:
    project, run, metric = key
    return f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)} AND "metric" = {tag_literal(metric)}'


def series_tags(key: SeriesKey) -> str:
    project, run, metric = key
    return f"metric={encode_tag(metric)},project={encode_tag(project)},run={encode_tag(run)}"


def rows_of(result: list[dict[str, Any]], size: int) -> tuple[np.ndarray, M4Agg]:
    """Buckets and aggregates of ``SELECT "m"`` result series."""
    times: list[int] = []
    texts: list[str] = []
    for s in result:
        for t, m in s["values"]:
            times.append(t)
            texts.append(json.loads(m) if m.startswith('"') else m)
    return np.floor_divide(np.asarray(times, dtype=np.int64), size), unpack(texts)


def packs_of(result: list[dict[str, Any]], size: int) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """Buckets and points of ``SELECT "p"`` result series (None: too many points, not packed)."""
    buckets: list[int] = []
    packs: list[np.ndarray | None] = []
    for s in result:
        for t, p in s["values"]:
            buckets.append(t // size)
            packs.append(unpack_points([p]) if p else None)
    return np.asarray(buckets, dtype=np.int64), packs


def aggs_of_points(packs: list[np.ndarray]) -> M4Agg:
    """The aggregate of each row's points (POINT arrays, none empty), as its
    ``m`` holds it on the time axis (x order: wall time).

    >>> pts = np.array([(2, 30, 1.0), (1, 10, 5.0), (3, 20, 5.0)], dtype=POINT)
    >>> agg = aggs_of_points([pts, pts[:1]])
    >>> agg.n.tolist(), agg.point(FIRST, 0), agg.point(MAX, 0), agg.point(LAST, 1)
    ([3, 1], (1, 10, 5.0), (3, 20, 5.0), (2, 30, 1.0))
    """
    lens = np.array([len(p) for p in packs], dtype=np.int64)
    if len(packs) == 0:
        return M4Agg.empty(0)
    pts = np.concatenate(packs)
    pts = pts[np.lexsort((pts["wall"], np.repeat(np.arange(len(packs)), lens)))]
    return points_runs(pts["step"], pts["wall"], pts["value"], np.cumsum(lens) - lens)


def bucket_runs(sorted_buckets: np.ndarray, gap: int) -> list[tuple[int, int]]:
    """Runs (first, last) of sorted buckets, joining runs with at most ``gap``
    missing buckets between them (0: contiguous runs)."""
    if len(sorted_buckets) == 0:
        return []
    breaks = np.flatnonzero(np.diff(sorted_buckets) > gap + 1)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [len(sorted_buckets) - 1]))
    return list(zip(sorted_buckets[starts].tolist(), sorted_buckets[ends].tolist()))


def raw_stmt(where: str, lo: int, hi: int) -> str:
    """The raw points of a series (``where``) with wall time in ``[lo, hi]``."""
    return f'SELECT "step", "value", "nonfinite" FROM "cs_scalar" WHERE {where} AND time >= {lo} AND time <= {hi}'


def points_of(result: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, wall, value) of ``SELECT step, value, nonfinite`` result series."""
    times, steps, values = [], [], []
    for s in result:
        for t, step, value, nf in s["values"]:
            times.append(t)
            steps.append(step)
            values.append(NONFINITE[nf] if nf else value)
    return (np.asarray(steps, dtype=np.int64), np.asarray(times, dtype=np.int64),
            np.asarray(values, dtype=np.float64))


def tag_literal(name: str) -> str:
    """An InfluxQL literal of a tag value as stored."""
    return influxql_string(stored_tag(name))
