"""The MQTT link of a trainer: one paho-mqtt client per run, with the run's
Last Will (status ``lost``), the commit subscriptions, and MQTT 5 with a
fallback to 3.1.1 for brokers that only speak it (amqtt).

paho keeps its own session in memory only; nothing here is trusted to survive
the process: the spool is what is durable, and a batch counts as delivered only
when the bridge's ``Commit`` names it.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from typing import Callable

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from curvestream.names import Topics
from curvestream.settings import Settings
from curvestream.v1 import run_pb2

__all__ = ["MqttLink", "HandshakeWatch", "client_id_for"]

log = logging.getLogger("curvestream.mqtt")

_UNSUPPORTED_PROTOCOL = {1, 132}


class HandshakeWatch:
    """Tells when an MQTT 5 broker turned out to speak only 3.1.1: it refused the
    protocol version, or it took the TCP connection and never answered the
    CONNECT (amqtt does this to an MQTT 5 CONNECT carrying a Will).

    Wire it to paho's ``on_pre_connect``, ``on_connect_fail`` and ``on_connect``.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, connack_timeout_s: float = 4.0) -> None:
        self._clock = clock
        self._timeout = connack_timeout_s
        self._sent_at: float | None = None
        self.refused = False

    def pre_connect(self, *_: object) -> None:
        self._sent_at = self._clock()

    def connect_failed(self, *_: object) -> None:
        self._sent_at = None

    def connack(self, reason_code: object) -> None:
        self._sent_at = None
        value = getattr(reason_code, "value", None)
        if getattr(reason_code, "is_failure", False) and value in _UNSUPPORTED_PROTOCOL:
            self.refused = True

    def should_downgrade(self) -> bool:
        if self.refused:
            return True
        return self._sent_at is not None and self._clock() - self._sent_at > self._timeout


