"""Whether the bridge has taken a live WebSocket's subscription to a run: once it
has, it publishes its retained "watched" hint for the run (``live.py``
``_rewatch``, ``Topics.watched``), which this MQTT client waits for. Tests wait
on it instead of sleeping before they start logging."""

from __future__ import annotations

import threading

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from curvestream_wire.topics import Topics

__all__ = ["WatchHint"]


class WatchHint:
    def __init__(self, broker_port: int, project: str, run: str) -> None:
        self.seen = threading.Event()
        self._client = paho.Client(CallbackAPIVersion.VERSION2)
        self._client.on_message = lambda c, u, m: self.seen.set() if m.payload else None
        self._client.on_connect = lambda c, u, f, rc, p: c.subscribe(Topics.watched(project, run), qos=1)
        self._client.connect("127.0.0.1", broker_port)
        self._client.loop_start()

    def wait(self, timeout: float = 30) -> None:
        assert self.seen.wait(timeout), "the bridge never took the subscription"

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()

    def __enter__(self) -> WatchHint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
