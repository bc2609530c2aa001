"""The (producer, seq) of every batch stored: what makes re-sends harmless.

Table::

    batches(producer, seq, stored_ns)   -- producer: the sender's producer_id; seq: its batch number

A trainer sends a batch again until it is acknowledged, so after a lost
acknowledgement or a bridge restart the store sees batches it already holds.
A write keeps only the batches not recorded yet (:func:`fresh`) and records
them (:func:`record`) in the same transaction as their points: a batch is
stored once or not at all. :func:`stored_ranges` tells the bridge which seqs of
a producer it need not write again, and how many of a run's last batches are
still missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.store.duckdb.aggrows import scan

__all__ = ["SCHEMA", "fresh", "record", "stored_ranges", "stored_ranges_many"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (producer BLOB NOT NULL, seq UBIGINT NOT NULL, stored_ns BIGINT);
"""


def fresh(cur: duckdb.DuckDBPyConnection, batches: Sequence[DecodedBatch]) -> list[DecodedBatch]:
    """The batches not stored yet (and each once)."""
    if not batches:
        return []
    wanted = {"producer": np.array([b.producer_id for b in batches], dtype=object),
              "seq": np.array([b.seq for b in batches], dtype=np.uint64)}
    with scan(cur, "wanted", wanted):
        stored = set(cur.execute("SELECT b.producer, b.seq FROM batches b JOIN wanted w "
                                 "ON b.producer = w.producer AND b.seq = w.seq").fetchall())
    out = []
    for b in batches:
        ident = (b.producer_id, b.seq)
        if ident not in stored:
            stored.add(ident)
            out.append(b)
    return out


def record(cur: duckdb.DuckDBPyConnection, batches: Sequence[DecodedBatch], now: int) -> None:
    """The (producer, seq) of every batch written, by one statement."""
    rows = {"producer": np.array([b.producer_id for b in batches], dtype=object),
            "seq": np.array([b.seq for b in batches], dtype=np.uint64),
            "stored_ns": np.full(len(batches), now, np.int64)}
    with scan(cur, "new_batches", rows):
        cur.execute("INSERT INTO batches SELECT producer, seq, stored_ns FROM new_batches")


def stored_ranges(cur: duckdb.DuckDBPyConnection, producer_id: bytes) -> list[tuple[int, int]]:
    """The producer's stored seqs as inclusive ranges of consecutive seqs, in order."""
    rows = cur.execute(
        """SELECT min(seq), max(seq) FROM (
               SELECT seq, seq - row_number() OVER (ORDER BY seq) AS grp FROM batches WHERE producer = ?)
           GROUP BY grp ORDER BY 1""",
        [producer_id],
    ).fetchall()
    return [(int(a), int(b)) for a, b in rows]


def stored_ranges_many(
    cur: duckdb.DuckDBPyConnection, producer_ids: Sequence[bytes]
) -> dict[bytes, list[tuple[int, int]]]:
    """:func:`stored_ranges` of several producers by one statement (a producer with none is left out)."""
    if not producer_ids:
        return {}
    with scan(cur, "want_producers", {"producer": np.array(list(producer_ids), dtype=object)}):
        rows = cur.execute(
            """SELECT producer, min(seq), max(seq) FROM (
                   SELECT b.producer, b.seq, b.seq - row_number() OVER (PARTITION BY b.producer ORDER BY b.seq) AS grp
                   FROM batches b JOIN want_producers w ON b.producer = w.producer)
               GROUP BY producer, grp ORDER BY 1, 2""").fetchall()
    out: dict[bytes, list[tuple[int, int]]] = {}
    for producer, first, last in rows:
        out.setdefault(bytes(producer), []).append((int(first), int(last)))
    return out
