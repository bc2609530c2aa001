"""The alert engine's state in DuckDB (see :mod:`curvestream_bridge.alerts`).

Tables::

    alert_state(name, body)        -- one entry per name, JSON text: replaced by each save
    alert_events(id, version, project, run, key, rule, kind, state, step, time_ns, message)

The engine keeps its state (per series the last step consumed, its detectors'
numbers, which alert versions each sink has been sent) as named entries and
saves the changed ones, with the alert transitions that came of them, before
a round's commit goes out: a batch evaluated twice then changes nothing, and
one stored but not evaluated when the bridge died is evaluated when it is
re-sent. The transitions are appended once per (id, version) and never read
back by the bridge: a record of what fired and resolved. Both are written on
the caller's cursor, in its transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np

from curvestream_bridge.store.duckdb.aggrows import scan

__all__ = ["SCHEMA", "load", "save"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS alert_state (name VARCHAR PRIMARY KEY, body VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS alert_events (id VARCHAR NOT NULL, version INTEGER NOT NULL, project VARCHAR, run VARCHAR,
    key VARCHAR, rule VARCHAR, kind VARCHAR, state VARCHAR, step BIGINT, time_ns BIGINT, message VARCHAR,
    PRIMARY KEY (id, version));
"""


_EVENT_COLUMNS = ("id", "version", "project", "run", "key", "rule", "kind", "state", "step", "time_ns", "message")


def load(cur: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(cur.execute("SELECT name, body FROM alert_state").fetchall())


def save(cur: duckdb.DuckDBPyConnection, entries: dict[str, str], alerts: Sequence[dict[str, Any]]) -> None:
    """Upsert state entries and append alert transitions (JSON objects of ``GET /api/v1/alerts``)."""
    if entries:  # one statement for all (row by row, 200 series cost more than their points)
        columns = {"name": np.array(list(entries), dtype=object),
                   "body": np.array(list(entries.values()), dtype=object)}
        with scan(cur, "alert_state_in", columns):
            cur.execute("INSERT OR REPLACE INTO alert_state SELECT name, body FROM alert_state_in")
    if alerts:  # one statement too: a fleet's alerts change together (executemany is a statement a row)
        rows = [(a["id"], a["version"], a["project"], a["run"], a["key"], a["rule"], a["kind"], a["state"],
                 a["step"], a.get("time_ns") or round(a["time_ms"]) * 1_000_000, a["message"]) for a in alerts]
        columns = {name: np.array([r[i] for r in rows], dtype=object) for i, name in enumerate(_EVENT_COLUMNS)}
        with scan(cur, "alert_events_in", columns):
            cur.execute(f"INSERT OR IGNORE INTO alert_events SELECT {', '.join(_EVENT_COLUMNS)} FROM alert_events_in")
