"""The bridge's MQTT side: a persistent session (clean start off, a session
expiry) so the broker keeps messages while the bridge is down; manual
acknowledgements, sent only after the store has the batch; an optional MQTT 5
shared subscription so several bridges split the stream; MQTT 3.1.1 (without
sharing) for brokers such as amqtt.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
import urllib.parse

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from curvestream.mqtt import HandshakeWatch
from curvestream.names import Topics
from curvestream.v1 import run_pb2

from curvestream_bridge.ingest import Ingest, Kind, Message
from curvestream_bridge.metrics import Metrics
from curvestream_bridge.settings import BridgeSettings

__all__ = ["Subscriber"]

log = logging.getLogger("curvestream.bridge.mqtt")


class Subscriber:
    def __init__(self, settings: BridgeSettings, ingest: Ingest, metrics: Metrics) -> None:
        self.settings = settings
        self.ingest = ingest
        self.metrics = metrics
        parsed = urllib.parse.urlsplit(settings.mqtt_url)
        if parsed.scheme not in ("mqtt", "mqtts", "tcp", "ssl") or not parsed.hostname:
            raise ValueError(f"CURVESTREAM_MQTT_URL: expected mqtt://host:port, got {settings.mqtt_url!r}")
        self._tls = parsed.scheme in ("mqtts", "ssl")
        self._host = parsed.hostname
        self._port = parsed.port or (8883 if self._tls else 1883)
        self._user = urllib.parse.unquote(parsed.username) if parsed.username else None
        self._password = urllib.parse.unquote(parsed.password) if parsed.password else None
        self._protocol = paho.MQTTv311 if settings.mqtt_protocol == "3.1.1" else paho.MQTTv5
        self._client: paho.Client | None = None
        self._connected = threading.Event()
        self._handshake = HandshakeWatch(connack_timeout_s=4.0)
        self._stopped = threading.Event()
        self._supervisor: threading.Thread | None = None
        metrics.gauge_fn("curvestream_mqtt_connected", lambda: 1.0 if self._connected.is_set() else 0.0)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def protocol_name(self) -> str:
        return "5" if self._protocol == paho.MQTTv5 else "3.1.1"

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._connect()
        self._supervisor = threading.Thread(target=self._supervise, name="curvestream-mqtt-supervisor", daemon=True)
        self._supervisor.start()

    def _connect(self) -> None:
        v5 = self._protocol == paho.MQTTv5
        client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.settings.mqtt_client_id,
            protocol=self._protocol,
            manual_ack=True,
            **({} if v5 else {"clean_session": False}),
        )
        if self._user is not None:
            client.username_pw_set(self._user, self._password)
        if self._tls:
            client.tls_set(ca_certs=self.settings.mqtt_ca_file or None, cert_reqs=ssl.CERT_REQUIRED)
            if self.settings.mqtt_tls_insecure:
                client.tls_insecure_set(True)
        client.reconnect_delay_set(min_delay=1, max_delay=5)
        client.max_inflight_messages_set(100)
        client.connect_timeout = 3.0
        client.on_pre_connect = self._handshake.pre_connect
        client.on_connect_fail = self._handshake.connect_failed
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        kwargs = {}
        if v5:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = self.settings.mqtt_session_expiry_s
            kwargs = {"clean_start": False, "properties": props}
        client.connect_async(self._host, self._port, keepalive=60, **kwargs)
        self._client = client
        client.loop_start()

    def _supervise(self) -> None:
        while not self._stopped.wait(0.2):
            if (self._protocol == paho.MQTTv5 and self.settings.mqtt_protocol == "auto"
                    and not self._connected.is_set() and self._handshake.should_downgrade()):
                self._handshake = HandshakeWatch(connack_timeout_s=4.0)
                old = self._client
                if old is not None:
                    old.loop_stop()
                self._protocol = paho.MQTTv311
                log.info("curvestream bridge: broker does not speak MQTT 5; using MQTT 3.1.1")
                self._connect()

    def stop(self) -> None:
        self._stopped.set()
        client = self._client
        if client is not None:
            try:
                client.disconnect()
            except Exception:  # noqa: BLE001
                pass
            client.loop_stop()
        self._connected.clear()

    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    # ------------------------------------------------------------------ paho callbacks
    def _filters(self) -> list[str]:
        points = Topics.POINTS_FILTER
        if self.settings.mqtt_shared_group and self._protocol == paho.MQTTv5:
            points = f"$share/{self.settings.mqtt_shared_group}/{points}"
        elif self.settings.mqtt_shared_group:
            log.warning("curvestream bridge: shared subscriptions need MQTT 5; subscribing without sharing")
        return [points, Topics.META_FILTER, Topics.STATUS_FILTER]

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:  # noqa: ANN001
        self._handshake.connack(reason_code)
        if reason_code.is_failure:
            if not self._handshake.refused:
                log.warning("curvestream bridge: broker refused the connection: %s", reason_code)
            return
        client.subscribe([(f, 1) for f in self._filters()])
        self._connected.set()
        log.info("curvestream bridge: subscribed at %s:%s (MQTT %s, session present: %s)", self._host, self._port,
                 self.protocol_name, getattr(flags, "session_present", "?"))

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:  # noqa: ANN001
        self._connected.clear()
        if not self._stopped.is_set():
            log.warning("curvestream bridge: MQTT connection lost (%s); reconnecting", reason_code)

    def _on_message(self, client, userdata, message) -> None:  # noqa: ANN001
        parsed = Topics.parse(message.topic)
        mid, qos = message.mid, message.qos

        def ack() -> None:
            if qos > 0:
                try:
                    client.ack(mid, qos)
                except Exception:  # noqa: BLE001 - the connection may be gone; the broker re-sends
                    pass

        if parsed is None or parsed[2] not in (Kind.POINTS, Kind.STATUS, Kind.META):
            self.metrics.inc("curvestream_rejected_total", reason="bad_topic")
            ack()
            return
        project, run, leaf = parsed
        if leaf != Kind.POINTS and not message.payload:
            ack()  # a cleared retained message
            return
        msg = Message(leaf, message.payload, "mqtt", (project, run), ack=ack, received_ns=time.time_ns())
        while not self._stopped.is_set():
            try:
                self.ingest.submit(msg, timeout=1.0)
                return
            except Exception:  # queue.Full: keep the broker waiting (backpressure)  # noqa: BLE001
                continue

    # ------------------------------------------------------------------ commits back to trainers
    def publish_commit(self, producer_id: bytes, commit: run_pb2.Commit) -> None:
        client = self._client
        if client is None or not self._connected.is_set():
            return  # the trainer times out and re-sends; the re-send is committed then
        client.publish(Topics.commit(producer_id), commit.SerializeToString(), qos=1)
