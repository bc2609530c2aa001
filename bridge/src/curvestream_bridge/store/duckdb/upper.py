"""The upper rollup levels (1 .. 7) in DuckDB: appended as partial rows, merged
in bulk now and then.

Tables (``<axis>`` is ``step`` or ``time``)::

    m4_<axis>(sid, k, b, <aggregate>)    -- merged: one row per bucket (primary key sid, k, b)
    m4p_<axis>(sid, k, b, <aggregate>)   -- partial: one row per write and bucket, no index

A write appends its partial rows with a plain ``INSERT``: merging them into
``m4_`` row by row (``INSERT .. ON CONFLICT DO UPDATE``) cost a fixed ~10 ms a
statement, the largest part of a small write. Readers take the rows of both
tables (:func:`upper_rows`) and merge the partial rows of a bucket as they
merge any (:func:`..m4.query.assemble`). Every :data:`MERGE_WRITES` writes, or
once :data:`MERGE_ROWS` partial rows wait, the write that reaches the mark
also merges them all into ``m4_`` and empties ``m4p_`` (:func:`merge_partials`),
so a bucket has at most ``MERGE_WRITES`` partial rows and a query reads
O(width) rows whatever the length of the series. Everything happens in the
write's transaction: a crash loses nothing and doubles nothing; the first write
after the store opens merges what a killed process left, and a clean close
merges them too (the store's ``close()``).
"""

from __future__ import annotations

import duckdb
import numpy as np

from curvestream_bridge.store.duckdb.aggrows import AGG_COLS, AGG_NAMES, agg_columns, agg_from, ints, scan
from curvestream_bridge.store.m4.agg import M4Agg, merge
from curvestream_bridge.store.m4.levels import AXES

__all__ = ["SCHEMA", "MERGE_WRITES", "MERGE_ROWS", "UpperRows", "upper_rows"]

MERGE_WRITES = 64
"""Writes between two merges of the partial rows (the most partial rows a bucket can have)."""
MERGE_ROWS = 100_000
"""Partial rows (of one axis) that make the next write merge them, however few writes made them."""

SCHEMA = "\n".join(
    [f"CREATE TABLE IF NOT EXISTS m4_{a} (sid INTEGER NOT NULL, k TINYINT NOT NULL, b BIGINT NOT NULL, "
     f"{AGG_COLS}, PRIMARY KEY (sid, k, b));" for a in AXES]
    + [f"CREATE TABLE IF NOT EXISTS m4p_{a} (sid INTEGER NOT NULL, k TINYINT NOT NULL, b BIGINT NOT NULL, "
       f"{AGG_COLS});" for a in AXES]
)


def upper_rows(axis: str) -> str:
    """A table expression for the rows of the upper levels, merged and partial
    (filters on sid, k and b reach both tables)."""
    cols = ", ".join(("sid", "k", "b", *AGG_NAMES))
    return f"(SELECT {cols} FROM m4_{axis} UNION ALL SELECT {cols} FROM m4p_{axis})"


def _upsert_sql(axis: str) -> str:
    """Merge a row into the stored one, with the tie rules of .m4agg.merge."""
    x = "s" if axis == "step" else "w"

    def key(p: str, t: str, with_value: bool = False) -> str:
        parts = ([f"{t}.{p}_v"] if with_value else []) + [f"{t}.{p}_{x}", f"{t}.{p}_w"]
        return "(" + ", ".join(parts) + ")"

    wins = {
        "f": f"{key('f', 'excluded')} < {key('f', 't')}",
        "l": f"{key('l', 'excluded')} > {key('l', 't')}",
        "mn": f"excluded.has_mn AND (NOT t.has_mn OR {key('mn', 'excluded', True)} < {key('mn', 't', True)})",
        "mx": f"excluded.has_mx AND (NOT t.has_mx OR {key('mx', 'excluded', True)} > {key('mx', 't', True)})",
        "nan": f"excluded.has_nan AND (NOT t.has_nan OR {key('nan', 'excluded')} < {key('nan', 't')})",
    }
    sets = ["n = t.n + excluded.n"]
    for prefix, cond in wins.items():
        cols = [f"{prefix}_s", f"{prefix}_w"] + ([] if prefix == "nan" else [f"{prefix}_v"])
        sets += [f"{c} = CASE WHEN {cond} THEN excluded.{c} ELSE t.{c} END" for c in cols]
    sets += ["has_mn = t.has_mn OR excluded.has_mn", "has_mx = t.has_mx OR excluded.has_mx",
             "has_nan = t.has_nan OR excluded.has_nan"]
    return (f"INSERT INTO m4_{axis} AS t SELECT sid, k, b, {', '.join(AGG_NAMES)} FROM merged "
            f"ON CONFLICT (sid, k, b) DO UPDATE SET {', '.join(sets)}")


