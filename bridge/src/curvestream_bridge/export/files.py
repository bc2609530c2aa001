"""A run's points as one Parquet or CSV file, written by DuckDB.

Points go page by page into a table of an in-memory DuckDB database (the
bridge depends on DuckDB for either store engine) that spills what exceeds
``MEMORY_MB`` to a temporary directory, so memory stays bounded whatever the
series' length; then DuckDB's ``COPY`` writes the file there, which is sent in
pieces and removed with the directory. (An in-memory table fills with about
half the CPU of a DuckDB file: bench/README.md, ``history_read.py``.)

Columns: ``key`` (VARCHAR; dictionary-encoded in Parquet), ``step`` and
``time_ns`` (BIGINT, the stored integers: nanoseconds since the epoch) and
``value`` (DOUBLE, NaN and ±Inf as they are; CSV spells them ``nan``,
``inf``, ``-inf``, every other value with the shortest text that reads back
to the same double). Rows are in the order asked: key by key, each in wall-time
order.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator

import duckdb
import numpy as np

from curvestream_bridge.store.base import PointColumns

__all__ = ["FORMATS", "write_file"]

FORMATS = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8"}
PIECE_BYTES = 1 << 20
MEMORY_MB = 256


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def write_file(keys: Iterable[str], points_of: Callable[[str], Iterator[PointColumns]], fmt: str,
               directory: str | None = None) -> Iterator[bytes]:
    """The file's bytes, piece by piece (a generator: the temporary directory
    goes once it is exhausted or closed)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    with tempfile.TemporaryDirectory(prefix="curvestream-export-", dir=directory) as tmp:
        path = os.path.join(tmp, f"points.{fmt}")
        con = duckdb.connect(":memory:")
        try:
            con.execute(f"SET temp_directory = '{_quoted(tmp)}'")  # what exceeds the limit goes there
            con.execute(f"SET memory_limit = '{MEMORY_MB}MB'")
            con.execute("CREATE TABLE points (key VARCHAR, step BIGINT, time_ns BIGINT, value DOUBLE)")
            for key in keys:
                for page in points_of(key):
                    # a NaN in a scanned numpy column arrives as NULL: named apart and made NaN again
                    con.register("page", {"step": page.step, "time_ns": page.wall_ns, "value": page.value,
                                          "nan": np.isnan(page.value)})
                    try:
                        con.execute("INSERT INTO points SELECT ?, step, time_ns, "
                                    "CASE WHEN nan THEN 'NaN'::DOUBLE ELSE value END FROM page", [key])
                    finally:
                        con.unregister("page")
            options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
            con.execute(f"COPY points TO '{_quoted(path)}' ({options})")
        finally:
            con.close()
        with open(path, "rb") as fh:
            while piece := fh.read(PIECE_BYTES):
                yield piece
