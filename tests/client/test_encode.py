"""The batch builder: queued log() calls become one columnar protobuf batch."""

from __future__ import annotations

import itertools
import math

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream.buckets import Buckets
from curvestream.encode import WIRE_VERSION, BatchBuilder
from curvestream.values import HistogramItem, TextItem

PID = bytes(range(16))


def _builder(first_seq: int = 1, sealed_ns: int = 42) -> BatchBuilder:
    counter = itertools.count(first_seq)
    return BatchBuilder(PID, "proj", "run / ü", lambda: next(counter), lambda: sealed_ns)


def _sealed(builder: BatchBuilder) -> batch_pb2.Batch:
    _, payload, _ = builder.seal()
    return batch_pb2.Batch.FromString(payload)


def _columns(batch: batch_pb2.Batch) -> dict[str, tuple[list[int], list[int], list[float]]]:
    return {s.key: (list(s.steps), list(s.wall_ns), list(s.values)) for s in batch.scalars}


def test_points_are_grouped_by_key_into_parallel_columns_in_the_order_keys_first_appear():
    builder = _builder()
    builder.add((0, 100, {"loss": 1.0, "acc": 0.1}))
    builder.add((1, 200, {"loss": 0.5}))
    builder.add((2, 300, {"acc": 0.3, "lr/group 0": 1e-3}))
    batch = _sealed(builder)
    assert [s.key for s in batch.scalars] == ["loss", "acc", "lr/group 0"]
    assert _columns(batch) == {
        "loss": ([0, 1], [100, 200], [1.0, 0.5]),
        "acc": ([0, 2], [100, 300], [0.1, 0.3]),
        "lr/group 0": ([2], [300], [1e-3]),
    }


def test_rows_that_log_the_same_keys_in_any_order_make_the_same_columns():
    builder = _builder()
    builder.add((0, 100, {"loss": 1.0, "acc": 0.1}))
    builder.add((1, 200, {"acc": 0.2, "loss": float("nan")}))
    builder.add((1, 150, {"loss": 0.5, "acc": 0.3}))  # a wall time not after the last one is moved past it
    batch = _sealed(builder)
    assert [s.key for s in batch.scalars] == ["loss", "acc"]
    got = _columns(batch)
    assert got["acc"] == ([0, 1, 1], [100, 200, 201], [0.1, 0.2, 0.3])
    assert got["loss"][:2] == ([0, 1, 1], [100, 200, 201])
    assert got["loss"][2][0] == 1.0 and math.isnan(got["loss"][2][1]) and got["loss"][2][2] == 0.5


def test_the_batch_carries_version_producer_run_and_the_seal_time():
    builder = _builder(sealed_ns=123_456)
    builder.add((0, 1, {"x": 1.0}))
    batch = _sealed(builder)
    assert (batch.version, batch.producer_id, batch.project, batch.run, batch.sealed_ns) == (
        WIRE_VERSION, PID, "proj", "run / ü", 123_456)


def test_non_finite_values_are_kept_as_they_are():
    builder = _builder()
    builder.add((0, 1, {"x": math.nan}))
    builder.add((1, 2, {"x": math.inf}))
    builder.add((2, 3, {"x": -math.inf}))
    values = _columns(_sealed(builder))["x"][2]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf]


def test_wall_times_are_made_strictly_increasing_across_calls_items_and_batches():
    builder = _builder()
    builder.add((0, 1000, {"x": 0.0}))
    builder.add((1, 1000, {"x": 1.0}))  # the same clock reading
    builder.add((2, 900, {"x": 2.0}))  # the clock stepped back
    builder.add(HistogramItem("h", 3, 500, [1.0, 2.0], bins=2))
    builder.add(TextItem("log", 4, 0, "hello", 20))
    first = _sealed(builder)
    builder.add((5, 800, {"x": 5.0}))  # still behind, in the next batch
    second = _sealed(builder)
    assert _columns(first)["x"][1] == [1000, 1001, 1002]
    assert first.histograms[0].wall_ns == 1003
    assert first.texts[0].wall_ns == 1004
    assert _columns(second)["x"][1] == [1005]


def test_later_wall_times_are_kept_exactly():
    builder = _builder()
    builder.add((0, 10, {"x": 0.0}))
    builder.add((1, 5000, {"x": 1.0}))
    assert _columns(_sealed(builder))["x"][1] == [10, 5000]


