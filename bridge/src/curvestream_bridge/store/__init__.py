"""Store engines behind one interface (:class:`~.base.Store`)."""

from __future__ import annotations

import urllib.parse

from curvestream_bridge.store.base import Store, StoreUnavailable

__all__ = ["open_store", "Store", "StoreUnavailable"]


def open_store(url: str) -> Store:
    """``duckdb:///path/file.db``, ``duckdb://:memory:`` or ``influxdb://[user:pass@]host:port/db``."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "duckdb":
        from curvestream_bridge.store.duckdb_store import DuckDBStore

        path = ":memory:" if parsed.netloc == ":memory:" else urllib.parse.unquote(parsed.path)
        if parsed.netloc and parsed.netloc != ":memory:":  # duckdb://relative/path
            path = parsed.netloc + path
        return DuckDBStore(path)
    if parsed.scheme in ("influxdb", "influxdbs"):
        from curvestream_bridge.store.influx import InfluxStore

        return InfluxStore(url)
    raise ValueError(f"unknown store {url!r}: use duckdb:///path/file.db or influxdb://host:8086/db")
