"""The M4 golden vectors: the one definition of M4 every implementation is held
to, written here as plainly as it can be; the cases it is applied to; and the
loader the tests of each implementation read (``tests/golden/m4/vectors.json``,
written by ``python tests/m4_golden.py``; ``test_m4_golden.py`` fails while it
is stale).

The definition (Jugel et al., VLDB 2014, with curvestream's rules for ties and
non-finite values):

1. A point is (step, wall time in ns, value). A series never holds two points
   with the same wall time (wall time increases within a run); steps may repeat
   and go back (a resumed run). Points are taken in **key order**: on the step
   axis by (step, wall), on the time axis by wall.
2. A point's x is its step (step axis) or ``wall / 1e6``, ms since the epoch
   (time axis). A query asks for ``width`` columns over ``[start, end]`` (an
   omitted bound is the series' smallest or largest x); the points of the
   range are those with ``start <= x <= end``.
3. A point's column is ``floor((x - start) * (width / (end - start)))`` in IEEE
   doubles, evaluated exactly in that order, clipped to ``[0, width - 1]`` (so
   ``x == end`` falls in the last column); every point is in column 0 when
   ``end <= start``. (A point on a column edge goes where that rounding puts it.)
4. The M4 of a column: its first and its last point (whatever their values),
   among its points whose value is not NaN the **earliest** of those with the
   smallest value and the **latest** of those with the largest (±Inf are
   values; -0.0 equals 0.0), and its first NaN point. The M4 of the range is
   the union over its columns, in key order, each point once.
5. The answer to a query: when the range holds at most ``4 * width`` points, all
   of them (``raw``), else its M4; ``total`` the number of points in the range;
   and the neighbours: the last point before the range and the first after it,
   in key order.

Implementations read what they implement: the M4 of the range (kernels), the
whole answer (the stores' ``series()``, the chart core's ``m4``), the columns'
first, last, minimum and maximum values (the Grafana levels, for windows that
are whole rollup buckets). InfluxDB 3's SQL M4 reads them through
:func:`load_m4_vectors` as well.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys
from typing import Any

import numpy as np

__all__ = ["VECTORS", "M4Case", "M4Query", "load_m4_vectors", "window_queries", "reference_query", "make_vectors"]

VECTORS = pathlib.Path(__file__).resolve().parent / "golden" / "m4" / "vectors.json"
T0 = 10**15  # ns: 1e9 ms after the epoch, so every wall time is exact in a double (JSON read by JavaScript too)
MS = 1_000_000
WIDTHS = (1, 2, 3, 7, 16, 64)
WINDOWS_MS = (20, 100, 200)  # intervals that are whole rollup buckets of Grafana's levels (see grafana/queries)
KINDS = ("first", "last", "min", "max", "nan")


# ---------------------------------------------------------------------------------------------- the definition
def x_of(axis: str, step: int, wall: int) -> float:
    return float(step) if axis == "step" else wall / 1e6


def key_of(axis: str, step: int, wall: int) -> tuple[int, ...]:
    return (step, wall) if axis == "step" else (wall,)


def column_of(x: float, start: float, end: float, width: int) -> int:
    if end <= start:
        return 0
    return min(max(math.floor((x - start) * (width / (end - start))), 0), width - 1)


def reference_query(points: list[tuple[int, int, float]], axis: str, start: float | None, end: float | None,
                    width: int) -> dict[str, Any]:
    """The expected answer to one query, by the definition above; point indices into ``points``."""
    asked = [start, end]
    order = sorted(range(len(points)), key=lambda i: key_of(axis, points[i][0], points[i][1]))
    xs = {i: x_of(axis, points[i][0], points[i][1]) for i in order}
    if points:
        start = min(xs.values()) if start is None else start
        end = max(xs.values()) if end is None else end
    inside = [i for i in order if start is not None and start <= xs[i] <= end]
    columns: dict[int, dict[str, int]] = {}
    for i in inside:
        value = points[i][2]
        col = columns.setdefault(column_of(xs[i], start, end, width), {})
        col.setdefault("first", i)
        col["last"] = i
        if math.isnan(value):
            col.setdefault("nan", i)
            continue
        if "min" not in col or value < points[col["min"]][2]:
            col["min"] = i
        if "max" not in col or value >= points[col["max"]][2]:
            col["max"] = i
    chosen = {i for col in columns.values() for i in col.values()}
    m4 = [i for i in inside if i in chosen]
    before = [i for i in order if start is not None and xs[i] < start]
    after = [i for i in order if end is not None and xs[i] > end]
    return {
        "x": axis, "asked": asked, "start": start, "end": end, "width": width,
        "columns": [{"column": c, **columns[c]} for c in sorted(columns)],
        "m4": m4,
        "raw": len(inside) <= 4 * width, "total": len(inside),
        "points": inside if len(inside) <= 4 * width else m4,
        "before": before[-1] if before else None, "after": after[0] if after else None,
    }


# ---------------------------------------------------------------------------------------------- the cases
def _wall(i: int) -> int:
    """1 ms apart, half a millisecond off the grid: no point sits on a window's edge."""
    return T0 + i * MS + MS // 2


