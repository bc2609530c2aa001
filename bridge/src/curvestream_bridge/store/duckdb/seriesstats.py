"""The figures the DuckDB store keeps per series, in its row of ``series``.

Columns::

    count                       -- points (scalars) or records (histograms, texts)
    first_step, first_ns        -- the point of the earliest wall time
    last_step, last_ns          -- the point of the latest wall time
    last_value, last_is_nan     -- its value (scalars; NULL and last_is_nan when it is NaN)
    min_step, max_step          -- the step extent (scalars)

Why: the metrics list (:func:`metrics`), the point counts of the runs list,
the origin of a relative x axis (the run's earliest wall time,
:func:`run_starts_ns`) and the extent of a series query (:mod:`.many`,
:mod:`.points`) are then one row per series, not a pass over its points. The
figures are those of all the points written, whatever order their batches came
in; on equal wall times the point that came first counts as first and as last.
They are written in the caller's transaction, with the points.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np

from curvestream_bridge.store.base import MetricRecord
from curvestream_bridge.store.duckdb.aggrows import scan
from curvestream_bridge.store.duckdb.points import SortedPoints

__all__ = ["add_points", "add_record", "metrics", "run_starts_ns"]


def add_points(cur: duckdb.DuckDBPyConnection, pts: SortedPoints) -> None:
    """The scalar points of a write (sorted by series, then wall time, ties as
    they came) counted in, all series by one statement (one per series cost
    more than the points of a small round)."""
    first = pts.bounds[:-1]
    end = pts.bounds[1:]
    # the last point: the first of the series' latest wall time (ties: the one that came first)
    latest = pts.walls[end - 1][pts.series]
    candidates = np.where(pts.walls == latest, np.arange(len(pts.walls)), len(pts.walls))
    last = np.minimum.reduceat(candidates, first)
    cols = {"sid": pts.sids.astype(np.int32), "n": (end - first).astype(np.int64),
            "fs": pts.steps[first], "fn": pts.walls[first], "ls": pts.steps[last], "ln": pts.walls[last],
            "lv": pts.values[last], "smin": np.minimum.reduceat(pts.steps, first),
            "smax": np.maximum.reduceat(pts.steps, first)}
    cols["nan"] = np.isnan(cols["lv"])
    with scan(cur, "new_stats", cols):
        cur.execute(
            """UPDATE series SET count = count + u.n,
                   first_step = CASE WHEN first_ns IS NULL OR u.fn < first_ns THEN u.fs ELSE first_step END,
                   first_ns = CASE WHEN first_ns IS NULL OR u.fn < first_ns THEN u.fn ELSE first_ns END,
                   last_step = CASE WHEN last_ns IS NULL OR u.ln > last_ns THEN u.ls ELSE last_step END,
                   last_value = CASE WHEN last_ns IS NULL OR u.ln > last_ns
                                     THEN (CASE WHEN u.nan THEN NULL ELSE u.lv END) ELSE last_value END,
                   last_is_nan = CASE WHEN last_ns IS NULL OR u.ln > last_ns THEN u.nan ELSE last_is_nan END,
                   last_ns = CASE WHEN last_ns IS NULL OR u.ln > last_ns THEN u.ln ELSE last_ns END,
                   min_step = least(coalesce(min_step, u.smin), u.smin),
                   max_step = greatest(coalesce(max_step, u.smax), u.smax)
               FROM new_stats u WHERE series.sid = u.sid""")


def add_record(cur: duckdb.DuckDBPyConnection, sid: int, step: int, wall_ns: int) -> None:
    """One histogram or text record counted in."""
    cur.execute(
        """UPDATE series SET count = count + 1,
               first_step = CASE WHEN first_ns IS NULL OR $2 < first_ns THEN $1 ELSE first_step END,
               first_ns = CASE WHEN first_ns IS NULL OR $2 < first_ns THEN $2 ELSE first_ns END,
               last_step = CASE WHEN last_ns IS NULL OR $2 > last_ns THEN $1 ELSE last_step END,
               last_ns = CASE WHEN last_ns IS NULL OR $2 > last_ns THEN $2 ELSE last_ns END
           WHERE sid = $3""",
        [step, wall_ns, sid],
    )


def metrics(cur: duckdb.DuckDBPyConnection, runs: Sequence[tuple[str, str]]) -> list[list[MetricRecord]]:
    """Each run's series, in one statement over the series table."""
    wanted = list(dict.fromkeys(runs))
    if not wanted:
        return []
    pairs = ", ".join(["(?, ?)"] * len(wanted))
    rows = cur.execute(
        f"""SELECT s.project, s.run, key, kind, count, first_step, last_step, first_ns, last_ns,
                   last_value, last_is_nan
            FROM series s JOIN (VALUES {pairs}) AS w(project, run) ON s.project = w.project AND s.run = w.run
            ORDER BY key, kind""",
        [name for pair in wanted for name in pair],
    ).fetchall()
    found: dict[tuple[str, str], list[MetricRecord]] = {pair: [] for pair in wanted}
    for project, run, k, kind, n, fs, ls, fn, ln, lv, nan in rows:
        found[(project, run)].append(MetricRecord(k, kind, int(n), fs or 0, ls or 0, fn or 0, ln or 0,
                                                  float("nan") if (nan or lv is None) else float(lv)))
    return [list(found[pair]) for pair in runs]


def run_starts_ns(cur: duckdb.DuckDBPyConnection, runs: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The earliest wall time of each run's series, by one statement (a run with no series yet is left out)."""
    if not runs:
        return {}
    pairs = sorted(runs)
    with scan(cur, "want_runs", {"project": np.array([p for p, _ in pairs], dtype=object),
                                 "run": np.array([r for _, r in pairs], dtype=object)}):
        rows = cur.execute("SELECT s.project, s.run, min(s.first_ns) FROM series s JOIN want_runs w "
                           "ON s.project = w.project AND s.run = w.run GROUP BY s.project, s.run").fetchall()
    return {(p, r): int(ns) for p, r, ns in rows if ns is not None}
