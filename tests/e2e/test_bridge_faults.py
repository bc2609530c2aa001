"""The bridge side of delivery: the store down, the bridge killed, two bridges
sharing a subscription (the flood of malformed payloads: test_fuzz_flood.py)."""

from __future__ import annotations

import math
import time
import urllib.error

import numpy as np
import pytest

from helpers import get_json, metric_counts, prometheus_value, run_path
from servers import Influxd, wait_until
from trainers import TrainerThread

pytestmark = pytest.mark.slow

KEYS = ("loss", "acc")


def expected_value(key: str, step: int) -> float:
    return math.sin(step * 0.001) * (1 if key == "loss" else 2) + step * 1e-6


def Streamer(n: int, **init: object) -> TrainerThread:
    return TrainerThread(n, lambda i: {k: expected_value(k, i) for k in KEYS}, **init)


def assert_each_point_once_with_its_value(base: str, project: str, run: str, n: int) -> None:
    wait_until(lambda: metric_counts(base, project, run) == dict.fromkeys(KEYS, n), 180, f"{n} points per key")
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


def outage_streamer(n: int, run: str, mqtt_url: str, spool_dir) -> TrainerThread:
    streamer = Streamer(n, project="outage", run=run, mqtt_url=mqtt_url, bridge_url="", spool_dir=str(spool_dir))
    streamer.start()
    return streamer


def test_influxdb_down_for_thirty_seconds_and_the_bridge_killed_lose_and_duplicate_nothing(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    influx = Influxd(tmp_path / "influxd")
    influx.start(timeout=60)
    try:
        bridge = bridge_factory(influx.store_url("outage"), mosquitto.url)
        streamer = outage_streamer(150_000, "influx down", mosquitto.url, spool_dir)
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


def test_a_bridge_started_while_influxdb_is_down_waits_for_it_and_stores_everything(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    influx = Influxd(tmp_path / "influxd")  # its port is reserved; the server is not running yet
    try:
        bridge = bridge_factory(influx.store_url("late"), mosquitto.url)
        streamer = outage_streamer(30_000, "store late", mosquitto.url, spool_dir)
        wait_until(lambda: streamer.logged >= 10_000, 60, "10,000 steps logged")
        wait_until(lambda: prometheus_value(bridge.url, "curvestream_store_errors_total") >= 3, 60,
                   "the writer trying the missing store again and again")
        assert bridge.running, "the bridge lives without its store"
        assert metric_counts_or_none(bridge.url) is None, "nothing can be read yet"
        influx.start(timeout=60)
        streamer.done()
        assert_each_point_once_with_its_value(bridge.url, "outage", "store late", 30_000)
        assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0
    finally:
        influx.stop()


def metric_counts_or_none(base: str) -> dict | None:
    try:
        return metric_counts(base, "outage", "store late")
    except urllib.error.HTTPError as err:
        err.close()
        return None


def test_a_bridge_killed_mid_stream_into_duckdb_loses_and_duplicates_nothing(tmp_path, mosquitto, bridge_factory,
                                                                           spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    streamer = Streamer(150_000, project="outage", run="bridge killed", mqtt_url=mosquitto.url, bridge_url="",
                        spool_dir=str(spool_dir))
    streamer.start()
    for threshold in (30_000, 90_000):
        wait_until(lambda threshold=threshold: streamer.logged >= threshold, 60, f"{threshold} steps logged")
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
    wait_until(lambda: all(prometheus_value(b.url, "curvestream_batches_ingested_total") > 0 for b in (first, second)),
               120, "both bridges to take batches (on a busy machine the first writes may trail the trainer)")
    first.kill()
    streamer.done()
    assert_each_point_once_with_its_value(second.url, "shared", "split", 150_000)