def _nonfinite() -> list[tuple[int, int, float]]:
    special = {0: math.nan, 3: math.inf, 4: math.inf, 40: -math.inf, 41: math.nan, 42: math.nan, 79: math.nan,
               100: 1000.0, 101: -1000.0, 120: math.inf, 121: -math.inf, 159: math.inf}
    special.update(dict.fromkeys(range(80, 86), math.nan))  # a column of NaN alone at some widths
    return [(i, _wall(i), special.get(i, round(10 * math.sin(i / 7) + 0.3 * (i % 5), 3))) for i in range(160)]


def _ties() -> list[tuple[int, int, float]]:
    pattern = (0.0, 1.0, 1.0, -0.0, 2.0, -1.0, 2.0, -1.0, 0.5, 0.0)
    return [(i // 2, _wall(i), pattern[i % len(pattern)]) for i in range(96)]  # every step logged twice


def _resumed() -> list[tuple[int, int, float]]:
    first = [(s, _wall(s), round(5 - s / 20 + math.cos(s) / 4, 4)) for s in range(100)]
    again = [(50 + j, _wall(100 + j), round(2.5 - j / 25 + math.sin(j) / 4, 4)) for j in range(50)]
    return first + again  # steps 50..99 again, later, with other values


def _one_step() -> list[tuple[int, int, float]]:
    points = [(s, _wall(s), float(s % 3)) for s in range(10)]
    points += [(10, _wall(10 + j), (-1.0, 4.0, 4.0, -1.0, 2.5, math.nan)[j % 6]) for j in range(30)]
    points += [(s, _wall(30 + s), float(s % 4)) for s in range(11, 30)]
    return points


CASES: dict[str, tuple[str, Any]] = {
    "nonfinite": ("a curve with NaN and ±Inf as first, last, lone and repeated values, a spike and a dip",
                  _nonfinite),
    "ties": ("every step logged twice; equal minima and maxima in every column, -0.0 beside 0.0", _ties),
    "steps_back": ("a run resumed from step 50: on the step axis x goes back and each step 50..99 has two points",
                   _resumed),
    "equal_x": ("30 points at step 10 (equal x on the step axis) among single steps", _one_step),
    "one_point": ("a single point", lambda: [(7, _wall(7), 3.5)]),
    "empty": ("no point at all", list),
}


def _queries(points: list[tuple[int, int, float]]) -> list[tuple[str, float | None, float | None, int]]:
    out: list[tuple[str, float | None, float | None, int]] = []
    for axis in ("step", "time"):
        xs = sorted(x_of(axis, s, w) for s, w, _ in points) or [0.0]
        lo, hi = xs[0], xs[-1]
        span = hi - lo
        out += [(axis, None, None, w) for w in WIDTHS]
        for w in (3, 7):
            if span > 1:
                out.append((axis, lo + 0.1 * span + 0.25, lo + 0.6 * span - 0.25, w))  # a zoom, fractional edges
            out.append((axis, lo - 10.5, hi + 10.5, w))  # wider than the series on both sides
        out.append((axis, xs[len(xs) // 2], xs[len(xs) // 2], 5))  # start == end
        out.append((axis, hi + 1, hi + 2, 4))  # after the last point: nothing in range, a neighbour before
        if axis == "step":
            out.append((axis, 0.1, 77.8, 3))  # step 26 on an edge: (26-0.1)*(3/77.7) rounds below 1, not to 1
        else:
            first_ms = (T0 // MS)
            for window in WINDOWS_MS:
                count = max(1, int(span // window))
                out.append((axis, float(first_ms), float(first_ms + count * window), count))
                out.append((axis, float(first_ms + window), float(first_ms + window + 2 * window), 2))
    return out


def make_vectors() -> dict[str, Any]:
    cases = []
    for name, (about, make) in CASES.items():
        points = make()
        cases.append({
            "name": name, "about": about,
            "points": [[s, w, _encode(v)] for s, w, v in points],
            "queries": [reference_query(points, *q) for q in _queries(points)],
        })
    return {"definition": "tests/m4_golden.py", "wall_ns": "int, below 2**53", "values": "NaN, Infinity, "
            "-Infinity spelled as strings", "indices": "into the case's points", "cases": cases}


def _encode(v: float) -> float | str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _decode(v: float | str) -> float:
    return float(v)  # "NaN", "Infinity", "-Infinity" and numbers


def render(vectors: dict[str, Any]) -> str:
    """The file's text: one point or query per line, so a change reads in a diff."""
    lines = ["{"]
    for k in ("definition", "wall_ns", "values", "indices"):
        lines.append(f"  {json.dumps(k)}: {json.dumps(vectors[k])},")
    lines.append('  "cases": [')
    for ci, case in enumerate(vectors["cases"]):
        lines.append("    {")
        lines.append(
            f'      "name": {json.dumps(case["name"])}, "about": {json.dumps(case["about"], ensure_ascii=False)},'
        )
        lines.append('      "points": [')
        lines += [f"        {json.dumps(p)}{',' if i < len(case['points']) - 1 else ''}"
                  for i, p in enumerate(case["points"])]
        lines.append("      ],")
        lines.append('      "queries": [')
        lines += [f"        {json.dumps(q)}{',' if i < len(case['queries']) - 1 else ''}"
                  for i, q in enumerate(case["queries"])]
        lines.append("      ]")
        lines.append("    }" + ("," if ci < len(vectors["cases"]) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- the loader
@dataclasses.dataclass(frozen=True)
class M4Query:
    """One query of a case and what the definition answers (indices into the case's points)."""

    x: str  # "step" | "time"
    asked: list[float | None]  # [start, end] as the query gives them (None: omitted)
    start: float | None  # as answered: the series' extent where the query omits a bound (None: no points)
    end: float | None
    width: int
    columns: list[dict[str, int]]  # per non-empty column: "column" and the index of its first/last/min/max/nan
    m4: list[int]  # the M4 of the range, in key order
    raw: bool
    total: int
    points: list[int]  # the answer's points: all of the range (raw) or its M4, in key order
    before: int | None
    after: int | None


@dataclasses.dataclass(frozen=True)
class M4Case:
    name: str
    about: str
    steps: np.ndarray  # int64
    walls: np.ndarray  # int64, ns
    values: np.ndarray  # float64, NaN and ±Inf included
    queries: list[M4Query]

    def x(self, axis: str) -> np.ndarray:
        return self.steps.astype(np.float64) if axis == "step" else self.walls / 1e6

    def key_order(self, axis: str) -> np.ndarray:
        """Indices of the points in key order ((step, wall) or wall)."""
        return np.lexsort((self.walls, self.steps)) if axis == "step" else np.argsort(self.walls, kind="stable")


def window_queries(case: M4Case, intervals_ms: Any) -> list[tuple[M4Query, int]]:
    """The case's time-axis queries whose columns are whole windows of one of ``intervals_ms``
    (``GROUP BY time(interval)``, aligned to the epoch), with that interval: what a query
    grouping by time windows answers for those columns."""
    out = []
    for q in case.queries:
        if q.x == "time" and q.start is not None and q.end is not None:
            interval = (q.end - q.start) / q.width
            if interval in intervals_ms and q.start % interval == 0:
                out.append((q, int(interval)))
    return out


def load_m4_vectors(path: pathlib.Path = VECTORS) -> list[M4Case]:
    """Every case of the golden vectors, with its queries and their expected answers."""
    data = json.loads(path.read_text())
    out = []
    for case in data["cases"]:
        pts = case["points"]
        queries = [M4Query(**{f.name: q[f.name] for f in dataclasses.fields(M4Query)}) for q in case["queries"]]
        out.append(M4Case(case["name"], case["about"], np.array([p[0] for p in pts], dtype=np.int64),
                          np.array([p[1] for p in pts], dtype=np.int64),
                          np.array([_decode(p[2]) for p in pts], dtype=np.float64), queries))
    return out


if __name__ == "__main__":
    VECTORS.parent.mkdir(parents=True, exist_ok=True)
    VECTORS.write_text(render(make_vectors()))
    print(f"wrote {VECTORS}", file=sys.stderr)
