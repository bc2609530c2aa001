"""The embedded broker of ``curvestream up``: amqtt (MQTT 3.1.1, pure Python)
in its own thread and event loop, on loopback, with anonymous access.

amqtt gives up on a QoS 1 delivery when its PUBACK takes longer than 5 s (a
constant in amqtt 0.12, ``Timeout waiting for PUBACK``), drops the message from
the session and logs a traceback. The bridge acknowledges only after the store
write, and a busy machine makes that slower than 5 s: every such delivery would
be lost to the broker and sent again from the trainer's spool. Here a delivery
waits for its PUBACK as long as the connection lives, as MQTT 3.1.1 has it
(the keep-alive ends a dead connection; the session then re-sends). amqtt's own
log lines go through :mod:`curvestream_bridge.library_logs`.

amqtt 0.12 reads an MQTT 5 CONNECT as if it were 3.1.1; one that carries a
Will (every trainer's) fails that reading ("Will flag set, but will
topic/message not present in payload") and the connection is closed without
an answer, so a client would wait for its CONNACK timeout before trying 3.1.1,
and a trainer killed meanwhile would stay unknown to the bridge. Here the protocol
level is read first: anything but 3.1.1 gets a CONNACK "unacceptable protocol
version" at once, which an MQTT 5 client takes as "speak 3.1.1"
(:mod:`curvestream_wire.mqtt`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

__all__ = ["EmbeddedBroker", "patient_handler", "protocol_level"]

MQTT_311_LEVEL = 4
CONNACK_UNACCEPTABLE_PROTOCOL = b"\x20\x02\x00\x01"  # CONNACK, no session, return code 1


def protocol_level(packet: bytes) -> int | None:
    """The protocol level of a whole CONNECT packet (fixed header included), None if it is not one.

    >>> protocol_level(bytes([0x10, 10, 0, 4]) + b"MQTT" + bytes([5, 2, 0, 60]))
    5
    >>> protocol_level(bytes([0x30, 2, 0, 0])) is None
    True
    """
    if not packet or packet[0] >> 4 != 1:
        return None
    at = 1
    while at < len(packet) and packet[at] & 0x80:  # the remaining length's bytes
        at += 1
    at += 1
    if len(packet) < at + 2:
        return None
    name_len = int.from_bytes(packet[at:at + 2], "big")
    level_at = at + 2 + name_len
    return packet[level_at] if level_at < len(packet) else None

log = logging.getLogger("curvestream.bridge.broker")


def patient_handler() -> bool:
    """Make amqtt's broker wait for a subscriber's PUBACK without a deadline, and answer
    an MQTT 5 CONNECT at once (see the module's docstring).

    amqtt builds its protocol handlers from the module-level name
    ``amqtt.broker.BrokerProtocolHandler`` and has no setting for the wait: the
    name is pointed at a subclass whose outgoing QoS 1 flow has no timeout.
    False (and amqtt unchanged) when amqtt is not the version this was written for."""
    import amqtt.broker
    from amqtt.adapters import BufferReader
    from amqtt.errors import MQTTError
    from amqtt.mqtt.constants import QOS_1
    from amqtt.mqtt.protocol.broker_handler import BrokerProtocolHandler
    from amqtt.session import OUTGOING

    if getattr(amqtt.broker.BrokerProtocolHandler, "curvestream_patient", False):
        return True
    if not all(hasattr(BrokerProtocolHandler, n) for n in ("_handle_qos1_message_flow", "_send_packet",
                                                           "init_from_connect")):
        log.warning("curvestream: this amqtt is not the one the embedded broker was made for: its 5 s PUBACK "
                    "timeout stays, and MQTT 5 clients wait before they fall back to 3.1.1")
        return False

    class PatientBrokerProtocolHandler(BrokerProtocolHandler):
        curvestream_patient = True

        async def _handle_qos1_message_flow(self, app_message: Any) -> None:
            if app_message.direction != OUTGOING or app_message.qos != QOS_1 or app_message.puback_packet \
                    or self.session is None or app_message.packet_id is None:
                await super()._handle_qos1_message_flow(app_message)
                return
            self.session.inflight_out.setdefault(app_message.packet_id, app_message)
            retry = app_message.publish_packet is not None
            publish_packet = app_message.build_publish_packet(dup=True) if retry \
                else app_message.build_publish_packet()
            await self._send_packet(publish_packet)
            app_message.publish_packet = publish_packet
            waiter: asyncio.Future = asyncio.Future()
            self._puback_waiters[app_message.packet_id] = waiter
            try:
                app_message.puback_packet = await waiter  # cancelled when the connection closes
            finally:
                self._puback_waiters.pop(app_message.packet_id, None)
                self.session.inflight_out.pop(app_message.packet_id, None)

        @classmethod
        async def init_from_connect(cls, reader: Any, writer: Any, plugins_manager: Any, loop: Any = None) -> Any:
            """Refuse a protocol other than 3.1.1 at once, before amqtt reads the CONNECT as 3.1.1."""
            packet = await _read_packet(reader)
            level = protocol_level(packet)
            if level is not None and level != MQTT_311_LEVEL:
                writer.write(CONNACK_UNACCEPTABLE_PROTOCOL)
                await writer.drain()
                await writer.close()
                peer = writer.get_peer_info()
                # amqtt's own words for it, which the bridge's log routing knows as an ordinary connection
                raise MQTTError(f"Invalid protocol from {peer}: {level} (MQTT 3.1.1 only; refused at once)")
            return await super().init_from_connect(BufferReader(packet), writer, plugins_manager, loop=loop)

    amqtt.broker.BrokerProtocolHandler = PatientBrokerProtocolHandler
    return True


async def _read_packet(reader: Any) -> bytes:
    """One whole MQTT packet from an amqtt reader: the fixed header, then what its length says."""
    from amqtt.codecs_amqtt import read_or_raise

    head = bytearray(await read_or_raise(reader, 1))
    length, multiplier = 0, 1
    for _ in range(4):
        byte = (await read_or_raise(reader, 1))[0]
        head.append(byte)
        length += (byte & 0x7F) * multiplier
        if not byte & 0x80:
            break
        multiplier *= 128
    return bytes(head) + (await read_or_raise(reader, length) if length else b"")


class _QuietPayload(bytes):
    """A payload with a short repr. amqtt 0.12 builds a debug f-string of every broadcast, payload
    included, even with debug logging off: the repr of a batch of 100s of KB is over half of the
    broker's CPU time under load (py-spy, bench/README.md)."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes>"


def _amqtt_loop_error(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The broker's loop runs amqtt's code only: what escapes it (e.g. amqtt 0.12's "dictionary
    changed size during iteration" when clients connect at once; the client connects again) is
    amqtt's line, routed like its other warnings."""
    logging.getLogger("amqtt.loop").error("%s", context.get("message", "error in the broker's loop"),
                                          exc_info=context.get("exception"))


def _has_wildcard(topic_filter: str) -> bool:
    return "+" in topic_filter or "#" in topic_filter


def _fleet_broker_class() -> type:
    """amqtt's Broker, made to serve a fleet: what it found by scanning every topic filter
    (on each message) or every retained message (on each subscription) it finds by looking
    up the topic itself, scanning only the filters with wildcards (the bridge's few). With a
    thousand trainers, each subscribed to its own commit topic, the scans were ~2,000 filter
    matches per message and ~2,000 retained messages per subscription (bench/README.md).
    A client gets the retained messages of its own subscriptions only. Delivery itself (to
    whom, offline sessions, access checks) stays amqtt's own."""
    from amqtt.broker import Broker
    from amqtt.contexts import Action

    class FleetBroker(Broker):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._wildcards: list[str] | None = None  # filters with + or #, recomputed after a change
            self._filters_of: dict[str, set[str]] = {}  # client id -> its filters

        async def _broadcast_message(self, session: Any, topic: str, data: Any, force_qos: Any = None) -> None:
            if data is not None and len(data) > 256:
                data = _QuietPayload(data)
            await super()._broadcast_message(session, topic, data, force_qos)

        async def add_subscription(self, subscription: Any, session: Any) -> Any:
            granted = await super().add_subscription(subscription, session)
            if granted != 0x80:
                self._filters_of.setdefault(session.client_id, set()).add(subscription[0])
                self._wildcards = None
            return granted

        def _del_subscription(self, a_filter: str, session: Any) -> Any:
            self._filters_of.get(session.client_id, set()).discard(a_filter)
            self._wildcards = None
            return super()._del_subscription(a_filter, session)

        async def _del_all_subscriptions(self, session: Any) -> None:
            for topic_filter in self._filters_of.pop(session.client_id, set()):
                self._del_subscription(topic_filter, session)
                if not self._subscriptions.get(topic_filter, True):
                    del self._subscriptions[topic_filter]
            self._wildcards = None

        def _matching_filters(self, topic: str) -> list[str]:
            if self._wildcards is None:
                self._wildcards = [f for f in self._subscriptions if _has_wildcard(f)]
            exact = [topic] if topic in self._subscriptions else []
            return exact + [f for f in self._wildcards if self._matches(topic, f)]

        async def _run_broadcast(self, running_tasks: Any) -> None:
            broadcast = await self._broadcast_queue.get()
            topic = broadcast["topic"]
            for topic_filter in self._matching_filters(topic):
                for target, sub_qos in list(self._subscriptions.get(topic_filter, ())):
                    qos = broadcast.get("qos", sub_qos)
                    if not await self._topic_filtering(target, topic=topic, action=Action.RECEIVE):
                        continue
                    if target.transitions.state != "connected":
                        # kept for a persistent session that is away (QoS 1, 2), as MQTT has it
                        if not target.clean_session and qos in (1, 2) and not target.is_anonymous:
                            await self._retain_broadcast_message(broadcast, qos, target)
                        continue
                    handler = self._get_handler(target)
                    if handler:
                        running_tasks.append(asyncio.ensure_future(
                            handler.mqtt_publish(topic, broadcast["data"], qos, retain=False)))

        async def _publish_retained_messages_for_subscription(self, subscription: Any, session: Any) -> None:
            topic_filter, qos = subscription
            if topic_filter not in self._filters_of.get(session.client_id, ()):
                # amqtt calls this at each connect for every filter of every client: a new trainer got the
                # retained messages matching the bridge's wildcards (every run's meta and status), and the
                # awaits inside that loop let other clients change the filters under it ("dictionary changed
                # size during iteration"); only the session's own subscriptions have retained messages due
                return
            if _has_wildcard(topic_filter):
                await super()._publish_retained_messages_for_subscription(subscription, session)
                return
            retained = self._retained_messages.get(topic_filter)
            handler = self._get_handler(session)
            if retained is not None and handler is not None:
                await handler.mqtt_publish(retained.topic, retained.data, min(qos, retained.qos or qos), retain=True)

    return FleetBroker


class EmbeddedBroker:
    def __init__(self, host: str = "127.0.0.1", port: int = 1883) -> None:
        self.host = host
        self.port = port
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="curvestream-broker", daemon=True)

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def start(self, timeout: float = 15.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("embedded MQTT broker did not start")
        if self._error is not None:
            raise RuntimeError(f"embedded MQTT broker failed on {self.host}:{self.port}: {self._error}")

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        patient_handler()
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_amqtt_loop_error)
        self._stop = asyncio.Event()
        broker = _fleet_broker_class()({
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        })
        await broker.start()
        self._ready.set()
        await self._stop.wait()
        await broker.shutdown()

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)


def main(argv: list[str] | None = None) -> None:
    """``python -m curvestream_bridge.embedded --port N``: the embedded broker alone."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m curvestream_bridge.embedded")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    args = parser.parse_args(argv)
    from curvestream_bridge.library_logs import route_library_logs
    from curvestream_bridge.metrics import Metrics

    route_library_logs(Metrics())
    broker = EmbeddedBroker(args.host, args.port)
    broker.start()
    print(f"amqtt broker on {broker.url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    broker.stop()


if __name__ == "__main__":
    main()
