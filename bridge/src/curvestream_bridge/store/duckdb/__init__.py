"""Embedded DuckDB: the store for one machine with no servers (:mod:`.store`),
its raw-point chunks (:mod:`.chunks`) and their rollups (:mod:`.points`)."""

from curvestream_bridge.store.duckdb.store import DuckDBStore

__all__ = ["DuckDBStore"]
