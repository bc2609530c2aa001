"""A DuckDB store holding 10,000 runs or a run of 10,000 keys, made in seconds,
for the page's fleet tests (no tests here).

The store's write path makes a run's record and each series' row with a
statement of their own (10,000 runs: minutes on these machines; the benches
write them that way, through the bridge's ingest). A page test is about the
page, so its rows go into the store's own tables with one ``INSERT … SELECT``
from DuckDB's ``range``: the same rows, with the run records' metadata in the
store's JSON (``meta_fields``), and series without points (a chart of such a
key draws nothing). Points, where a test draws them, go through
``store.write``.
"""

from __future__ import annotations

import pathlib

import duckdb

from curvestream_bridge.store import open_store

__all__ = ["T0", "LRS", "fleet_run_name", "add_runs", "add_keys"]

T0 = 1_700_000_000_000_000_000
LRS = [0.1, 0.01, 0.001]


def fleet_run_name(i: int) -> str:
    return f"run-{i:05d}"


def _schema(path: pathlib.Path) -> None:
    open_store(f"duckdb:///{path}").close()


def add_runs(path: pathlib.Path, project: str, n: int) -> None:
    """``n`` runs ``run-00000`` … : config ``lr`` = LRS[i % 3] and ``seed`` = i % 10, tag ``t{i % 5}``, group
    ``sweep-{i % 20}``, host ``gpu-{i % 8}``, started one second apart (the last newest), every seventh failed."""
    _schema(path)
    con = duckdb.connect(str(path))
    try:
        con.execute(
            """INSERT INTO runs (project, run, meta_json, state, reason, status_ns, created_ns)
               SELECT $project, printf('run-%05d', i),
                      json_object('config', json_object('lr', [0.1, 0.01, 0.001][i % 3 + 1], 'seed', i % 10),
                                  'tags', [printf('t%d', i % 5)], 'group', printf('sweep-%d', i % 20),
                                  'started_ns', $t0 + i * 1000000000, 'host', printf('gpu-%d', i % 8),
                                  'pid', 1, 'git_commit', '', 'git_dirty', false, 'python_version', '3.11',
                                  'frameworks', json_object(), 'data_version', '', 'client_version', '0.1.0')::VARCHAR,
                      CASE WHEN i % 7 = 0 THEN 'failed' ELSE 'finished' END, '', $t0 + i * 1000000000 + 1,
                      $t0 + i * 1000000000
               FROM range($n) t(i)""", {"project": project, "t0": T0, "n": n})
    finally:
        con.close()


def add_keys(path: pathlib.Path, project: str, run: str, keys: list[str]) -> None:
    """Series rows for these scalar keys of a run (those it has already are left alone), without points."""
    _schema(path)
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE TEMP TABLE new_keys AS SELECT unnest($keys::VARCHAR[]) AS key", {"keys": keys})
        con.execute(
            """INSERT INTO series (sid, project, run, key, kind)
               SELECT (SELECT coalesce(max(sid), 0) FROM series) + row_number() OVER (ORDER BY n.key), $p, $r, n.key,
                      'scalar'
               FROM new_keys n
               WHERE NOT EXISTS (SELECT 1 FROM series s WHERE s.project = $p AND s.run = $r AND s.key = n.key)""",
            {"p": project, "r": run})
        con.execute("INSERT INTO runs (project, run, created_ns) VALUES ($p, $r, $t0) ON CONFLICT DO NOTHING",
                    {"p": project, "r": run, "t0": T0})
    finally:
        con.close()
