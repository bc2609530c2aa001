"""The alert engine's state in DuckDB: a write DuckDB refuses surfaces as
StoreUnavailable (the round is not acknowledged and comes again), and the
state saved before it is intact; a read of it on an invalidated database is
StoreUnavailable too (the alert engine waits and reads again)."""

from __future__ import annotations

import duckdb
import pytest
from test_store_support import duckdb_store

from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.duckdb import alertstate


def test_a_refused_alert_state_write_is_store_unavailable_and_keeps_the_state_before(tmp_path):
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        store.save_alert_state({"a": "1"}, [])
        with pytest.raises(StoreUnavailable):
            store.save_alert_state({"a": "2", "b": None}, [])  # NOT NULL: the whole write is refused
        assert store.load_alert_state() == {"a": "1"}
    finally:
        store.close()


def test_reading_the_alert_state_of_an_invalidated_database_is_store_unavailable(tmp_path, monkeypatch):
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        store.save_alert_state({"a": "1"}, [])

        def invalidated(cur):
            raise duckdb.FatalException("FATAL Error: database has been invalidated because of a previous fatal error")

        monkeypatch.setattr(alertstate, "load", invalidated)
        with pytest.raises(StoreUnavailable):
            store.load_alert_state()
    finally:
        store.close()


def test_alert_transitions_are_appended_once_per_id_and_version_with_their_fields(tmp_path):
    store = duckdb_store(tmp_path / "s.duckdb")

    def alert(i: int, version: int) -> dict:
        return {"id": f"a{i}", "version": version, "project": "p", "run": f"r{i}", "key": "loss", "rule": "plateau",
                "kind": "plateau", "state": "firing" if version % 2 else "resolved", "step": 1000 + i,
                "time_ms": 1.5e12 + i, "time_ns": 0 if i == 0 else 1_500_000_000_000_000_000 + i, "message": f"m{i}"}

    try:
        store.save_alert_state({}, [alert(i, 1) for i in range(300)] + [alert(7, 1), alert(7, 2)])
        store.save_alert_state({}, [alert(7, 2), alert(8, 2)])  # (a7, 2) again: kept once
        rows = store._cursor().execute("SELECT id, version, project, run, key, rule, kind, state, step, time_ns, "
                                       "message FROM alert_events ORDER BY id, version").fetchall()
        assert len(rows) == 302
        assert ("a0", 1, "p", "r0", "loss", "plateau", "plateau", "firing", 1000,
                1_500_000_000_000_000_000, "m0") in rows
        assert ("a7", 2, "p", "r7", "loss", "plateau", "plateau", "resolved", 1007,
                1_500_000_000_000_000_007, "m7") in rows
    finally:
        store.close()
