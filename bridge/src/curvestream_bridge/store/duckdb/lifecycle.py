"""Run edits and deletions in DuckDB (see :mod:`..lifecycle`).

Tables::

    run_edits(project, run, edits_json)        -- name, tags, notes set after the fact
    deleted_runs(project, run, deleted_ns)     -- what the bridge drops when it arrives again

A deletion is one transaction over every table that holds the run (its
series' chunks, rollups, histograms and texts, the series, the run record, its
edits, its alert transitions and the alert engine's entries about it); the
store's in-memory view (series ids, rollup plans, partial rows, the rollup
cache) is then read again from the file, as after a rolled-back write.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from curvestream_bridge.store.duckdb.file import mapped
from curvestream_bridge.store.lifecycle import RunEdits
from curvestream_bridge.store.m4.levels import AXES

if TYPE_CHECKING:
    from curvestream_bridge.store.duckdb.points import PointWriter
    from curvestream_bridge.store.duckdb.rollcache import RollupCache

__all__ = ["SCHEMA", "DuckDBLifecycle", "edits"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS run_edits (project VARCHAR NOT NULL, run VARCHAR NOT NULL, edits_json VARCHAR NOT NULL,
    PRIMARY KEY (project, run));
CREATE TABLE IF NOT EXISTS deleted_runs (project VARCHAR NOT NULL, run VARCHAR NOT NULL, deleted_ns BIGINT,
    PRIMARY KEY (project, run));
"""

_BY_SID = ("chunks", "histograms", "texts", *(f"{t}_{a}" for a in AXES for t in ("m4b", "m4", "m4p")))
"""The tables whose rows belong to a series (by ``sid``)."""


def edits(cur: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], dict[str, Any]]:
    rows = cur.execute("SELECT project, run, edits_json FROM run_edits").fetchall()
    return {(p, r): json.loads(e) for p, r, e in rows}


def _known(cur: duckdb.DuckDBPyConnection, project: str, run: str) -> bool:
    return bool(cur.execute("SELECT count(*) FROM runs WHERE project = ? AND run = ?", [project, run]).fetchall()[0][0]
                or cur.execute("SELECT count(*) FROM series WHERE project = ? AND run = ?",
                               [project, run]).fetchall()[0][0])


class DuckDBLifecycle:
    """The :class:`~..lifecycle.RunLifecycle` methods of :class:`~.store.DuckDBStore`."""

    if TYPE_CHECKING:  # the store's parts these methods use
        _write_lock: threading.Lock
        _points: PointWriter
        rollup_cache: RollupCache

        def _cursor(self) -> duckdb.DuckDBPyConnection: ...
        def _abandon(self, cur: duckdb.DuckDBPyConnection, exc: BaseException) -> None: ...
        def _reload_sids(self, cur: duckdb.DuckDBPyConnection) -> None: ...

    @mapped
    def edit_run(self, project: str, run: str, change: RunEdits) -> bool:
        with self._write_lock:
            cur = self._cursor()
            if not _known(cur, project, run):
                return False
            earlier = edits(cur).get((project, run), {})
            cur.execute("INSERT OR REPLACE INTO run_edits VALUES (?, ?, ?)",
                        [project, run, json.dumps(change.over(earlier), ensure_ascii=False)])
            return True

    @mapped
    def delete_run(self, project: str, run: str, alert_entries: Sequence[str] = ()) -> bool:
        with self._write_lock:
            cur = self._cursor()
            if not _known(cur, project, run):
                return False
            try:
                cur.execute("BEGIN TRANSACTION")
                sids = [row[0] for row in cur.execute("SELECT sid FROM series WHERE project = ? AND run = ?",
                                                      [project, run]).fetchall()]
                if sids:
                    for table in _BY_SID:
                        cur.execute(f"DELETE FROM {table} WHERE sid IN (SELECT unnest(?))", [sids])
                for table in ("series", "runs", "run_edits", "alert_events"):
                    cur.execute(f"DELETE FROM {table} WHERE project = ? AND run = ?", [project, run])
                if alert_entries:
                    cur.execute("DELETE FROM alert_state WHERE name IN (SELECT unnest(?))", [list(alert_entries)])
                cur.execute("INSERT OR REPLACE INTO deleted_runs VALUES (?, ?, ?)", [project, run, time.time_ns()])
                cur.execute("COMMIT")
            except BaseException as exc:
                self._abandon(cur, exc)
                raise
            self._reload_sids(cur)
            self._points.reload(cur)
            self.rollup_cache.clear()
            return True

    @mapped
    def deleted_runs(self) -> set[tuple[str, str]]:
        return {(p, r) for p, r in self._cursor().execute("SELECT project, run FROM deleted_runs").fetchall()}
