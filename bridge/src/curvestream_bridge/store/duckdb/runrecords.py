"""Run records in DuckDB: one row per run, for the runs list.

Table::

    runs(project, run, meta_json, state, reason, status_ns, created_ns)

A row is made by whichever comes first: the run's first series, its metadata
or its status. ``created_ns`` is the bridge's clock at that moment: it orders
the runs list (newest first) and stands for the run's start when its metadata
names none. ``meta_json`` is the last RunMeta received, whole
(:func:`..base.meta_fields`). A status comes both inside batches and on its
own topic (the retained status, the Last Will), so an older one may arrive
after a newer: it is applied only when its ``updated_ns`` is not older than
the stored ``status_ns``. Everything is written on the caller's cursor, in
its transaction if it has one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import duckdb
import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.store.base import RunRecord, meta_fields, record_from_meta, state_name
from curvestream_bridge.store.duckdb.aggrows import scan

__all__ = ["SCHEMA", "seen_many", "apply_meta", "apply_metas", "apply_status", "apply_statuses", "runs"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (project VARCHAR NOT NULL, run VARCHAR NOT NULL, meta_json VARCHAR,
    state VARCHAR, reason VARCHAR, status_ns BIGINT, created_ns BIGINT, PRIMARY KEY (project, run));
"""


def seen_many(cur: duckdb.DuckDBPyConnection, runs: list[tuple[str, str]]) -> None:
    """These runs (each once) have a new series: their rows made where they have none yet, by one statement."""
    if not runs:
        return
    with scan(cur, "seen_runs", _run_columns(runs)):
        cur.execute("INSERT INTO runs (project, run, created_ns) SELECT project, run, ? FROM seen_runs "
                    "ON CONFLICT DO NOTHING", [time.time_ns()])


def _run_columns(runs: list[tuple[str, str]], **more: list[object]) -> dict[str, np.ndarray]:
    cols = {
        "project": np.array([p for p, _ in runs], dtype=object),
        "run": np.array([r for _, r in runs], dtype=object),
    }
    for name, values in more.items():
        cols[name] = np.array(values, dtype=object if values and isinstance(values[0], str) else None)
    return cols


def apply_metas(cur: duckdb.DuckDBPyConnection, metas: list[run_pb2.RunMeta]) -> None:
    """:func:`apply_meta` of a write's metadata (the last of each run), by one statement."""
    if len(metas) == 1:
        apply_meta(cur, metas[0])
        return
    last = {(m.project, m.run): m for m in metas}
    if not last:
        return
    runs = list(last)
    with scan(cur, "new_meta", _run_columns(runs, meta_json=[json.dumps(meta_fields(last[r]), ensure_ascii=False)
                                                            for r in runs])):
        cur.execute("""INSERT INTO runs (project, run, meta_json, created_ns) SELECT project, run, meta_json, ?
                       FROM new_meta ON CONFLICT (project, run) DO UPDATE SET meta_json = excluded.meta_json""",
                    [time.time_ns()])


def apply_meta(cur: duckdb.DuckDBPyConnection, meta: run_pb2.RunMeta) -> None:
    cur.execute(
        """INSERT INTO runs (project, run, meta_json, created_ns) VALUES (?, ?, ?, ?)
           ON CONFLICT (project, run) DO UPDATE SET meta_json = excluded.meta_json""",
        [meta.project, meta.run, json.dumps(meta_fields(meta), ensure_ascii=False), time.time_ns()],
    )


def apply_status(cur: duckdb.DuckDBPyConnection, status: run_pb2.RunStatus) -> bool:
    """True when applied (no newer status stored)."""
    # fetchall: a result left unfinished makes DuckDB refuse the next register() on this cursor
    rows = cur.execute("SELECT status_ns FROM runs WHERE project = ? AND run = ?",
                       [status.project, status.run]).fetchall()
    row = rows[0] if rows else None
    if row is not None and row[0] is not None and row[0] > status.updated_ns:
        return False
    cur.execute(
        """INSERT INTO runs (project, run, state, reason, status_ns, created_ns) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (project, run) DO UPDATE SET state = excluded.state, reason = excluded.reason,
           status_ns = excluded.status_ns""",
        [status.project, status.run, state_name(status.state), status.reason, status.updated_ns, time.time_ns()],
    )
    return True


def apply_statuses(cur: duckdb.DuckDBPyConnection, statuses: list[run_pb2.RunStatus]) -> None:
    """:func:`apply_status` of a write's statuses (the newest of each run), by two statements."""
    if len(statuses) == 1:
        apply_status(cur, statuses[0])
        return
    newest: dict[tuple[str, str], run_pb2.RunStatus] = {}
    for st in statuses:
        known = newest.get((st.project, st.run))
        if known is None or known.updated_ns <= st.updated_ns:
            newest[(st.project, st.run)] = st
    if not newest:
        return
    runs = list(newest)
    with scan(cur, "status_runs", _run_columns(runs)):
        stored = {(p, r): ns for p, r, ns in cur.execute(
            "SELECT r.project, r.run, r.status_ns FROM runs r JOIN status_runs s USING (project, run)").fetchall()}
    runs = [r for r in runs if stored.get(r) is None or stored[r] <= newest[r].updated_ns]
    if not runs:
        return
    statuses = [newest[r] for r in runs]
    cols = _run_columns(runs, state=[state_name(s.state) for s in statuses], reason=[s.reason or "" for s in statuses])
    cols["status_ns"] = np.array([s.updated_ns for s in statuses], np.int64)
    with scan(cur, "new_status", cols):
        cur.execute("""INSERT INTO runs (project, run, state, reason, status_ns, created_ns)
                       SELECT project, run, state, reason, status_ns, ? FROM new_status
                       ON CONFLICT (project, run) DO UPDATE SET state = excluded.state, reason = excluded.reason,
                       status_ns = excluded.status_ns""", [time.time_ns()])


def runs(cur: duckdb.DuckDBPyConnection, refs: Sequence[tuple[str, str]] | None = None) -> list[RunRecord]:
    """Every run (or those of ``refs`` that are stored), newest first, with its count of scalar points
    (from the series' stats)."""
    select = """SELECT r.project, r.run, r.meta_json, r.state, r.reason, r.status_ns, r.created_ns,
                  coalesce((SELECT sum(count) FROM series s WHERE s.project = r.project AND s.run = r.run
                            AND s.kind = 'scalar'), 0)
           FROM runs r {where} ORDER BY coalesce(r.created_ns, 0) DESC, r.project, r.run"""
    if refs is None:
        rows = cur.execute(select.format(where="")).fetchall()
    elif not refs:
        return []
    else:
        with scan(cur, "wanted_runs", _run_columns(list(dict.fromkeys(refs)))):
            rows = cur.execute(select.format(
                where="WHERE (r.project, r.run) IN (SELECT (project, run) FROM wanted_runs)")).fetchall()
    out = []
    for project, run, meta_json, state, reason, status_ns, created_ns, points in rows:
        rec = record_from_meta(project, run, json.loads(meta_json) if meta_json else None)
        rec.state = state or "unknown"
        rec.reason = reason or ""
        rec.updated_ns = status_ns or 0
        rec.started_ns = rec.started_ns or (created_ns or 0)
        rec.points = int(points)
        out.append(rec)
    return out