def test_points_count_every_value_histogram_and_text_line_and_sealing_starts_afresh():
    builder = _builder()
    builder.add((0, 1, {"a": 1.0, "b": 2.0, "c": 3.0}))
    builder.add(HistogramItem("h", 0, 2, [1.0], bins=1))
    builder.add(TextItem("t", 0, 3, "line", 0))
    assert builder.points == 5  # what the recorder compares with max_batch_points
    seq, _payload, points = builder.seal()
    assert (seq, points) == (1, 5)
    assert builder.points == 0 and builder.empty
    builder.add((1, 4, {"a": 4.0}))
    batch = _sealed(builder)
    assert _columns(batch) == {"a": ([1], [4], [4.0])}
    assert not batch.histograms and not batch.texts


def test_seq_numbers_come_from_the_counter_one_per_sealed_batch():
    builder = _builder(first_seq=7)
    seqs = []
    for step in range(3):
        builder.add((step, step + 1, {"x": 1.0}))
        seq, payload, _ = builder.seal()
        assert batch_pb2.Batch.FromString(payload).seq == seq
        seqs.append(seq)
    assert seqs == [7, 8, 9]


def test_a_histogram_is_bucketed_over_its_finite_values_and_counts_them_all():
    builder = _builder()
    builder.add(HistogramItem("weights/layer 1", 12, 5, [0.0, 1.0, 2.0, 3.0, math.nan], bins=3))
    (h,) = _sealed(builder).histograms
    assert (h.key, h.step, h.wall_ns) == ("weights/layer 1", 12, 5)
    assert list(h.bucket_edges) == [0.0, 1.0, 2.0, 3.0]
    assert list(h.counts) == [1.0, 1.0, 2.0]
    assert (h.min, h.max, h.sum, h.count) == (0.0, 3.0, 6.0, 5)


def test_a_pre_bucketed_histogram_is_sent_as_it_is_never_re_binned():
    builder = _builder()
    buckets = Buckets(edges=[-1.0, 0.0, 10.0], counts=[3, 1], min=-0.5, max=9.0, sum=7.5, count=4)
    builder.add(HistogramItem("imported", 2, 5, buckets, bins=30))
    (h,) = _sealed(builder).histograms
    assert (list(h.bucket_edges), list(h.counts)) == ([-1.0, 0.0, 10.0], [3.0, 1.0])
    assert (h.min, h.max, h.sum, h.count) == (-0.5, 9.0, 7.5, 4)


def test_a_text_line_keeps_its_key_step_text_and_level():
    builder = _builder()
    builder.add(TextItem("stdout", 3, 7, "épreuve, \"quoted\"\nnext line", 30))
    (t,) = _sealed(builder).texts
    assert (t.key, t.step, t.wall_ns, t.text, t.level) == ("stdout", 3, 7, "épreuve, \"quoted\"\nnext line", 30)


def test_run_metadata_and_status_ride_along_in_the_next_batch_only():
    builder = _builder()
    meta = run_pb2.RunMeta(version=1, project="proj", run="run / ü", config_json='{"lr": 0.1}', tags=["a"])
    status = run_pb2.RunStatus(version=1, project="proj", run="run / ü", state=run_pb2.RUN_STATE_RUNNING)
    builder.add(meta)
    builder.add(status)
    assert not builder.empty, "metadata alone is worth a batch"
    assert builder.points == 0
    first = _sealed(builder)
    assert first.meta == meta and not first.scalars
    assert (first.status.run, first.status.state) == ("run / ü", run_pb2.RUN_STATE_RUNNING)
    builder.add((0, 1, {"x": 1.0}))
    second = _sealed(builder)
    assert not second.HasField("meta") and not second.HasField("status")


def test_a_newer_status_queued_before_the_seal_replaces_the_older_one():
    builder = _builder()
    builder.add(run_pb2.RunStatus(project="proj", run="run / ü", state=run_pb2.RUN_STATE_RUNNING))
    builder.add(run_pb2.RunStatus(project="proj", run="run / ü", state=run_pb2.RUN_STATE_FINISHED))
    assert _sealed(builder).status.state == run_pb2.RUN_STATE_FINISHED


def test_a_fresh_builder_is_empty():
    assert _builder().empty
