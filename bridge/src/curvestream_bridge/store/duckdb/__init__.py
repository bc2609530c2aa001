"""Embedded DuckDB: the store for one machine with no servers (:mod:`.store`),
its raw-point chunks (:mod:`.chunks`), their rollups (:mod:`.points`) and the
database file, its errors mapped and reopened after DuckDB invalidated it
(:mod:`.file`)."""

from curvestream_bridge.store.duckdb.store import DuckDBStore

__all__ = ["DuckDBStore"]
