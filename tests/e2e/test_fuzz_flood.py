"""A flood of hostile payloads on the points topic and the ingest endpoint,
beside a real trainer: the bridge lives, the trainer's points arrive exactly,
and every payload is counted once, under the very reason the bridge's own
decoder gives it (so a payload counted twice, or lost, shows)."""

from __future__ import annotations

import collections
import concurrent.futures
import random

import httpx
import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from test_bridge_faults import Streamer, assert_each_point_once_with_its_value

from curvestream_wire.topics import Topics
from curvestream_wire.v1 import batch_pb2

from curvestream_bridge.decode import Rejected, decode_batch
from curvestream_bridge.settings import BridgeSettings
from helpers import prometheus_value
from servers import wait_until

pytestmark = pytest.mark.slow

TARGETS = 20
PER_SOURCE = 50_000
PUBLISHERS = 4
POSTERS = 4


def fuzz_payloads(count: int, seed: int) -> list[bytes]:
    """Random bytes, truncated and mutated valid batches, and well-formed batches that break one rule."""
    rng = random.Random(seed)
    valid = []
    for i in range(TARGETS):
        b = batch_pb2.Batch(version=1, producer_id=rng.randbytes(16), seq=i + 1, project="fuzz", run=f"target {i}")
        s = b.scalars.add(key=f"k{i}")
        s.steps.extend(range(50))
        s.wall_ns.extend(range(10**18, 10**18 + 50))
        s.values.extend([rng.random() for _ in range(50)])
        valid.append(b.SerializeToString())
    odd = [
        batch_pb2.Batch(version=99, producer_id=b"x" * 16, seq=1, project="fuzz", run="v").SerializeToString(),
        batch_pb2.Batch(version=1, producer_id=b"", seq=1, project="fuzz", run="v").SerializeToString(),
        batch_pb2.Batch(version=1, producer_id=b"x" * 16, seq=0, project="fuzz", run="v").SerializeToString(),
        batch_pb2.Batch(version=1, producer_id=b"x" * 16, seq=1, project="", run="v").SerializeToString(),
    ]
    ragged = batch_pb2.Batch(version=1, producer_id=b"y" * 16, seq=1, project="fuzz", run="ragged")
    ragged.scalars.add(key="k", steps=[1, 2], wall_ns=[1], values=[1.0, 2.0, 3.0])
    odd.append(ragged.SerializeToString())
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            out.append(rng.randbytes(rng.randint(0, 300)))
        elif kind == 1:
            v = rng.choice(valid)
            out.append(v[: rng.randint(0, len(v) - 1)])
        elif kind == 2:
            v = bytearray(rng.choice(valid))
            for _ in range(rng.randint(1, 4)):
                v[rng.randrange(len(v))] = rng.randrange(256)
            out.append(bytes(v))
        else:
            out.append(rng.choice(odd))
    return out


def topic_run(i: int) -> tuple[str, str]:
    return "fuzz", f"target {i % TARGETS}"


def expected_outcomes(payloads: list[bytes], over_mqtt: bool) -> list[str | tuple[bytes, int]]:
    """What the bridge must make of each payload: a rejection reason, or the (producer, seq) it stores."""
    settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb")
    out: list[str | tuple[bytes, int]] = []
    for i, payload in enumerate(payloads):
        try:
            b = decode_batch(payload, settings.max_payload_bytes, settings.max_batch_points,
                             topic_run(i) if over_mqtt else None)
            out.append((b.producer_id, b.seq))
        except Rejected as rej:
            out.append(rej.reason)
    return out


