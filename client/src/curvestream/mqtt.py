"""The MQTT link of a trainer process: one paho-mqtt client for all its runs
(see :mod:`.session`), with the session's Last Will, the runs' commit and hint
subscriptions, and MQTT 5 with a fallback to 3.1.1 for brokers that only speak
it (amqtt).

paho keeps its own session in memory only; nothing here is trusted to survive
the process: the spool is what is durable, and a batch counts as delivered only
when the bridge's ``Commit`` names it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from curvestream_wire.mqtt import Callbacks, MqttConnection, SessionOptions
from curvestream_wire.topics import Topics
from curvestream_wire.v1 import run_pb2

from curvestream.settings import Settings

__all__ = ["MqttLink", "client_id_for"]

log = logging.getLogger("curvestream.mqtt")

COMMIT_QOS = 0
"""Commits come at QoS 0: a trainer's session is clean, so a commit the broker had not
delivered when the connection dropped is gone whatever its QoS, and within a connection TCP
delivers it. A lost commit costs a re-send after the ack timeout, which the bridge commits
again. QoS 1 would add an acknowledgement per commit on both sides (a hundred runs: ~500 a second)."""


class MqttLink:
    """Connects in the background, reconnects for ever, and says whether it is up.

    ``on_connected`` runs (in paho's thread) after every successful connect:
    the session uses it to publish its runs' retained metadata and ``running``
    status. ``on_change`` runs when the link went down, a broker refused it, or
    nothing listens at the broker's address: the owner's thread then chooses
    its channel again, or calls :meth:`poll` to switch protocols, at once.
    """

    def __init__(
        self,
        settings: Settings,
        client_id: str,
        on_commit: Callable[[run_pb2.Commit], None],
        will: tuple[str, bytes] | None = None,
        on_connected: Callable[[MqttLink], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._settings = settings
        self._on_commit = on_commit
        self._on_connected = on_connected
        self._on_change = on_change
        self._clock = clock
        self._lock = threading.Lock()
        self._commit_topics: set[str] = set()
        self._watched: dict[str, Callable[[bytes], None]] = {}  # other topics: their payload handlers
        self._asked: set[str] = set()  # topics subscribed at the last connect
        options = SessionOptions(
            client_id=client_id,
            keepalive_s=settings.mqtt_keepalive_s,
            will=will,
            max_inflight=max(20, settings.max_inflight_batches + 8),
            ca_file=settings.mqtt_ca_file,
            tls_insecure=settings.mqtt_tls_insecure,
            connack_timeout_s=1.5,
            buffered_reads=True,  # a PUBACK and a commit per batch: a hundred runs read ~1,000 small packets a second
        )
        callbacks = Callbacks(on_connect=self._handle_connect, on_disconnect=self._handle_disconnect,
                              on_message=self._handle_message, on_subscribe=self._handle_subscribe,
                              on_connect_fail=self._handle_connect_fail)
        self._conn = MqttConnection(settings.mqtt_endpoint(), options, callbacks, settings.mqtt_protocol, clock)
        self._connected = threading.Event()
        self.down_since = clock()
        self.last_error = ""
        self.refused = False
        """The last attempt found nothing listening at the broker's address (ECONNREFUSED):
        no point waiting for it before falling back."""
        self._suback_mid: int | None = None
        self._stopped = False

    @property
    def _client(self) -> paho.Client | None:
        return self._conn.client

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._conn.start()

    def poll(self) -> None:
        """Called by the uploader thread: performs a pending protocol downgrade."""
        if not self._stopped:
            self._conn.downgrade_if_needed(self.connected)

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped = True
        self._conn.stop(wait_disconnected=lambda: not self._connected.is_set(), timeout=timeout)

    def abandon_after_fork(self) -> None:
        """In a forked child: never touch the parent's socket or thread."""
        self._stopped = True
        self._conn.abandon()
        self._connected.clear()

    # ------------------------------------------------------------------ state
    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def protocol_name(self) -> str:
        return self._conn.protocol_name

    def watch_commits(self, producer_id: bytes) -> None:
        topic = Topics.commit(producer_id)
        with self._lock:
            self._commit_topics.add(topic)
        client = self._client
        if client is not None and self.connected:
            client.subscribe(topic, qos=COMMIT_QOS)

    def unwatch_commits(self, producer_id: bytes) -> None:
        self._unsubscribe(Topics.commit(producer_id))

    def unwatch(self, topic: str) -> None:
        self._unsubscribe(topic)

    def _unsubscribe(self, topic: str) -> None:
        with self._lock:
            known = topic in self._commit_topics or topic in self._watched
            self._commit_topics.discard(topic)
            self._watched.pop(topic, None)
        client = self._client
        if known and client is not None and self.connected:
            client.unsubscribe(topic)

    def watch(self, topic: str, handler: Callable[[bytes], None]) -> None:
        """Subscribe to ``topic`` (QoS 1, again after every reconnect); ``handler``
        gets each payload on paho's thread and must not block."""
        with self._lock:
            self._watched[topic] = handler
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
    def _handle_connect(self, client: paho.Client, userdata: Any, flags: paho.ConnectFlags, reason_code: ReasonCode,
                        properties: Properties | None) -> None:
        if reason_code.is_failure:
            if not self._conn.handshake.refused and str(reason_code) != self.last_error:
                log.warning("curvestream: broker refused the connection: %s (points wait in the spool)",
                            reason_code)
            self.last_error = str(reason_code)
            self._changed()
            return
        with self._lock:
            topics = sorted(self._commit_topics | set(self._watched))
            self._asked = set(topics)
        if not topics:
            self._up()
            return
        # "connected" only once the broker confirms the commit subscriptions:
        # a batch sent earlier could be committed before we listen for it
        result, mid = client.subscribe([(topic, COMMIT_QOS if topic in self._commit_topics else 1)
                                        for topic in topics])
        self._suback_mid = mid if result == paho.MQTT_ERR_SUCCESS else None

    def _handle_connect_fail(self, error: OSError | None) -> None:
        refused = isinstance(error, ConnectionRefusedError)
        if refused and not self.refused:
            self.last_error = "connection refused"
        self.refused = refused
        self._changed()

    def _handle_subscribe(self, client: paho.Client, userdata: Any, mid: int, reason_codes: list[ReasonCode],
                          properties: Properties | None) -> None:
        if mid == self._suback_mid and not self._connected.is_set():
            self._up()

    def _up(self) -> None:
        self.refused = False
        self._connected.set()
        with self._lock:
            late = sorted(set(self._watched) - self._asked)  # watched between CONNECT and SUBACK
        client = self._client
        if late and client is not None:
            client.subscribe([(topic, 1) for topic in late])
        self.last_error = ""
        if self._on_connected is not None:
            try:
                self._on_connected(self)
            except Exception:
                log.exception("curvestream: on-connect hook failed")
        self._changed()

    def _handle_disconnect(self, client: paho.Client, userdata: Any, flags: paho.DisconnectFlags,
                           reason_code: ReasonCode, properties: Properties | None) -> None:
        if self._connected.is_set():
            self.down_since = self._clock()
        self._connected.clear()
        if not self._stopped and not self.last_error:  # a refusal's reason says more than the disconnect's
            self.last_error = str(reason_code)
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None and not self._stopped:
            try:
                self._on_change()
            except Exception:
                log.exception("curvestream: link change hook failed")

    def _handle_message(self, client: paho.Client, userdata: Any, message: paho.MQTTMessage) -> None:
        with self._lock:
            handler = self._watched.get(message.topic)
        payload = bytes(message.payload)  # paho reads it as bytes: the same object, not a copy
        if handler is not None:
            try:
                handler(payload)
            except Exception:
                log.exception("curvestream: handling a message on %s failed", message.topic)
            return
        commit = run_pb2.Commit()
        try:
            commit.ParseFromString(payload)
        except Exception:
            log.debug("curvestream: ignoring an unreadable commit on %s", message.topic)
            return
        self._on_commit(commit)


def client_id_for(session_id: bytes) -> str:
    return f"cs-{session_id.hex()[:20]}-{os.getpid()}"
