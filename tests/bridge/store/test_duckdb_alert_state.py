"""The alert engine's state in DuckDB: a write DuckDB refuses surfaces as
StoreUnavailable (the round is not acknowledged and comes again), and the
state saved before it is intact."""

from __future__ import annotations

import pytest

from curvestream_bridge.store.base import StoreUnavailable

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
