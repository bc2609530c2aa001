"""Alerts when several bridges share an MQTT 5 subscription.

A shared subscription gives each bridge only part of a run's batches, and a
detector needs all of them. So each bridge also keeps an *alert feed*: its own
persistent MQTT session (client id ``<mqtt_client_id>-alerts``, manual
acknowledgements) subscribed without sharing to every run's points and status.
Every bridge evaluates the whole stream (a hot standby), saves its own engine
state under its own name, and only then acknowledges. Which bridge delivers
(webhooks, the MQTT alerts topic) is decided by presence: each bridge keeps a
retained message on ``curvestream/v1/bridges/<id>`` that its Last Will clears,
and the lowest live id is the leader. Before delivering, the leader checks the
delivery records in the store, so a bridge taking over sends what its dead
predecessor had not, and nothing it had.

Evaluation here runs as batches arrive from the broker, beside their storage
by whichever bridge took them.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from curvestream_wire.mqtt import Callbacks, MqttConnection, MqttEndpoint, SessionOptions
from curvestream_wire.topics import PREFIX, Topics

from curvestream_bridge.decode import Rejected, decode_batch, decode_status
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import StoreUnavailable

if TYPE_CHECKING:
    import paho.mqtt.client as paho
    from paho.mqtt.properties import Properties
    from paho.mqtt.reasoncodes import ReasonCode

    from curvestream_bridge.alerts.service import AlertService

__all__ = ["AlertFeed", "PRESENCE_FILTER", "presence_topic"]

log = logging.getLogger("curvestream.bridge.alerts")

PRESENCE_FILTER = f"{PREFIX}/bridges/+"


def presence_topic(bridge: str) -> str:
    return f"{PREFIX}/bridges/{bridge}"


class AlertFeed:
    def __init__(self, settings: BridgeSettings, service: AlertService,
                 on_leader_change: Callable[[bool], None]) -> None:
        self.settings = settings
        self.service = service
        self.me = settings.mqtt_client_id
        self.on_leader_change = on_leader_change
        options = SessionOptions(client_id=f"{self.me}-alerts", keepalive_s=10, persistent=True,
                                 session_expiry_s=settings.mqtt_session_expiry_s, manual_ack=True, max_inflight=100,
                                 will=(presence_topic(self.me), b""), ca_file=settings.mqtt_ca_file,
                                 tls_insecure=settings.mqtt_tls_insecure, connack_timeout_s=4.0)
        self._conn = MqttConnection(MqttEndpoint.parse(settings.mqtt_url, "CURVESTREAM_MQTT_URL"), options,
                                    Callbacks(on_connect=self._on_connect, on_message=self._on_message),
                                    settings.mqtt_protocol)
        self._queue: queue.Queue = queue.Queue(maxsize=settings.ingest_queue_messages)
        self._live: set[str] = set()
        self._seen_myself = False
        self.leader = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="curvestream-alert-feed", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._conn.start()

    def stop(self) -> None:
        self._stop.set()
        client = self._conn.client
        if client is not None:  # a clean goodbye: the next bridge leads at once
            client.publish(presence_topic(self.me), b"", qos=1, retain=True)
        self._conn.stop()
        self._thread.join(2.0)

    # ------------------------------------------------------------------ paho's thread
    def _on_connect(self, client: paho.Client, userdata: Any, flags: paho.ConnectFlags, reason_code: ReasonCode,
                    properties: Properties | None) -> None:
        if reason_code.is_failure:
            return
        client.subscribe([(Topics.POINTS_FILTER, 1), (Topics.STATUS_FILTER, 1), (PRESENCE_FILTER, 1)])
        client.publish(presence_topic(self.me), self.me.encode(), qos=1, retain=True)

    def _on_message(self, client: paho.Client, userdata: Any, message: paho.MQTTMessage) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put((message, client), timeout=1.0)
                return
            except queue.Full:
                continue

    # ------------------------------------------------------------------ the feed's thread
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                message, client = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            while not self._stop.is_set():
                try:
                    self._handle(message)
                    break
                except StoreUnavailable as exc:  # the same message again once the store answers
                    log.warning("curvestream bridge: alert state not saved (%s); the feed waits", exc)
                    self._stop.wait(1.0)
                except Exception:
                    log.exception("curvestream bridge: alert feed failed on %s", message.topic)
                    break
            if self._stop.is_set():
                return  # not acknowledged: the broker sends it again
            if message.qos > 0:
                try:
                    client.ack(message.mid, message.qos)
                except Exception:
                    pass

    def _handle(self, message: paho.MQTTMessage) -> None:
        if message.topic.startswith(f"{PREFIX}/bridges/"):
            self._presence(message.topic.rsplit("/", 1)[1], message.payload.decode(errors="replace"))
            return
        parsed = Topics.parse(message.topic)
        payload = bytes(message.payload)  # paho reads it as bytes: the same object, not a copy
        if parsed is None or not payload:
            return
        project, run, leaf = parsed
        try:
            if leaf == "points":
                batch = decode_batch(payload, self.settings.max_payload_bytes,
                                     self.settings.max_batch_points, (project, run))
                if batch.status is not None:
                    self.service.on_status(batch.status)
                self.service.on_round([batch])
            elif leaf == "status":
                self.service.on_status(decode_status(payload, (project, run)))
        except Rejected:
            return  # ingest counts and dead-letters it

    def _presence(self, bridge: str, payload: str) -> None:
        if payload:
            self._live.add(bridge)
        else:
            self._live.discard(bridge)
        if bridge == self.me:
            if not payload:
                return
            self._seen_myself = True  # every retained presence came before our own
        leader = self._seen_myself and min(self._live | {self.me}) == self.me
        if leader != self.leader:
            self.leader = leader
            log.info("curvestream bridge: %s alerts (live bridges: %s)",
                     "now delivering" if leader else "no longer delivering", sorted(self._live))
            self.on_leader_change(leader)
