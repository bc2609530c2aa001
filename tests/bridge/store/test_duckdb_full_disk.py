"""DuckDB on a disk that fills up: the store answers StoreUnavailable (so the
bridge acknowledges nothing), never a rejection, and writes again once space
returns, without a restart, even after DuckDB invalidated the database."""

from __future__ import annotations

import numpy as np
import pytest

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.base import SeriesQuery, StoreUnavailable
from curvestream_bridge.store.duckdb import DuckDBStore

PID = b"\x01" * 16


def decoded(seq: int, n: int = 20_000) -> DecodedBatch:
    steps = np.arange(seq * n, seq * n + n, dtype=np.int64)
    column = ScalarColumn("loss", steps, 10**18 + steps, steps.astype(np.float64))
    return DecodedBatch(PID, seq, "p", "r", [column], [], [], None, None, 0)


def write_until_full(store: DuckDBStore, first_seq: int, limit: int = 400) -> tuple[int, list[str]]:
    """Write batches until the disk refuses; then a few more tries. Returns the first
    seq not stored and what the store said."""
    errors: list[str] = []
    seq = first_seq
    while seq < first_seq + limit and len(errors) < 4:
        try:
            store.write([decoded(seq)])
            seq += 1
        except StoreUnavailable as exc:
            errors.append(str(exc))
    return seq, errors


@pytest.mark.parametrize("leave_mb", [0, 12], ids=["the WAL cannot grow", "a checkpoint cannot be written"])
def test_a_full_disk_makes_duckdb_writes_wait_and_they_resume_once_space_returns(small_disk, leave_mb):
    # checkpoints at DuckDB's own 16 MB of WAL: with 12 MB left, the checkpoint is what fails
    store = DuckDBStore(str(small_disk.path / "s.duckdb"), checkpoint_mb=16)
    try:
        seq, errors = write_until_full(store, 1, limit=10)
        assert errors == [] and seq == 11
        small_disk.fill(leave_bytes=leave_mb << 20)
        seq, errors = write_until_full(store, seq)
        assert errors, "the disk filled up"
        if leave_mb:
            assert any("invalidated" in e for e in errors), errors
        stored_before = seq - 1
        for read in (store.runs, lambda: store.stored_ranges(PID)):
            try:
                read()
            except StoreUnavailable:
                pass  # a read may wait too; never a DuckDB error of its own
        small_disk.free()
        store.write([decoded(seq)])
        store.write([decoded(seq + 1)])
        assert store.stored_ranges(PID) == [(1, stored_before + 2)]
        assert store.series(SeriesQuery("p", "r", "loss", width=10**7)).total == (stored_before + 2) * 20_000
        assert store.ping()
    finally:
        store.close()
    reopened = DuckDBStore(str(small_disk.path / "s.duckdb"))
    assert reopened.stored_ranges(PID) == [(1, stored_before + 2)], "nothing lost on disk either"
    reopened.close()
