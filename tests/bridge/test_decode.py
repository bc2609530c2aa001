"""Decoding what arrives on the wire: a valid batch exactly as sent, anything
else a rejection with a reason (and the producer and seq when they are known)."""

from __future__ import annotations

import math

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream_bridge.decode import Rejected, decode_batch, decode_meta, decode_status

PID = b"\x07" * 16
MAX_BYTES = 1 << 20
MAX_POINTS = 1000


def _batch(**fields) -> batch_pb2.Batch:
    base = {"version": 1, "producer_id": PID, "seq": 5, "project": "proj", "run": "run/1 ü", "sealed_ns": 99}
    base.update(fields)
    return batch_pb2.Batch(**base)


def _decode(batch: batch_pb2.Batch | bytes, topic_run=None, max_points: int = MAX_POINTS):
    payload = batch if isinstance(batch, bytes) else batch.SerializeToString()
    return decode_batch(payload, MAX_BYTES, max_points, topic_run)


def _rejection(batch: batch_pb2.Batch | bytes, **kw) -> Rejected:
    with pytest.raises(Rejected) as info:
        _decode(batch, **kw)
    return info.value


def test_a_valid_batch_decodes_exactly_with_nan_and_infinities_kept():
    b = _batch()
    b.scalars.add(key='loss, "train"/a=b', steps=[0, 1, 2, 3], wall_ns=[10, 11, 12, 13],
                  values=[0.5, math.nan, math.inf, -math.inf])
    b.histograms.add(key="w", step=3, wall_ns=14, bucket_edges=[0.0, 1.0, 2.0], counts=[3.0, 4.0],
                     min=0.0, max=2.0, sum=7.0, count=7)
    b.texts.add(key="log", step=3, wall_ns=15, text="hello", level=20)
    b.meta.CopyFrom(run_pb2.RunMeta(project="proj", run="run/1 ü", config_json="{}"))
    b.status.CopyFrom(run_pb2.RunStatus(project="proj", run="run/1 ü", state=run_pb2.RUN_STATE_RUNNING))

    d = _decode(b, topic_run=("proj", "run/1 ü"))

    assert (d.producer_id, d.seq, d.project, d.run, d.sealed_ns) == (PID, 5, "proj", "run/1 ü", 99)
    (col,) = d.scalars
    assert col.key == 'loss, "train"/a=b'
    assert col.steps.tolist() == [0, 1, 2, 3] and col.wall_ns.tolist() == [10, 11, 12, 13]
    assert col.values[0] == 0.5 and math.isnan(col.values[1]) and col.values[2:].tolist() == [math.inf, -math.inf]
    assert (col.steps.dtype.name, col.wall_ns.dtype.name, col.values.dtype.name) == ("int64", "int64", "float64")
    assert [h.key for h in d.histograms] == ["w"] and list(d.histograms[0].counts) == [3.0, 4.0]
    assert [(t.key, t.text) for t in d.texts] == [("log", "hello")]
    assert d.meta.config_json == "{}" and d.status.state == run_pb2.RUN_STATE_RUNNING
    assert d.points == 4 + 1 + 1


def test_a_batch_without_meta_or_status_decodes_with_none_for_both():
    d = _decode(_batch())
    assert d.meta is None and d.status is None and d.scalars == [] and d.points == 0


def test_the_same_key_twice_in_one_batch_is_merged_in_order():
    b = _batch()
    b.scalars.add(key="x", steps=[0, 1], wall_ns=[1, 2], values=[0.0, 1.0])
    b.scalars.add(key="y", steps=[0], wall_ns=[1], values=[9.0])
    b.scalars.add(key="x", steps=[2], wall_ns=[3], values=[2.0])
    d = _decode(b)
    assert [c.key for c in d.scalars] == ["x", "y"]
    x = d.scalars[0]
    assert (x.steps.tolist(), x.wall_ns.tolist(), x.values.tolist()) == ([0, 1, 2], [1, 2, 3], [0.0, 1.0, 2.0])


def test_an_empty_series_is_left_out():
    b = _batch()
    b.scalars.add(key="nothing yet")
    assert _decode(b).scalars == []


def test_an_oversized_payload_is_rejected_before_it_is_parsed():
    b = _batch()
    b.scalars.add(key="x", steps=[0], wall_ns=[1], values=[1.0])
    payload = b.SerializeToString()
    with pytest.raises(Rejected) as info:
        decode_batch(payload, len(payload) - 1, MAX_POINTS)
    assert info.value.reason == "oversized" and info.value.producer_id == b""
    assert decode_batch(payload, len(payload), MAX_POINTS).seq == 5  # the limit itself is allowed


def test_bytes_that_are_no_protobuf_are_undecodable():
    rej = _rejection(b"\xff\xfe\xfd not protobuf")
    assert rej.reason == "undecodable" and "not a protobuf message" in str(rej)


def test_an_unknown_wire_version_is_rejected_naming_producer_and_seq():
    rej = _rejection(_batch(version=2))
    assert (rej.reason, rej.producer_id, rej.seq) == ("unknown_version", PID, 5)