_UPSERT = {a: _upsert_sql(a) for a in AXES}


class UpperRows:
    """Appends the partial rows of each write and decides when they are merged.
    The counts it keeps are those of committed writes: ``commit()`` after
    COMMIT, ``reload()`` after a ROLLBACK or when the store opens."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[int, int]] = dict.fromkeys(AXES, (0, 0))  # (writes, rows) since the last merge
        self._pending = dict(self._waiting)

    def reload(self, cur: duckdb.DuckDBPyConnection) -> None:
        for axis in AXES:
            rows = int(cur.execute(f"SELECT count(*) FROM m4p_{axis}").fetchall()[0][0])
            self._waiting[axis] = (MERGE_WRITES if rows else 0, rows)  # left by an earlier process: merge soon
        self._pending = dict(self._waiting)

    def commit(self) -> None:
        self._waiting = dict(self._pending)

    def append(self, cur: duckdb.DuckDBPyConnection, axis: str,
               parts: list[tuple[np.ndarray, int, np.ndarray, M4Agg]]) -> None:
        """Insert ``(sids, k, buckets, aggregates)`` as partial rows; merge all of them when it is time."""
        if not parts:
            return
        new_rows = {"sid": np.concatenate([p[0] for p in parts]).astype(np.int32),
                    "k": np.concatenate([np.full(len(p[2]), p[1], np.int8) for p in parts]),
                    "b": np.concatenate([p[2] for p in parts]), **agg_columns(M4Agg.concat([p[3] for p in parts]))}
        with scan(cur, "new_rows", new_rows):
            cur.execute(f"INSERT INTO m4p_{axis} SELECT sid, k, b, {', '.join(AGG_NAMES)} FROM new_rows")
        writes, rows = self._pending[axis]
        writes, rows = writes + 1, rows + len(new_rows["b"])
        if writes >= MERGE_WRITES or rows >= MERGE_ROWS:
            merge_partials(cur, axis)
            writes = rows = 0
        self._pending[axis] = (writes, rows)


def merge_partials(cur: duckdb.DuckDBPyConnection, axis: str) -> None:
    """Merge every partial row of an axis into ``m4_<axis>`` and empty ``m4p_<axis>``."""
    got = cur.execute(f"SELECT sid, k, b, {', '.join(AGG_NAMES)} FROM m4p_{axis}").fetchnumpy()
    if len(got["b"]) == 0:
        return
    sid, k, b = ints(got["sid"]), ints(got["k"]), ints(got["b"])
    order = np.lexsort((b, k, sid))  # the buckets in (sid, k, b) order, by one sort of three int columns
    ss, ks, bs = sid[order], k[order], b[order]
    first = np.concatenate(([True], (ss[1:] != ss[:-1]) | (ks[1:] != ks[:-1]) | (bs[1:] != bs[:-1])))
    group = np.empty(len(order), np.int64)
    group[order] = np.cumsum(first) - 1
    agg = merge(agg_from(got), group, int(first.sum()), axis)
    merged: dict[str, np.ndarray] = {"sid": ss[first].astype(np.int32), "k": ks[first].astype(np.int8), "b": bs[first],
                                     **agg_columns(agg)}
    with scan(cur, "merged", merged):
        cur.execute(_UPSERT[axis])
    cur.execute(f"DELETE FROM m4p_{axis}")
