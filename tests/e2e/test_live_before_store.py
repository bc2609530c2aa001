"""Live points never wait for the store: with a write of 200 series held back
in the store (tests/held_bridge.py), the next batches of all their runs (more
than a broker's default in-flight window) still reach an open WebSocket, and
every one is stored once the write goes on."""

from __future__ import annotations

import json
import os
import threading
import time

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from curvestream_wire.topics import PREFIX, Topics
from curvestream_wire.v1 import batch_pb2

from held_bridge import HeldBridge
from helpers import metric_counts
from servers import wait_until

PROJECT = "held"
RUNS = [f"r{i}" for i in range(100)]  # x 2 keys: 200 series in every write
KEYS = ("loss", "acc")
STEPS = 10  # per batch and key
WATCHED = RUNS[:20]


def payload(pid: bytes, run: str, seq: int) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=pid, seq=seq, project=PROJECT, run=run, sent_ns=time.time_ns())
    now = time.time_ns()
    for k, key in enumerate(KEYS):
        s = b.scalars.add(key=key)
        s.steps.extend(range((seq - 1) * STEPS, seq * STEPS))
        s.wall_ns.extend(now - (STEPS - i) * 1000 for i in range(STEPS))
        s.values.extend(float(seq * 100 + i + k) for i in range(STEPS))
    return b.SerializeToString()


class Publisher:
    """One MQTT connection publishing the batches of every run (QoS 1)."""

    def __init__(self, mqtt_port: int) -> None:
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"held-publisher-{os.getpid()}")
        self.client.max_inflight_messages_set(0)
        self.watched: set[str] = set()  # runs the bridge asks to flush sooner: a page watches them
        self.client.on_message = lambda c, u, m: self.watched.add(Topics.parse(m.topic)[1]) if m.payload else None
        self.client.connect("127.0.0.1", mqtt_port)
        self.client.subscribe(f"{PREFIX}/{PROJECT}/+/watched", qos=1)
        self.client.loop_start()
        self.pids = {run: os.urandom(16) for run in RUNS}

    def batches(self, seqs: range) -> None:
        infos = [self.client.publish(Topics.points(PROJECT, run), payload(self.pids[run], run, seq), qos=1)
                 for seq in seqs for run in RUNS]
        for info in infos:
            info.wait_for_publish(30)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Watcher(threading.Thread):
    """A WebSocket on /api/v1/live watching some runs: the steps pushed per (run, key)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.steps: dict[tuple[str, str], set[int]] = {(r, k): set() for r in WATCHED for k in KEYS}
        self.ready = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        with connect(self.url, max_size=None) as ws:
            ws.send(json.dumps({"subscribe": [{"project": PROJECT, "run": r} for r in WATCHED]}))
            self.ready.set()
            while not self.stop.is_set():
                try:
                    msg = json.loads(ws.recv(timeout=0.2))
                except TimeoutError:
                    continue
                except ConnectionClosed:
                    return
                if msg.get("type") == "points":
                    for series in msg["series"]:
                        self.steps[(msg["run"], series["key"])].update(series["step"])

    def has(self, last_step: int) -> bool:
        return all(max(s, default=-1) >= last_step and len(s) == last_step + 1 - min(s) for s in self.steps.values())


def test_live_points_of_200_series_reach_the_websocket_while_their_store_write_is_held_back(tmp_path, mosquitto):
    bridge = HeldBridge(tmp_path / "bridge", mosquitto.url)
    bridge.start()
    publisher = Publisher(mosquitto.port)
    watcher = Watcher(bridge.url.replace("http://", "ws://") + "/api/v1/live")
    try:
        publisher.batches(range(1, 2))
        wait_until(lambda: all(metric_counts(bridge.url, PROJECT, r) == dict.fromkeys(KEYS, STEPS) for r in RUNS),
                   120, "the first batch of every run stored")
        watcher.start()
        assert watcher.ready.wait(30)
        wait_until(lambda: publisher.watched >= set(WATCHED), 30, "the live hub watching the runs")

        bridge.gate.touch()
        before = bridge.writes()
        publisher.batches(range(2, 5))  # 300 messages: more than Mosquitto's in-flight window here (100)
        wait_until(lambda: bridge.writes()["begun"] > before["begun"], 60, "a write of the new batches to begin")
        wait_until(lambda: watcher.has(4 * STEPS - 1), 120, "every new point of the watched runs pushed live")
        held = bridge.writes()
        assert held["finished"] == before["finished"], "pushed while the store write was still held back"

        bridge.gate.unlink()
        wait_until(lambda: all(metric_counts(bridge.url, PROJECT, r) == dict.fromkeys(KEYS, 4 * STEPS) for r in RUNS),
                   120, "every batch stored once the write goes on")
    finally:
        bridge.gate.unlink(missing_ok=True)
        watcher.stop.set()
        if watcher.is_alive():
            watcher.join(10)
        publisher.close()
        bridge.stop()
