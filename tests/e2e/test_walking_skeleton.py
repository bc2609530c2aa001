"""One point from log() to the store, through real Mosquitto, into real
InfluxDB and embedded DuckDB at the same time."""

from __future__ import annotations

import math

import numpy as np
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from curvestream_wire.topics import Topics

import curvestream
from helpers import get_json, prometheus_value, run_path
from servers import wait_until

HOSTILE_KEY = 'val/loss, top-1 = "x" ü'


def _series(base: str, project: str, run: str, key: str, width: int = 20000) -> dict:
    return get_json(base, run_path(project, run) + "/series", key=key, width=width)


def _count(base: str, project: str, run: str) -> dict[str, int]:
    metrics = get_json(base, run_path(project, run) + "/metrics")["metrics"]
    return {m["key"]: m["count"] for m in metrics}


def test_ten_thousand_points_over_three_metrics_arrive_exactly_in_influxdb_and_duckdb(
        mosquitto, influxd, bridge_factory, spool_dir, tmp_path):
    to_influx = bridge_factory(influxd.store_url("skeleton"), mosquitto.url, name="influx-bridge")
    to_duckdb = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url, name="duckdb-bridge")
    project, run_name = "skeleton", "run one"
    n = 10_000
    rng = np.random.default_rng(7)
    losses = rng.random(n)
    losses[123] = math.nan
    losses[456] = math.inf
    with curvestream.init(project=project, id=run_name, config={"lr": 0.1}, mqtt_url=mosquitto.url,
                          bridge_url=to_duckdb.url, spool_dir=str(spool_dir)) as run:
        for i in range(n):
            run.log({"loss": float(losses[i]), "accuracy": i / n, HOSTILE_KEY: -float(i)}, step=i)
    assert run.finish().complete

    expected = {"loss": n, "accuracy": n, HOSTILE_KEY: n}
    for bridge in (to_influx, to_duckdb):
        # InfluxDB takes a write's points and its step rollups (another retention policy) in two requests: a
        # read between them counts every point but sees the series end where the rollups do, one write back
        wait_until(lambda bridge=bridge: _count(bridge.url, project, run_name) == expected
                   and all(_series(bridge.url, project, run_name, k)["total"] == n for k in ("loss", HOSTILE_KEY)),
                   60, f"all points in {bridge.name}")
        loss = _series(bridge.url, project, run_name, "loss")
        assert loss["raw"] is True and loss["total"] == n
        assert loss["points"]["step"] == list(range(n))
        ys = loss["points"]["y"]
        assert ys[123] == "NaN" and ys[456] == "Infinity"
        finite = [i for i in range(n) if i not in (123, 456)]
        assert [ys[i] for i in finite] == [float(losses[i]) for i in finite]
        hostile = _series(bridge.url, project, run_name, HOSTILE_KEY)
        assert hostile["key"] == HOSTILE_KEY
        assert hostile["points"]["y"] == [-float(i) for i in range(n)]
        runs = {(r["project"], r["run"]): r for r in get_json(bridge.url, "/api/v1/runs")["runs"]}
        assert runs[(project, run_name)]["state"] == "finished"
        assert runs[(project, run_name)]["config"] == {"lr": 0.1}


def test_malformed_payloads_are_counted_and_valid_batches_keep_flowing(mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    pub = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
    pub.connect("127.0.0.1", mosquitto.port)
    pub.loop_start()
    try:
        garbage = [b"\xff\x00garbage", b"", b"\x0a\x05hello", bytes(range(256)) * 10]
        for payload in garbage:
            pub.publish(Topics.points("fuzz", "r"), payload, qos=1).wait_for_publish(10)
        wait_until(lambda: prometheus_value(bridge.url, "curvestream_rejected_total") >= len(garbage), 30,
                   "the bridge to count the rejects")
    finally:
        pub.loop_stop()
        pub.disconnect()
    assert bridge.running
    with curvestream.init(project="fuzz", id="after", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(spool_dir)) as run:
        for i in range(1000):
            run.log({"x": float(i)}, step=i)
    wait_until(lambda: _count(bridge.url, "fuzz", "after") == {"x": 1000}, 30, "valid points after the garbage")
    assert bridge.running
    assert "rejected" in bridge.log_tail(200)
