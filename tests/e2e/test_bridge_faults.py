"""The bridge side of delivery: the store down, the bridge killed, two bridges
sharing a subscription, and a flood of malformed payloads."""

from __future__ import annotations

import math
import random
import time
import urllib.error
import urllib.request

import numpy as np
import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from curvestream_wire.topics import Topics
from curvestream_wire.v1 import batch_pb2
from helpers import get_json, metric_counts, prometheus_value, run_path
from servers import Influxd, wait_until
from trainers import TrainerThread

pytestmark = pytest.mark.slow

KEYS = ("loss", "acc")


def expected_value(key: str, step: int) -> float:
    return math.sin(step * 0.001) * (1 if key == "loss" else 2) + step * 1e-6


def Streamer(n: int, **init: object) -> TrainerThread:  # noqa: N802
    return TrainerThread(n, lambda i: {k: expected_value(k, i) for k in KEYS}, **init)


def assert_each_point_once_with_its_value(base: str, project: str, run: str, n: int) -> None:
    wait_until(lambda: metric_counts(base, project, run) == {k: n for k in KEYS}, 180, f"{n} points per key")
    for key in KEYS:
        steps, ys = [], []
        for lo in range(0, n, 80_000):
            ans = get_json(base, run_path(project, run) + "/series", key=key, start=lo, end=min(lo + 79_999, n - 1),
                           width=20000)
            assert ans["raw"]
            steps += ans["points"]["step"]
            ys += ans["points"]["y"]
        assert steps == list(range(n)), f"{key}: every step exactly once"
        assert np.array_equal(np.array(ys), np.array([expected_value(key, i) for i in range(n)])), \
            f"{key}: values (checksum) match"


def test_influxdb_down_for_thirty_seconds_and_the_bridge_killed_lose_and_duplicate_nothing(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    influx = Influxd(tmp_path / "influxd")
    influx.start(timeout=60)
    try:
        bridge = bridge_factory(influx.store_url("outage"), mosquitto.url)
        streamer = Streamer(150_000, project="outage", run="influx down", mqtt_url=mosquitto.url, bridge_url="",
                            spool_dir=str(spool_dir))
        streamer.start()
        wait_until(lambda: streamer.logged >= 20_000, 60, "20,000 steps logged")
        influx.stop()
        time.sleep(30)
        influx.start(timeout=60)
        wait_until(lambda: streamer.logged >= 80_000, 120, "80,000 steps logged")
        bridge.kill()
        time.sleep(1)
        bridge.start()
        streamer.done()
        assert_each_point_once_with_its_value(bridge.url, "outage", "influx down", 150_000)
        assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0
    finally:
        influx.stop()


def test_a_bridge_killed_mid_stream_into_duckdb_loses_and_duplicates_nothing(tmp_path, mosquitto, bridge_factory,
                                                                           spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    streamer = Streamer(150_000, project="outage", run="bridge killed", mqtt_url=mosquitto.url, bridge_url="",
                        spool_dir=str(spool_dir))
    streamer.start()
    for threshold in (30_000, 90_000):
        wait_until(lambda: streamer.logged >= threshold, 60, f"{threshold} steps logged")
        bridge.kill()
        time.sleep(1)
        bridge.start()
    streamer.done()
    assert_each_point_once_with_its_value(bridge.url, "outage", "bridge killed", 150_000)


def test_two_bridges_sharing_a_subscription_split_the_stream_and_survive_one_being_killed(
        mosquitto, influxd, bridge_factory, spool_dir):
    store = influxd.store_url("shared")
    first = bridge_factory(store, mosquitto.url, name="first", mqtt_shared_group="curvestream")
    second = bridge_factory(store, mosquitto.url, name="second", mqtt_shared_group="curvestream")
    streamer = Streamer(150_000, project="shared", run="split", mqtt_url=mosquitto.url, bridge_url="",
                        spool_dir=str(spool_dir), max_batch_points=2000)
    streamer.start()
    wait_until(lambda: streamer.logged >= 50_000, 60, "50,000 steps logged")
    split = [prometheus_value(b.url, "curvestream_batches_ingested_total") for b in (first, second)]
    assert all(n > 0 for n in split), f"both bridges took batches: {split}"
    first.kill()
    streamer.done()
    assert_each_point_once_with_its_value(second.url, "shared", "split", 150_000)


def _fuzz_payloads(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    valid = []
    for i in range(20):
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


def test_ten_thousand_fuzzed_payloads_are_counted_and_leave_valid_traffic_untouched(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    streamer = Streamer(40_000, project="fuzz", run="real", mqtt_url=mosquitto.url, bridge_url="",
                        spool_dir=str(spool_dir))
    streamer.start()
    mqtt_payloads = _fuzz_payloads(5000, seed=1)
    http_payloads = _fuzz_payloads(5000, seed=2)
    pub = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    pub.connect("127.0.0.1", mosquitto.port)
    pub.loop_start()
    try:
        infos = [pub.publish(Topics.points("fuzz", f"target {i % 20}"), p, qos=1) for i, p in enumerate(mqtt_payloads)]
        for info in infos:
            info.wait_for_publish(30)
    finally:
        pub.loop_stop()
        pub.disconnect()
    statuses: dict[int, int] = {}
    for payload in http_payloads:
        req = urllib.request.Request(bridge.url + "/api/v1/ingest", data=payload, method="POST",
                                     headers={"Content-Type": "application/x-protobuf"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                code = resp.status
        except urllib.error.HTTPError as err:
            code = err.code
            err.close()
        statuses[code] = statuses.get(code, 0) + 1
    assert set(statuses) <= {200, 400}, statuses
    assert statuses.get(400, 0) > 2500
    streamer.done()
    assert_each_point_once_with_its_value(bridge.url, "fuzz", "real", 40_000)
    assert bridge.running

    def accounted() -> bool:
        seen = (prometheus_value(bridge.url, "curvestream_rejected_total")
                + prometheus_value(bridge.url, "curvestream_batches_ingested_total")
                + prometheus_value(bridge.url, "curvestream_batches_duplicate_total"))
        sent = len(mqtt_payloads) + len(http_payloads) + streamer.run_obj.uploader.stats.batches_sent_mqtt
        return seen == sent

    wait_until(accounted, 60, "every payload counted once as stored, duplicate or rejected")
    assert prometheus_value(bridge.url, "curvestream_rejected_total", reason="undecodable") > 1000
    assert (tmp_path / "bridge" / "dead-letters.bin").stat().st_size > 0
