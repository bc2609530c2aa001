"""Embedded DuckDB: the store for one machine with no servers (:mod:`.store`),
its raw-point chunks (:mod:`.chunks`), their rollups (:mod:`.points`), the
per-series figures (:mod:`.seriesstats`), the run records (:mod:`.runrecords`),
the (producer, seq) records that make re-sends harmless (:mod:`.batchlog`), the
alert engine's state (:mod:`.alertstate`) and the database file, its errors
mapped and reopened after DuckDB invalidated it (:mod:`.file`)."""

from curvestream_bridge.store.duckdb.store import DuckDBStore

__all__ = ["DuckDBStore"]
