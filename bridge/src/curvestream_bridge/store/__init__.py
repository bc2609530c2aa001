"""Store engines behind one interface (:class:`~.base.Store`)."""

from __future__ import annotations

import urllib.parse

from curvestream_bridge.store.base import Store, StoreRejected, StoreUnavailable

__all__ = ["open_store", "Store", "StoreRejected", "StoreUnavailable"]


def open_store(url: str, writer_id: str = "") -> Store:
    """``duckdb:///path/file.db``, ``duckdb://:memory:`` or ``influxdb://[user:pass@]host:port/db``.

    Query parameters: ``rollups=off`` stores raw points only (no M4 rollups;
    for comparisons and debugging); DuckDB takes ``checkpoint_mb=N``, the WAL size
    at which it checkpoints (default 128, above DuckDB's 16: a checkpoint costs in
    proportion to the whole file, so frequent ones slow a growing file's ingest),
    ``rollup_cache_mb=N``, the memory for the
    rollup rows of recently read series (default 512; 0: every read goes to
    SQL; see :mod:`.duckdb.rollcache`) and ``read_threads=N``, the threads that
    read the runs of one overlay side by side (default: the cores, at most 4);
    InfluxDB also takes ``writer=<id>`` (see
    :mod:`.influx.rollup`), which overrides ``writer_id``: what names this
    bridge's rollup rows among those of other bridges writing the same database."""
    parsed = urllib.parse.urlsplit(url)
    params = dict(urllib.parse.parse_qsl(parsed.query))
    rollups = _flag(params.get("rollups", "on"), "rollups")
    if parsed.scheme == "duckdb":
        from curvestream_bridge.store.duckdb import DuckDBStore
        from curvestream_bridge.store.duckdb.store import READ_THREADS

        path = ":memory:" if parsed.netloc == ":memory:" else urllib.parse.unquote(parsed.path)
        if parsed.netloc and parsed.netloc != ":memory:":  # duckdb://relative/path
            path = parsed.netloc + path
        return DuckDBStore(path, rollups=rollups,
                           checkpoint_mb=_number(params, "checkpoint_mb", 128, 1, "megabytes"),
                           rollup_cache_mb=_number(params, "rollup_cache_mb", 512, 0, "megabytes"),
                           read_threads=_number(params, "read_threads", READ_THREADS, 1, "threads"))
    if parsed.scheme in ("influxdb", "influxdbs"):
        from curvestream_bridge.store.influx import InfluxStore

        return InfluxStore(url, writer_id=writer_id)
    raise ValueError(f"unknown store {url!r}: use duckdb:///path/file.db or influxdb://host:8086/db")


def _number(params: dict[str, str], name: str, default: int, least: int, unit: str) -> int:
    try:
        value = int(params.get(name, str(default)))
        if value < least:
            raise ValueError
    except ValueError:
        raise ValueError(f"store URL parameter {name}={params[name]!r}: a number of {unit}, at least {least}") \
            from None
    return value


def _flag(value: str, name: str) -> bool:
    if value.lower() in ("on", "true", "1", "yes"):
        return True
    if value.lower() in ("off", "false", "0", "no"):
        return False
    raise ValueError(f"store URL parameter {name}={value!r}: use on or off")
