"""The one way curvestream connects to an MQTT broker, for trainers and bridges.

:class:`MqttConnection` owns a paho client: credentials and TLS from the URL,
reconnects for ever, and MQTT 5 with a fallback to 3.1.1 for brokers that only
speak that (amqtt). The caller supplies its paho callbacks and session options
(a trainer: clean session, a Last Will; a bridge: a persistent session and
manual acknowledgements).

    >>> MqttEndpoint.parse("mqtts://user:p%40ss@broker.lab:8883")
    MqttEndpoint(host='broker.lab', port=8883, tls=True, username='user', password='p@ss')
    >>> MqttEndpoint.parse("mqtt://127.0.0.1").port
    1883
"""

from __future__ import annotations

import dataclasses
import logging
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Literal

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

__all__ = ["MqttEndpoint", "SessionOptions", "MqttConnection", "BufferedReadClient", "HandshakeWatch", "Protocol"]

log = logging.getLogger("curvestream.mqtt")

Protocol = Literal["auto", "5", "3.1.1"]

_UNSUPPORTED_PROTOCOL = {1, 132}

_SPEAKS_311: set[tuple[str, int]] = set()
"""Brokers (host, port) this process found to speak MQTT 3.1.1 only."""


@dataclasses.dataclass(frozen=True)
class MqttEndpoint:
    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str, setting: str = "mqtt_url") -> MqttEndpoint:
        """``mqtt://[user:pass@]host[:port]``, ``mqtts://`` for TLS; a ValueError names ``setting``."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("mqtt", "mqtts", "tcp", "ssl") or not parsed.hostname:
            raise ValueError(f"curvestream setting {setting}: expected mqtt://[user:pass@]host[:port] or "
                             f"mqtts://…, got {url!r}")
        tls = parsed.scheme in ("mqtts", "ssl")
        try:
            port = parsed.port or (8883 if tls else 1883)
        except ValueError:
            raise ValueError(f"curvestream setting {setting}: bad port in {url!r}") from None
        user = urllib.parse.unquote(parsed.username) if parsed.username else None
        password = urllib.parse.unquote(parsed.password) if parsed.password else None
        return cls(parsed.hostname, port, tls, user, password)


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    client_id: str
    keepalive_s: int = 60
    persistent: bool = False
    """Clean start off (and, on MQTT 5, ``session_expiry_s``): the broker keeps
    subscriptions and queued messages while the client is away."""
    session_expiry_s: int = 0
    manual_ack: bool = False
    will: tuple[str, bytes] | None = None
    """(topic, payload) published by the broker, retained, if the client vanishes."""
    max_inflight: int = 20
    receive_maximum: int = 0
    buffered_reads: bool = False
    """Read the socket 64 KiB at a time (:class:`BufferedReadClient`): paho reads a
    packet with three or more ``recv`` calls, which costs more than a small
    message's handling when thousands arrive each second (a bridge)."""
    """MQTT 5: how many QoS 1 messages the broker may send before the first is
    acknowledged (the CONNECT's Receive Maximum); 0: the broker's own limit."""
    ca_file: str = ""
    tls_insecure: bool = False
    connack_timeout_s: float = 4.0
    """An MQTT 5 CONNECT unanswered this long means the broker speaks 3.1.1 only."""


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


@dataclasses.dataclass
class Callbacks:
    """paho (CallbackAPIVersion 2) callbacks of the caller; None leaves one unset."""

    on_connect: Callable[..., None] | None = None
    on_disconnect: Callable[..., None] | None = None
    on_message: Callable[..., None] | None = None
    on_subscribe: Callable[..., None] | None = None
    on_connect_fail: Callable[[OSError | None], None] | None = None
    """A connection attempt failed before any MQTT answer, with the socket's error
    (``ConnectionRefusedError``: nothing listens at the broker's address)."""


class BufferedReadClient(paho.Client):
    """A paho client that reads its socket in large pieces and hands paho's
    small reads out of that buffer. ``loop_read`` returns only once the buffer
    is empty, so nothing waits in it for a ``select`` that would never fire."""

    _BUFFER = 1 << 16

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._buffer = memoryview(b"")
        self._buffered_sock: object = None

    def _sock_recv(self, bufsize: int) -> bytes:
        if self._buffered_sock is not self._sock:  # a new connection: nothing of the old one is kept
            self._buffer, self._buffered_sock = memoryview(b""), self._sock
        if not self._buffer:
            data = super()._sock_recv(self._BUFFER)
            if len(data) <= bufsize:
                return data
            self._buffer = memoryview(data)
        out, self._buffer = self._buffer[:bufsize], self._buffer[bufsize:]
        return bytes(out)

    def loop_read(self, max_packets: int = 1) -> paho.MQTTErrorCode:
        rc = super().loop_read(max_packets)
        while rc == paho.MQTTErrorCode.MQTT_ERR_SUCCESS and self._buffer and self._sock is not None:
            again = self._packet_read()
            if again > 0:
                return self._loop_rc_handle(again)
        return rc


