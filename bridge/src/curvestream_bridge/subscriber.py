"""The bridge's MQTT side: a persistent session (clean start off, a session
expiry) so the broker keeps messages while the bridge is down; manual
acknowledgements, sent only after the store has the batch; a receive window
(MQTT 5 Receive Maximum, ``CURVESTREAM_MQTT_RECEIVE_MAXIMUM``) wide enough that
the broker keeps sending while a write is in flight: the messages wait in the
pipeline's bounded queue, decoded and pushed live already; an optional MQTT 5
shared subscription so several bridges split the stream; MQTT 3.1.1 (without
sharing) for brokers such as amqtt.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from curvestream_wire.mqtt import Callbacks, MqttConnection, MqttEndpoint, SessionOptions
from curvestream_wire.topics import Topics
from curvestream_wire.v1 import run_pb2

from curvestream_bridge.client_id import TakeoverWatch
from curvestream_bridge.ingest import Ingest, Kind, Message
from curvestream_bridge.metrics import MQTT_CONNECTED, MQTT_DISCONNECTS, MQTT_TAKEOVERS, REJECTED, Metrics
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.sessions import SessionRuns
from curvestream_bridge.settings import BridgeSettings

if TYPE_CHECKING:
    import paho.mqtt.client as paho
    from paho.mqtt.properties import Properties
    from paho.mqtt.reasoncodes import ReasonCode

__all__ = ["Subscriber"]

log = logging.getLogger("curvestream.bridge.mqtt")


class Subscriber:
    def __init__(self, settings: BridgeSettings, ingest: Ingest, metrics: Metrics) -> None:
        self.settings = settings
        self.ingest = ingest
        self.metrics = metrics
        endpoint = MqttEndpoint.parse(settings.mqtt_url, "CURVESTREAM_MQTT_URL")
        options = SessionOptions(
            client_id=settings.mqtt_client_id,
            keepalive_s=60,
            persistent=True,
            session_expiry_s=settings.mqtt_session_expiry_s,
            manual_ack=True,
            max_inflight=100,
            receive_maximum=settings.mqtt_receive_maximum,
            buffered_reads=True,
            ca_file=settings.mqtt_ca_file,
            tls_insecure=settings.mqtt_tls_insecure,
            connack_timeout_s=4.0,
        )
        callbacks = Callbacks(on_connect=self._on_connect, on_disconnect=self._on_disconnect,
                              on_message=self._on_message)
        self._conn = MqttConnection(endpoint, options, callbacks, settings.mqtt_protocol)
        self._connected = threading.Event()
        self._takeover = TakeoverWatch(settings.mqtt_client_id)
        self._quiet = RateLimitedLog(log, every_s=60.0)
        self._connection = 0  # counts connections: what a message's acknowledgement belongs to
        self._stopped = threading.Event()
        self._supervisor: threading.Thread | None = None
        self.sessions = SessionRuns()
        metrics.gauge_fn(MQTT_CONNECTED, lambda: 1.0 if self._connected.is_set() else 0.0)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._conn.start()
        self._supervisor = threading.Thread(target=self._supervise, name="curvestream-mqtt-supervisor", daemon=True)
        self._supervisor.start()

    def _supervise(self) -> None:
        while not self._stopped.wait(0.2):
            self._conn.downgrade_if_needed(self._connected.is_set())

    def stop(self) -> None:
        self._stopped.set()
        self._conn.stop()
        self._connected.clear()

    # ------------------------------------------------------------------ paho callbacks
    def _filters(self) -> list[str]:
        points = Topics.POINTS_FILTER
        if self.settings.mqtt_shared_group and self._conn.mqtt5:
            points = f"$share/{self.settings.mqtt_shared_group}/{points}"
        elif self.settings.mqtt_shared_group:
            log.warning("curvestream bridge: shared subscriptions need MQTT 5; subscribing without sharing")
        return [points, Topics.META_FILTER, Topics.STATUS_FILTER, Topics.SESSION_FILTER]  # sessions after the runs

    def _on_connect(self, client: paho.Client, userdata: Any, flags: paho.ConnectFlags, reason_code: ReasonCode,
                    properties: Properties | None) -> None:
        if reason_code.is_failure:
            if not self._conn.handshake.refused:
                log.warning("curvestream bridge: broker refused the connection: %s", reason_code)
            return
        self._connection += 1
        client.subscribe([(f, 1) for f in self._filters()])
        self._takeover.connected()
        self._connected.set()
        log.info("curvestream bridge: subscribed at %s:%s (MQTT %s, session present: %s)",
                 self._conn.endpoint.host, self._conn.endpoint.port,
                 self._conn.protocol_name, getattr(flags, "session_present", "?"))

    def _on_disconnect(self, client: paho.Client, userdata: Any, flags: paho.DisconnectFlags, reason_code: ReasonCode,
                       properties: Properties | None) -> None:
        self._connection += 1  # nothing received before is acknowledged on the next connection
        self._connected.clear()
        if self._stopped.is_set():
            return
        self.metrics.inc(MQTT_DISCONNECTS)
        taken = self._takeover.dropped(getattr(reason_code, "value", None))
        if taken:
            self.metrics.inc(MQTT_TAKEOVERS)
            self._quiet.warning("takeover", "curvestream bridge: %s", taken)
            return
        log.warning("curvestream bridge: MQTT connection lost (%s); reconnecting", reason_code)

    def _on_message(self, client: paho.Client, userdata: Any, message: paho.MQTTMessage) -> None:
        parsed = Topics.parse(message.topic)
        mid, qos, connection = message.mid, message.qos, self._connection
        payload = bytes(message.payload)  # paho reads it as bytes: the same object, not a copy

        def ack() -> None:
            # a packet id names a message of one connection only: after a reconnect the broker sends the
            # message again (ingest drops the re-send and acknowledges that one), and an id of the old
            # connection would acknowledge another message or break the new connection
            if qos > 0 and connection == self._connection:
                try:
                    client.ack(mid, qos)
                except Exception:
                    pass

        if parsed is None and Topics.parse_session(message.topic) is not None:
            self._session_status(payload, ack, bool(message.retain))
            return
        if parsed is None or parsed[2] not in (Kind.POINTS, Kind.STATUS, Kind.META):
            self.metrics.inc(REJECTED, reason="bad_topic")
            ack()
            return
        project, run, leaf = parsed
        if leaf != Kind.POINTS and not payload:
            ack()  # a cleared retained message
            return
        retained = bool(message.retain)
        then = self._run_status(project, run, payload) if leaf == Kind.STATUS else []
        self._submit(Message(leaf, payload, "mqtt", (project, run), ack=ack, received_ns=time.time_ns(),
                             retained=retained))
        for status in then:
            self._submit(Message(Kind.STATUS, status.SerializeToString(), "mqtt", (project, run),
                                 received_ns=time.time_ns(), retained=retained))

    def _submit(self, msg: Message) -> None:
        while not self._stopped.is_set():
            try:
                self.ingest.submit(msg, timeout=1.0)
                return
            except Exception:  # queue.Full: keep the broker waiting (backpressure)
                continue

    def _run_status(self, project: str, run: str, payload: bytes) -> list[run_pb2.RunStatus]:
        status = run_pb2.RunStatus()
        try:
            status.ParseFromString(payload)
        except Exception:
            return []
        return self.sessions.run_status(project, run, status)

    def _session_status(self, payload: bytes, ack: Callable[[], None], retained: bool) -> None:
        """A session's status (sessions.py): its Will becomes ``lost`` for each of its runs still
        running, each submitted like a status of its own; acknowledged once they are queued."""
        status = run_pb2.RunStatus()
        try:
            status.ParseFromString(payload)
        except Exception:
            self.metrics.inc(REJECTED, reason="undecodable")
            ack()
            return
        for lost in self.sessions.session_status(status) if payload else []:
            self._submit(Message(Kind.STATUS, lost.SerializeToString(), "mqtt", (lost.project, lost.run),
                                 received_ns=time.time_ns(), retained=retained))
        ack()

    # ------------------------------------------------------------------ commits back to trainers, alerts
    def publish(self, topic: str, payload: bytes, retain: bool = False) -> None:
        """QoS 1; dropped while disconnected (the API and webhooks still have it)."""
        client = self._conn.client
        if client is not None and self._connected.is_set():
            client.publish(topic, payload, qos=1, retain=retain)

    def publish_commit(self, producer_id: bytes, commit: run_pb2.Commit) -> None:
        client = self._conn.client
        if client is None or not self._connected.is_set():
            return  # the trainer times out and re-sends; the re-send is committed then
        client.publish(Topics.commit(producer_id), commit.SerializeToString(), qos=1)
