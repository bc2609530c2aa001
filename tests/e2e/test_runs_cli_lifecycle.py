"""Run lifecycle end to end, through real Mosquitto and a bridge process on
DuckDB: ``curvestream runs rename|tag|notes`` change what the runs list shows
and nothing else; ``curvestream runs rm`` deletes a run while its trainer still
logs: the trainer's later batches are refused (its ``finish()`` says so and
its spool lets them go), the run's retained messages are cleared on the
broker, and neither the trainer announcing the run again nor a bridge restart
brings it back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from curvestream_wire.topics import Topics

import curvestream
from helpers import get_json, metric_counts, prometheus_value, run_path
from servers import wait_until

PROJECT = "lifecycle"


def _cli(bridge_url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curvestream.cli", "runs", *args], capture_output=True, text=True,
                          env={**os.environ, "CURVESTREAM_BRIDGE_URL": bridge_url}, timeout=120,
                          stdin=subprocess.DEVNULL)


def _listed(bridge_url: str) -> dict[str, dict]:
    return {r["run"]: r for r in get_json(bridge_url, "/api/v1/runs", project=PROJECT)["runs"]}


def _retained(broker_port: int, topics: list[str]) -> dict[str, bytes]:
    """The retained messages the broker holds on ``topics``: everything a new subscriber
    gets before a message published after its subscription (the probe)."""
    got: dict[str, bytes] = {}
    probe, done = Topics.watched(PROJECT, "probe"), threading.Event()
    client = paho.Client(CallbackAPIVersion.VERSION2)

    def on_message(c, u, m) -> None:
        if m.topic == probe:
            done.set()
        elif m.payload:
            got[m.topic] = m.payload

    def on_subscribe(c, u, mid, codes, props) -> None:
        c.publish(probe, b"x", qos=1)

    client.on_message, client.on_subscribe = on_message, on_subscribe
    client.on_connect = lambda c, u, f, rc, p: c.subscribe([(t, 1) for t in [*topics, probe]])
    client.connect("127.0.0.1", broker_port)
    client.loop_start()
    try:
        assert done.wait(30), "the probe never came back"
    finally:
        client.loop_stop()
        client.disconnect()
    return got


def test_a_run_renamed_keeps_its_curves_and_a_deleted_run_stays_deleted(mosquitto, bridge_factory, spool_dir,
                                                                        tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    common = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir)}
    doomed = curvestream.init(PROJECT, id="doomed", tags=["old"], **common)
    kept = curvestream.init(PROJECT, id="kept", tags=["old"], **common)
    for step in range(500):
        doomed.log({"loss": 1.0 / (step + 1)}, step=step)
        kept.log({"loss": 2.0 / (step + 1)}, step=step)
    wait_until(lambda: metric_counts(bridge.url, PROJECT, "doomed").get("loss") == 500
               and metric_counts(bridge.url, PROJECT, "kept").get("loss") == 500, 60, "both runs' points")
    curve = get_json(bridge.url, run_path(PROJECT, "kept") + "/series", key="loss", width=2000)

    assert _cli(bridge.url, "rename", PROJECT, "kept", "a better name").returncode == 0
    assert _cli(bridge.url, "tag", PROJECT, "kept", "best", "v2", "--remove", "old").returncode == 0
    assert _cli(bridge.url, "notes", PROJECT, "kept", "lr schedule fixed").returncode == 0
    record = _listed(bridge.url)["kept"]
    assert (record["name"], record["tags"], record["notes"]) == ("a better name", ["best", "v2"], "lr schedule fixed")
    assert get_json(bridge.url, run_path(PROJECT, "kept") + "/series", key="loss", width=2000) == curve

    refused = _cli(bridge.url, "rm", PROJECT, "doomed")  # not a terminal: it asks for --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr and "doomed" in _listed(bridge.url)
    removed = _cli(bridge.url, "rm", PROJECT, "doomed", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert set(_listed(bridge.url)) == {"kept"}
    assert _cli(bridge.url, "rm", PROJECT, "doomed", "--yes").stderr.strip() == "curvestream runs rm: no such run"
    topics = [Topics.meta(PROJECT, "doomed"), Topics.status(PROJECT, "doomed")]
    assert _retained(mosquitto.port, topics) == {}

    for step in range(500, 600):  # its trainer goes on: refused, and let go
        doomed.log({"loss": 1.0 / (step + 1)}, step=step)
    report = doomed.finish()
    assert report.batches_rejected >= 1 and report.batches_left_in_spool == 0
    assert kept.finish().complete
    assert set(_listed(bridge.url)) == {"kept"}
    assert get_json(bridge.url, "/api/v1/alerts", project=PROJECT, run="doomed")["alerts"] == []

    bridge.stop()  # a restart, and the run's metadata retained again (a trainer of it reconnecting)
    bridge.start()
    refused_before = prometheus_value(bridge.url, "curvestream_rejected_total", reason="run_deleted")
    client = paho.Client(CallbackAPIVersion.VERSION2)
    client.connect("127.0.0.1", mosquitto.port)
    client.loop_start()
    sent = client.publish(Topics.meta(PROJECT, "doomed"), doomed.meta.SerializeToString(), qos=1, retain=True)
    sent.wait_for_publish(30)
    client.loop_stop()
    client.disconnect()
    wait_until(lambda: prometheus_value(bridge.url, "curvestream_rejected_total", reason="run_deleted")
               > refused_before, 60, "the deleted run's metadata dropped")
    assert set(_listed(bridge.url)) == {"kept"}
    assert metric_counts(bridge.url, PROJECT, "kept") == {"loss": 500}