class MqttConnection:
    """A paho client that connects in the background and reconnects for ever.

    ``protocol="auto"`` starts with MQTT 5; :meth:`downgrade_if_needed`, called
    periodically by the owner while it is not connected, switches to 3.1.1 when
    the broker turned out not to speak 5.
    """

    def __init__(self, endpoint: MqttEndpoint, options: SessionOptions, callbacks: Callbacks,
                 protocol: Protocol = "auto", clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoint = endpoint
        self.options = options
        self._callbacks = callbacks
        self._requested = protocol
        speaks_311 = protocol == "3.1.1" or (protocol == "auto" and (endpoint.host, endpoint.port) in _SPEAKS_311)
        self._protocol = paho.MQTTv311 if speaks_311 else paho.MQTTv5
        self._clock = clock
        self._lock = threading.Lock()
        self.handshake = HandshakeWatch(clock, options.connack_timeout_s)
        self.client: paho.Client | None = None

    @property
    def mqtt5(self) -> bool:
        return self._protocol == paho.MQTTv5

    @property
    def protocol_name(self) -> str:
        return "5" if self.mqtt5 else "3.1.1"

    def start(self) -> paho.Client:
        client = self._make_client()
        kwargs: dict[str, Any] = {}
        if self.mqtt5:
            kwargs["clean_start"] = not self.options.persistent
            props = Properties(PacketTypes.CONNECT)
            if self.options.persistent:
                props.SessionExpiryInterval = self.options.session_expiry_s
            if self.options.receive_maximum:
                props.ReceiveMaximum = min(self.options.receive_maximum, 65_535)
            if self.options.persistent or self.options.receive_maximum:
                kwargs["properties"] = props
        client.connect_async(self.endpoint.host, self.endpoint.port, keepalive=self.options.keepalive_s, **kwargs)
        with self._lock:
            self.client = client
        client.loop_start()
        return client

    def _make_client(self) -> paho.Client:
        opts = self.options
        kwargs: dict[str, Any] = {} if self.mqtt5 else {"clean_session": not opts.persistent}
        make = BufferedReadClient if opts.buffered_reads else paho.Client
        client = make(CallbackAPIVersion.VERSION2, client_id=opts.client_id, protocol=self._protocol,
                      manual_ack=opts.manual_ack, **kwargs)
        if self.endpoint.username is not None:
            client.username_pw_set(self.endpoint.username, self.endpoint.password)
        if self.endpoint.tls:
            client.tls_set(ca_certs=opts.ca_file or None, cert_reqs=ssl.CERT_REQUIRED)
            if opts.tls_insecure:
                client.tls_insecure_set(True)
        if opts.will is not None:
            client.will_set(opts.will[0], opts.will[1], qos=1, retain=True)
        client.reconnect_delay_set(min_delay=1, max_delay=5)
        client.max_inflight_messages_set(opts.max_inflight)
        client.connect_timeout = 3.0
        client.on_pre_connect = self.handshake.pre_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_connect = self._on_connect
        cb = self._callbacks
        if cb.on_disconnect is not None:
            client.on_disconnect = cb.on_disconnect
        if cb.on_message is not None:
            client.on_message = cb.on_message
        if cb.on_subscribe is not None:
            client.on_subscribe = cb.on_subscribe
        return client

    def _on_connect(self, client: paho.Client, userdata: Any, flags: paho.ConnectFlags, reason_code: ReasonCode,
                    properties: Properties | None) -> None:
        self.handshake.connack(reason_code)
        if self.handshake.refused and self._requested == "auto":
            # the owner switches to 3.1.1 with a new client and waits for this one's thread, which
            # sleeps through paho's reconnect delay (1 s): a short one makes the switch immediate
            client.reconnect_delay_set(min_delay=0.05, max_delay=5)  # type: ignore[arg-type]  # paho says int, sleeps a float
        if self._callbacks.on_connect is not None:
            self._callbacks.on_connect(client, userdata, flags, reason_code, properties)

    def _on_connect_fail(self, client: paho.Client, userdata: Any) -> None:
        self.handshake.connect_failed()
        if self._callbacks.on_connect_fail is not None:
            error = sys.exc_info()[1]  # paho calls this inside its ``except OSError`` around the connect
            self._callbacks.on_connect_fail(error if isinstance(error, OSError) else None)

    def downgrade_if_needed(self, connected: bool) -> bool:
        """Switch an unanswered MQTT 5 connection to 3.1.1; True when it did."""
        if connected or not self.mqtt5 or self._requested != "auto" or not self.handshake.should_downgrade():
            return False
        self.handshake = HandshakeWatch(self._clock, self.options.connack_timeout_s)
        self._discard(self.client)
        self._protocol = paho.MQTTv311
        _SPEAKS_311.add((self.endpoint.host, self.endpoint.port))  # the next connection of this process knows
        log.info("curvestream: broker %s:%s does not speak MQTT 5; using MQTT 3.1.1 (%s)",
                 self.endpoint.host, self.endpoint.port, self.options.client_id)
        self.start()
        return True

    def stop(self, wait_disconnected: Callable[[], bool] | None = None, timeout: float = 2.0) -> None:
        """Disconnect cleanly (the broker then drops the Will) and stop the network thread."""
        client = self.client
        if client is None:
            return
        try:
            client.disconnect()
        except Exception:
            pass
        if wait_disconnected is not None:
            deadline = self._clock() + timeout
            while not wait_disconnected() and self._clock() < deadline:
                time.sleep(0.01)
        client.loop_stop()
        with self._lock:
            if self.client is client:  # no cycle keeps the client (and its sockets) alive: freed now, closed
                self.client = None

    def abandon(self) -> None:
        """In a forked child: forget the parent's socket and thread without touching them."""
        with self._lock:
            self.client = None

    @staticmethod
    def _discard(client: paho.Client | None) -> None:
        if client is None:
            return
        client.loop_stop()
        try:
            client.disconnect()
        except Exception:
            pass