def publish_all(port: int, payloads: list[bytes]) -> None:
    """QoS 1 (every payload reaches the bridge's session exactly as counted) from several clients at once."""
    def publish(part: int) -> None:
        client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"fuzz-{part}", protocol=paho.MQTTv5)
        client.max_inflight_messages_set(100)
        client.connect("127.0.0.1", port)
        client.loop_start()
        try:
            infos = [client.publish(Topics.points(*topic_run(i)), payloads[i], qos=1)
                     for i in range(part, len(payloads), PUBLISHERS)]
            for info in infos:
                info.wait_for_publish(120)
                assert info.is_published()
        finally:
            client.loop_stop()
            client.disconnect()

    with concurrent.futures.ThreadPoolExecutor(PUBLISHERS) as pool:
        list(pool.map(publish, range(PUBLISHERS)))


def post_all(base: str, payloads: list[bytes]) -> list[int]:
    """Each body POSTed once over keep-alive connections; the HTTP status of each."""
    statuses = [0] * len(payloads)

    def post(part: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for i in range(part, len(payloads), POSTERS):
                resp = client.post("/api/v1/ingest", content=payloads[i],
                                   headers={"Content-Type": "application/x-protobuf"})
                statuses[i] = resp.status_code

    with concurrent.futures.ThreadPoolExecutor(POSTERS) as pool:
        list(pool.map(post, range(POSTERS)))
    return statuses


def test_a_hundred_thousand_fuzzed_payloads_are_each_counted_once_and_leave_valid_traffic_untouched(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    streamer = Streamer(40_000, project="fuzz", run="real", mqtt_url=mosquitto.url, bridge_url="",
                        spool_dir=str(spool_dir))
    streamer.start()
    mqtt_payloads, http_payloads = fuzz_payloads(PER_SOURCE, seed=1), fuzz_payloads(PER_SOURCE, seed=2)
    mqtt_expected = expected_outcomes(mqtt_payloads, over_mqtt=True)
    http_expected = expected_outcomes(http_payloads, over_mqtt=False)

    publish_all(mosquitto.port, mqtt_payloads)
    statuses = post_all(bridge.url, http_payloads)
    wrong = [(i, code, want) for i, (code, want) in enumerate(zip(statuses, http_expected))
             if code != (400 if isinstance(want, str) else 200)]
    assert not wrong, f"{len(wrong)} bodies got another answer than their decode says, e.g. {wrong[:5]}"

    streamer.done()
    assert_each_point_once_with_its_value(bridge.url, "fuzz", "real", 40_000)
    assert bridge.running

    reasons = collections.Counter(o for o in mqtt_expected + http_expected if isinstance(o, str))
    stored_mqtt = {o for o in mqtt_expected if not isinstance(o, str)}
    stored_http = {o for o in http_expected if not isinstance(o, str)}
    assert not stored_mqtt & stored_http, "the two floods name different producers"
    decodable = len(mqtt_payloads) + len(http_payloads) - sum(reasons.values())
    assert sum(reasons.values()) > 50_000 and len(reasons) >= 6, reasons
    trainer_batches = streamer.run_obj.recorder.stats.last_seq
    trainer_sent = streamer.run_obj.uploader.stats.batches_sent_mqtt

    def counted(name: str, **labels: str) -> int:
        return int(prometheus_value(bridge.url, name, **labels))

    def every_payload_counted() -> bool:
        return (counted("curvestream_batches_ingested_total") + counted("curvestream_batches_duplicate_total")
                + counted("curvestream_rejected_total")) == len(mqtt_payloads) + len(http_payloads) + trainer_sent

    wait_until(every_payload_counted, 120, "every payload counted once as stored, duplicate or rejected")
    for reason, n in reasons.items():
        assert counted("curvestream_rejected_total", reason=reason) == n, reason
    assert counted("curvestream_batches_ingested_total", source="http") == len(stored_http)
    assert counted("curvestream_batches_ingested_total", source="mqtt") == len(stored_mqtt) + trainer_batches
    assert counted("curvestream_batches_duplicate_total") == decodable - len(stored_http) - len(stored_mqtt) \
        + trainer_sent - trainer_batches
    assert (tmp_path / "bridge" / "dead-letters.bin").stat().st_size > 0
