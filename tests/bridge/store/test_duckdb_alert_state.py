"""The alert engine's state in DuckDB: a write DuckDB refuses surfaces as
StoreUnavailable (the round is not acknowledged and comes again), and the
state saved before it is intact; a read of it on an invalidated database is
StoreUnavailable too (the alert engine waits and reads again)."""

from __future__ import annotations

import duckdb
import pytest

from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.duckdb import alertstate

from test_store_support import duckdb_store


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