@pytest.mark.parametrize("pid", [b"", b"p" * 65])
def test_a_producer_id_outside_1_to_64_bytes_is_rejected(pid):
    assert _rejection(_batch(producer_id=pid)).reason == "bad_producer"


def test_a_producer_id_of_64_bytes_is_accepted():
    assert _decode(_batch(producer_id=b"p" * 64)).producer_id == b"p" * 64


def test_seq_zero_is_rejected():
    rej = _rejection(_batch(seq=0))
    assert (rej.reason, rej.producer_id) == ("bad_seq", PID)


@pytest.mark.parametrize("fields", [{"project": ""}, {"run": ""}, {"project": "a\x00b"}, {"run": "r" * 1025}])
def test_a_bad_project_or_run_name_is_rejected_naming_producer_and_seq(fields):
    rej = _rejection(_batch(**fields))
    assert (rej.reason, rej.producer_id, rej.seq) == ("bad_name", PID, 5)


def test_a_batch_on_the_topic_of_another_run_is_rejected():
    rej = _rejection(_batch(), topic_run=("proj", "another run"))
    assert (rej.reason, rej.producer_id, rej.seq) == ("topic_mismatch", PID, 5)


def test_metadata_or_status_naming_another_run_is_rejected():
    with_meta = _batch()
    with_meta.meta.CopyFrom(run_pb2.RunMeta(project="proj", run="someone else"))
    with_status = _batch()
    with_status.status.CopyFrom(run_pb2.RunStatus(project="other", run="run/1 ü"))
    for b in (with_meta, with_status):
        rej = _rejection(b)
        assert (rej.reason, rej.producer_id, rej.seq) == ("topic_mismatch", PID, 5)


@pytest.mark.parametrize("add", [
    lambda b: b.scalars.add(key="", steps=[0], wall_ns=[1], values=[1.0]),
    lambda b: b.scalars.add(key="a\x00b", steps=[0], wall_ns=[1], values=[1.0]),
    lambda b: b.histograms.add(key="", bucket_edges=[0.0, 1.0], counts=[1.0]),
    lambda b: b.texts.add(key="", text="x"),
])
def test_an_empty_or_nul_key_in_any_kind_of_record_is_a_bad_key(add):
    b = _batch()
    add(b)
    rej = _rejection(b)
    assert (rej.reason, rej.producer_id, rej.seq) == ("bad_key", PID, 5)


@pytest.mark.parametrize("steps, walls, values", [([0], [1, 2], [1.0, 2.0]), ([0, 1], [1, 2], [1.0]),
                                                  ([0, 1], [1], [1.0, 2.0])])
def test_a_series_whose_columns_differ_in_length_is_ragged(steps, walls, values):
    b = _batch()
    b.scalars.add(key="k", steps=steps, wall_ns=walls, values=values)
    rej = _rejection(b)
    assert (rej.reason, rej.seq) == ("ragged_series", 5) and "'k'" in str(rej)


def test_more_points_than_allowed_across_series_is_too_many():
    b = _batch()
    b.scalars.add(key="a", steps=range(6), wall_ns=range(6), values=[0.0] * 6)
    b.scalars.add(key="b", steps=range(5), wall_ns=range(5), values=[0.0] * 5)
    assert len(_decode(b, max_points=11).scalars) == 2
    rej = _rejection(b, max_points=10)
    assert (rej.reason, rej.producer_id, rej.seq) == ("too_many_points", PID, 5)


def test_a_histogram_needs_one_more_edge_than_counts():
    b = _batch()
    b.histograms.add(key="h", bucket_edges=[0.0, 1.0], counts=[1.0, 2.0])
    rej = _rejection(b)
    assert (rej.reason, rej.seq) == ("bad_histogram", 5)


def _status(project: str = "proj", run: str = "r") -> bytes:
    return run_pb2.RunStatus(project=project, run=run, state=run_pb2.RUN_STATE_FINISHED).SerializeToString()


def _meta(project: str = "proj", run: str = "r") -> bytes:
    return run_pb2.RunMeta(project=project, run=run, tags=["t"]).SerializeToString()


def test_a_status_and_metadata_of_their_topics_run_decode():
    assert decode_status(_status(), ("proj", "r")).state == run_pb2.RUN_STATE_FINISHED
    assert list(decode_meta(_meta(), ("proj", "r")).tags) == ["t"]


@pytest.mark.parametrize("decode, payload", [(decode_status, _status(run="other")), (decode_meta, _meta(project="x"))])
def test_a_status_or_metadata_naming_another_run_than_its_topic_is_rejected(decode, payload):
    with pytest.raises(Rejected) as info:
        decode(payload, ("proj", "r"))
    assert info.value.reason == "topic_mismatch"


@pytest.mark.parametrize("decode", [decode_status, decode_meta])
def test_a_status_or_metadata_that_is_no_protobuf_is_undecodable(decode):
    with pytest.raises(Rejected) as info:
        decode(b"\xff\xff\xff", ("proj", "r"))
    assert info.value.reason == "undecodable"
