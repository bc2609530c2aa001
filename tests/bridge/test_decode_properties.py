"""Properties of decode: whatever bytes arrive, the answer is a validated batch
or a :class:`Rejected` with a reason, never another exception; a valid batch
comes out exactly as it went in."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curvestream_wire.v1 import batch_pb2

from curvestream_bridge.decode import DecodedBatch, Rejected, decode_batch, decode_meta, decode_status

MAX_BYTES, MAX_POINTS = 1 << 20, 50_000
int64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(min_size=0, max_size=40)
floats = st.floats(allow_nan=True, allow_infinity=True)


@st.composite
def batches(draw: st.DrawFn, ragged: bool = True) -> batch_pb2.Batch:
    """Batches with any field values: valid ones, and every shape a broken or hostile sender could give."""
    b = batch_pb2.Batch(version=draw(st.sampled_from([1, 1, 1, 0, 2, 99])),
                        producer_id=draw(st.binary(min_size=0, max_size=70)),
                        seq=draw(st.integers(0, 2**64 - 1)), project=draw(names), run=draw(names),
                        sealed_ns=draw(int64))
    for _ in range(draw(st.integers(0, 4))):
        n = draw(st.integers(0, 20))
        s = b.scalars.add(key=draw(names))
        s.steps.extend(draw(st.lists(int64, min_size=n, max_size=n + (2 if ragged else 0))))
        s.wall_ns.extend(draw(st.lists(int64, min_size=n, max_size=n + (2 if ragged else 0))))
        s.values.extend(draw(st.lists(floats, min_size=n, max_size=n + (2 if ragged else 0))))
    for _ in range(draw(st.integers(0, 2))):
        h = b.histograms.add(key=draw(names), step=draw(int64))
        h.counts.extend(draw(st.lists(st.integers(0, 2**32), max_size=5)))
        h.bucket_edges.extend(draw(st.lists(floats, max_size=6)))
    for _ in range(draw(st.integers(0, 2))):
        b.texts.add(key=draw(names), step=draw(int64), text=draw(st.text(max_size=30)))
    if draw(st.booleans()):
        b.meta.project, b.meta.run = draw(st.sampled_from([(b.project, b.run), ("other", b.run)]))
    if draw(st.booleans()):
        b.status.project, b.status.run = draw(st.sampled_from([(b.project, b.run), (b.project, "other")]))
        b.status.state = draw(st.integers(0, 7))
    return b


def decode_or_reject(payload: bytes) -> DecodedBatch | Rejected:
    try:
        return decode_batch(payload, MAX_BYTES, MAX_POINTS)
    except Rejected as rej:
        assert rej.reason and str(rej), "a rejection names its reason and explains it"
        return rej


@given(st.binary(max_size=2000))
@settings(max_examples=1000)
def test_any_bytes_decode_to_a_batch_or_a_rejection(payload):
    decode_or_reject(payload)
    for decode_other in (decode_status, decode_meta):
        try:
            decode_other(payload, ("p", "r"))
        except Rejected:
            pass


@given(batches(), st.data())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_any_batch_truncated_or_with_flipped_bytes_decodes_to_a_batch_or_a_rejection(batch, data):
    payload = batch.SerializeToString()
    decode_or_reject(payload)
    if payload:
        decode_or_reject(payload[: data.draw(st.integers(0, len(payload) - 1))])
        mutated = bytearray(payload)
        for _ in range(data.draw(st.integers(1, 4))):
            mutated[data.draw(st.integers(0, len(mutated) - 1))] = data.draw(st.integers(0, 255))
        decode_or_reject(bytes(mutated))


@given(batches(ragged=False).filter(lambda b: b.version == 1 and 1 <= len(b.producer_id) <= 64 and b.seq >= 1
                                    and b.project and b.run and "\x00" not in b.project + b.run))
@settings(max_examples=200, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
def test_a_well_formed_batch_decodes_to_exactly_its_points_or_names_what_is_wrong(batch):
    got = decode_or_reject(batch.SerializeToString())
    if isinstance(got, Rejected):
        assert got.reason in {"bad_key", "bad_histogram", "topic_mismatch"}, got.reason
        return
    assert (got.producer_id, got.seq, got.project, got.run) == (batch.producer_id, batch.seq, batch.project, batch.run)
    sent: dict[str, list[tuple[int, int, float]]] = {}
    for s in batch.scalars:
        sent.setdefault(s.key, []).extend(zip(s.steps, s.wall_ns, s.values))
    received = {c.key: list(zip(c.steps.tolist(), c.wall_ns.tolist(), c.values.tolist())) for c in got.scalars}
    assert received.keys() == {k for k, v in sent.items() if v}
    for key, points in received.items():
        assert len(points) == len(sent[key])
        for (s0, w0, v0), (s1, w1, v1) in zip(sent[key], points):
            assert (s0, w0) == (s1, w1)
            assert v0 == v1 or (math.isnan(v0) and math.isnan(v1)), "NaN and ±Inf are kept"
    assert got.points == sum(len(v) for v in sent.values()) + len(batch.histograms) + len(batch.texts)
    assert all(c.values.dtype == np.float64 for c in got.scalars)