class MqttLink:
    """Connects in the background, reconnects for ever, and says whether it is up.

    ``on_connected`` runs (in paho's thread) after every successful connect:
    the run uses it to publish its retained metadata and ``running`` status.
    """

    def __init__(
        self,
        settings: Settings,
        client_id: str,
        on_commit: Callable[[run_pb2.Commit], None],
        will: tuple[str, bytes] | None = None,
        on_connected: Callable[["MqttLink"], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._endpoint = settings.mqtt_endpoint()
        self._client_id = client_id
        self._on_commit = on_commit
        self._will = will
        self._on_connected = on_connected
        self._clock = clock
        self._lock = threading.Lock()
        self._commit_topics: set[str] = set()
        self._protocol = paho.MQTTv311 if settings.mqtt_protocol == "3.1.1" else paho.MQTTv5
        self._handshake = HandshakeWatch(clock, connack_timeout_s=1.5)
        self._connected = threading.Event()
        self.down_since = clock()
        self.last_error = ""
        self._client: paho.Client | None = None
        self._suback_mid: int | None = None
        self._stopped = False

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._client = self._make_client()
        self._client.connect_async(self._endpoint.host, self._endpoint.port, keepalive=self._settings.mqtt_keepalive_s,
                                   **({"clean_start": True} if self._protocol == paho.MQTTv5 else {}))
        self._client.loop_start()

    def _make_client(self) -> paho.Client:
        kwargs = {"clean_session": True} if self._protocol == paho.MQTTv311 else {}
        client = paho.Client(CallbackAPIVersion.VERSION2, client_id=self._client_id, protocol=self._protocol, **kwargs)
        if self._endpoint.username is not None:
            client.username_pw_set(self._endpoint.username, self._endpoint.password)
        if self._endpoint.tls:
            client.tls_set(ca_certs=self._settings.mqtt_ca_file or None, cert_reqs=ssl.CERT_REQUIRED)
            if self._settings.mqtt_tls_insecure:
                client.tls_insecure_set(True)
        if self._will is not None:
            client.will_set(self._will[0], self._will[1], qos=1, retain=True)
        client.reconnect_delay_set(min_delay=1, max_delay=5)
        client.max_inflight_messages_set(max(20, self._settings.max_inflight_batches + 8))
        client.connect_timeout = 3.0
        client.on_pre_connect = self._handshake.pre_connect
        client.on_connect_fail = self._handshake.connect_failed
        client.on_connect = self._handle_connect
        client.on_disconnect = self._handle_disconnect
        client.on_message = self._handle_message
        client.on_subscribe = self._handle_subscribe
        return client

    def poll(self) -> None:
        """Called by the uploader thread: performs a pending protocol downgrade."""
        if (not self._stopped and self._protocol == paho.MQTTv5 and self._settings.mqtt_protocol == "auto"
                and not self.connected and self._handshake.should_downgrade()):
            self._handshake = HandshakeWatch(self._clock, connack_timeout_s=1.5)
            old = self._client
            if old is not None:
                old.loop_stop()
                try:
                    old.disconnect()
                except Exception:  # noqa: BLE001 - it is gone either way
                    pass
            self._protocol = paho.MQTTv311
            log.info("curvestream: broker does not speak MQTT 5; using MQTT 3.1.1")
            self.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped = True
        client = self._client
        if client is None:
            return
        try:
            client.disconnect()
        except Exception:  # noqa: BLE001
            pass
        deadline = self._clock() + timeout
        while self._connected.is_set() and self._clock() < deadline:
            time.sleep(0.01)
        client.loop_stop()

    def abandon_after_fork(self) -> None:
        """In a forked child: never touch the parent's socket or thread."""
        self._stopped = True
        self._client = None
        self._connected.clear()

    # ------------------------------------------------------------------ state
    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def protocol_name(self) -> str:
        return "5" if self._protocol == paho.MQTTv5 else "3.1.1"

    def watch_commits(self, producer_id: bytes) -> None:
        topic = Topics.commit(producer_id)
        with self._lock:
            self._commit_topics.add(topic)
        client = self._client
        if client is not None and self.connected:
            client.subscribe(topic, qos=1)

    # ------------------------------------------------------------------ send
    def publish(self, topic: str, payload: bytes, retain: bool = False) -> bool:
        """Hand a QoS 1 message to paho while connected; False when not connected."""
        client = self._client
        if client is None or not self.connected:
            return False
        info = client.publish(topic, payload, qos=1, retain=retain)
        return info.rc == paho.MQTT_ERR_SUCCESS

    def publish_and_wait(self, topic: str, payload: bytes, retain: bool, timeout: float) -> bool:
        client = self._client
        if client is None or not self.connected:
            return False
        info = client.publish(topic, payload, qos=1, retain=retain)
        try:
            info.wait_for_publish(timeout)
        except (RuntimeError, ValueError):
            return False
        return info.is_published()

    # ------------------------------------------------------------------ paho callbacks
    def _handle_connect(self, client, userdata, flags, reason_code, properties) -> None:  # noqa: ANN001
        self._handshake.connack(reason_code)
        if reason_code.is_failure:
            if not self._handshake.refused and str(reason_code) != self.last_error:
                log.warning("curvestream: broker refused the connection: %s (points wait in the spool)",
                            reason_code)
            self.last_error = str(reason_code)
            return
        with self._lock:
            topics = sorted(self._commit_topics)
        if not topics:
            self._up()
            return
        # "connected" only once the broker confirms the commit subscriptions:
        # a batch sent earlier could be committed before we listen for it
        result, mid = client.subscribe([(topic, 1) for topic in topics])
        self._suback_mid = mid if result == paho.MQTT_ERR_SUCCESS else None

    def _handle_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:  # noqa: ANN001
        if mid == self._suback_mid and not self._connected.is_set():
            self._up()

    def _up(self) -> None:
        self._connected.set()
        self.last_error = ""
        if self._on_connected is not None:
            try:
                self._on_connected(self)
            except Exception:  # noqa: BLE001 - never raise into paho's loop
                log.exception("curvestream: on-connect hook failed")

    def _handle_disconnect(self, client, userdata, flags, reason_code, properties) -> None:  # noqa: ANN001
        if self._connected.is_set():
            self.down_since = self._clock()
        self._connected.clear()
        if not self._stopped and not self.last_error:  # a refusal's reason says more than the disconnect's
            self.last_error = str(reason_code)

    def _handle_message(self, client, userdata, message) -> None:  # noqa: ANN001
        commit = run_pb2.Commit()
        try:
            commit.ParseFromString(message.payload)
        except Exception:  # noqa: BLE001 - a foreign payload is not our problem
            log.debug("curvestream: ignoring an unreadable commit on %s", message.topic)
            return
        self._on_commit(commit)


def client_id_for(producer_id: bytes) -> str:
    return f"cs-{producer_id.hex()[:20]}-{os.getpid()}"
