"""The per-series figures (count, first and last point, step extent) and the
(producer, seq) records that one DuckDB write makes for all its series and
batches at once: each series' figures are those of all its points, whatever
order its batches arrive in, and a NaN last value stays NaN."""

from __future__ import annotations

import math

import numpy as np
from test_store_support import T0, duckdb_store

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.decode import DecodedBatch, ScalarColumn


def batch(seq: int, key_points: dict[str, list[tuple[int, int, float]]]) -> DecodedBatch:
    cols = [ScalarColumn(key, np.array([p[0] for p in pts], np.int64), np.array([T0 + p[1] for p in pts], np.int64),
                         np.array([p[2] for p in pts], np.float64)) for key, pts in key_points.items()]
    return DecodedBatch(b"producer-1", seq, "proj", "run", cols, [], [], None, None, 0)


def test_series_figures_cover_every_batch_of_a_write_in_any_order(tmp_path):
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        store.write([batch(2, {"loss": [(20, 20, 2.0), (21, 21, math.nan)], "acc": [(5, 5, 0.5)]}),
                     batch(1, {"loss": [(30, 10, 1.0), (11, 11, 1.5)]})])  # steps regress within a batch
        store.write([batch(3, {"acc": [(1, 1, 0.1), (9, 30, 0.9)]})])
        got = {m.key: m for m in store.metrics("proj", "run")}
        loss, acc = got["loss"], got["acc"]
        assert (loss.count, loss.first_step, loss.last_step) == (4, 30, 21)
        assert (loss.first_ns, loss.last_ns) == (T0 + 10, T0 + 21)
        assert math.isnan(loss.last_value)
        assert (acc.count, acc.first_step, acc.last_step, acc.first_ns, acc.last_ns, acc.last_value) == (
            3, 1, 9, T0 + 1, T0 + 30, 0.9)
        (steps,) = store._cursor().execute("SELECT list([min_step, max_step] ORDER BY key) FROM series").fetchone()
        assert steps == [[1, 9], [11, 30]]
        assert store.stored_ranges(b"producer-1") == [(1, 3)]
        store.write([batch(3, {"acc": [(99, 99, 9.9)]})])  # stored before: changes nothing
        assert store.metrics("proj", "run")[0].count == 3
    finally:
        store.close()


def test_a_batch_carrying_its_runs_status_is_stored_whole_after_a_later_status(tmp_path):
    store = duckdb_store(tmp_path / "s.duckdb")
    try:
        for seq, updated_ns in ((1, T0 + 50), (2, T0 + 10)):  # the second status is older: it changes nothing
            b = batch(seq, {"loss": [(seq, seq, 1.0)]})
            b.status = run_pb2.RunStatus(project="proj", run="run", state=run_pb2.RUN_STATE_RUNNING,
                                         updated_ns=updated_ns)
            store.write([b])
        assert store.stored_ranges(b"producer-1") == [(1, 2)]
        assert store.metrics("proj", "run")[0].count == 2
        (run,) = store.runs()
        assert (run.state, run.updated_ns) == ("running", T0 + 50)
    finally:
        store.close()
