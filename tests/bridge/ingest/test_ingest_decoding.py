"""Stage 2, decode and validate: once per message, clock-corrected, or Rejected."""

from __future__ import annotations

import pytest
from ingest_fakes import payload

from curvestream_bridge.clock_skew import ClockSkew
from curvestream_bridge.decode import Rejected
from curvestream_bridge.ingest import Kind, Message
from curvestream_bridge.ingest.decoding import Decoder
from curvestream_bridge.metrics import Metrics


def decoder() -> Decoder:
    return Decoder(1 << 20, 1000, ClockSkew(300, 86400, Metrics()))


def test_a_message_is_decoded_once_and_the_batch_kept_on_it():
    d = decoder()
    m = Message(Kind.POINTS, payload(3), "mqtt", ("p", "r"), received_ns=1)
    batch = d(m)
    assert (batch.seq, batch.points) == (3, 4) and m.decoded is batch
    m.payload = b"not decoded again"
    assert d(m) is batch


def test_a_trainer_clock_an_hour_ahead_is_corrected_as_the_batch_is_decoded():
    d = decoder()
    hour = 3600 * 10**9
    received = 2 * 10**18
    m = Message(Kind.POINTS, payload(1, sent_ns=received + hour), "mqtt", ("p", "r"), received_ns=received)
    batch = d(m)
    assert batch.scalars[0].wall_ns[0] == 10**18 + 4 - hour


@pytest.mark.parametrize("data, topic, reason", [
    (b"\xff\xfe", ("p", "r"), "undecodable"),
    (payload(1, n=2000), ("p", "r"), "too_many_points"),
    (payload(1), ("p", "other"), "topic_mismatch"),
])
def test_what_does_not_validate_is_rejected_with_its_reason(data, topic, reason):
    m = Message(Kind.POINTS, data, "mqtt", topic)
    with pytest.raises(Rejected) as caught:
        decoder()(m)
    assert caught.value.reason == reason and m.decoded is None
