"""The trainer's MQTT link against real brokers: Mosquitto (MQTT 5) and amqtt
(MQTT 3.1.1 only, where ``auto`` falls back)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from curvestream_wire.topics import Topics
from curvestream_wire.v1 import run_pb2

from curvestream.mqtt import MqttLink, client_id_for
from curvestream.settings import Settings
from servers import Mosquitto, wait_until


class _Commits:
    """What the link hands on: the commits, and each time it came up."""

    def __init__(self) -> None:
        self.commits: list[run_pb2.Commit] = []
        self.ups: list[MqttLink] = []
        self.lock = threading.Lock()

    def on_commit(self, commit: run_pb2.Commit) -> None:
        with self.lock:
            self.commits.append(commit)

    def on_connected(self, link: MqttLink) -> None:
        with self.lock:
            self.ups.append(link)

    def stored(self) -> list[tuple[int, int]]:
        with self.lock:
            return [(r.first, r.last) for c in self.commits for r in c.stored]


@pytest.fixture
def links(tmp_path) -> Iterator:
    started: list[MqttLink] = []

    def make(url: str, seen: _Commits | None = None, **settings: object) -> MqttLink:
        seen = seen or _Commits()
        s = Settings(mqtt_url=url, spool_dir=str(tmp_path), bridge_url="", **settings)  # type: ignore[arg-type]
        link = MqttLink(s, client_id_for(os.urandom(16)), on_commit=seen.on_commit, on_connected=seen.on_connected,
                        will=(Topics.status("p", f"r-{len(started)}"), b"lost"))
        started.append(link)
        return link

    yield make
    for link in started:
        link.stop()


def _up(link: MqttLink, timeout: float = 20) -> None:
    def connected() -> bool:
        link.poll()  # as the uploader does: performs a pending protocol downgrade
        return link.connected

    wait_until(connected, timeout, f"the link to come up ({link.last_error or 'no error yet'})")


def _commit(producer: bytes, seq: int) -> bytes:
    commit = run_pb2.Commit(producer_id=producer, bridge_id="test")
    commit.stored.add(first=seq, last=seq)
    return commit.SerializeToString()


def test_a_link_connects_in_the_background_and_runs_the_on_connected_hook(mosquitto, links):
    seen = _Commits()
    link = links(mosquitto.url, seen)
    assert not link.connected
    link.start()
    _up(link)
    assert seen.ups == [link]
    assert link.protocol_name == "5" and link.last_error == ""


def test_a_commit_published_on_the_watched_topic_reaches_on_commit(mosquitto, links):
    producer = os.urandom(16)
    seen = _Commits()
    link = links(mosquitto.url, seen)
    link.watch_commits(producer)  # before the connect: subscribed at connect, up only once the broker confirmed
    link.start()
    _up(link)
    bridge = links(mosquitto.url)
    bridge.start()
    _up(bridge)
    assert bridge.publish_and_wait(Topics.commit(os.urandom(16)), _commit(b"x", 99), retain=False, timeout=5)
    assert bridge.publish_and_wait(Topics.commit(producer), b"\xff not a commit", retain=False, timeout=5)
    assert bridge.publish_and_wait(Topics.commit(producer), _commit(producer, 7), retain=False, timeout=5)
    wait_until(lambda: seen.stored() == [(7, 7)], 10, "the commit")
    assert seen.commits[0].producer_id == producer, "another producer's commit and garbage were not handed on"


def test_a_producer_watched_after_the_connect_is_subscribed_at_once(mosquitto, links):
    seen = _Commits()
    link = links(mosquitto.url, seen)
    link.start()
    _up(link)
    producer = os.urandom(16)
    link.watch_commits(producer)
    bridge = links(mosquitto.url)
    bridge.start()
    _up(bridge)

    def committed() -> bool:  # the SUBSCRIBE may still be on its way: publish until it lands
        bridge.publish(Topics.commit(producer), _commit(producer, 3))
        time.sleep(0.1)
        return seen.stored()[:1] == [(3, 3)]

    wait_until(committed, 10, "the commit for the late producer")


def test_the_link_says_when_the_broker_went_away_and_comes_back_by_itself(tmp_path, links):
    broker = Mosquitto(tmp_path / "mosquitto")
    broker.start()
    try:
        producer = os.urandom(16)
        seen = _Commits()
        link = links(broker.url, seen)
        link.watch_commits(producer)
        link.start()
        _up(link)
        up_at = link.down_since
        before_stop = time.monotonic()
        broker.stop()
        wait_until(lambda: not link.connected, 10, "the link to notice the broker is gone")
        assert before_stop <= link.down_since <= time.monotonic() and link.down_since > up_at
        assert link.last_error, "the disconnect's reason is kept"
        assert link.publish(Topics.points("p", "r"), b"batch") is False, "nothing is handed to a dead connection"
        wait_until(lambda: link.refused, 20, "a reconnect refused: nothing listens at the broker's address")
        down_since = link.down_since

        broker.start()
        _up(link, timeout=30)
        assert len(seen.ups) == 2, "the on-connected hook ran again (the run re-announces itself)"
        assert link.down_since == down_since, "down_since tells when the last outage began"
        assert not link.refused
        bridge = links(broker.url)
        bridge.start()
        _up(bridge)
        assert bridge.publish_and_wait(Topics.commit(producer), _commit(producer, 5), retain=False, timeout=5)
        wait_until(lambda: seen.stored() == [(5, 5)], 10, "a commit after the reconnect")
    finally:
        broker.stop()


def test_a_link_to_an_address_where_nothing_listens_says_it_was_refused_and_tells_its_owner(links):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    link = links(f"mqtt://127.0.0.1:{port}")
    changed = threading.Event()
    link._on_change = changed.set
    link.start()
    wait_until(changed.is_set, 20, "the owner told of the refusal (it chooses its channel again)")
    assert link.refused and not link.connected
    assert link.last_error == "connection refused"


def test_a_stopped_link_is_down_and_publishes_nothing(mosquitto, links):
    link = links(mosquitto.url)
    link.start()
    _up(link)
    link.stop()
    assert not link.connected
    assert link.publish(Topics.points("p", "r"), b"batch") is False
    assert link.publish_and_wait(Topics.points("p", "r"), b"batch", retain=False, timeout=1) is False


def test_auto_falls_back_to_mqtt_3_1_1_on_a_broker_that_speaks_only_that(amqtt, links):
    producer = os.urandom(16)
    seen = _Commits()
    link = links(amqtt.url, seen, mqtt_protocol="auto")
    link.watch_commits(producer)
    link.start()
    _up(link, timeout=30)
    assert link.protocol_name == "3.1.1"
    assert seen.ups == [link]
    bridge = links(amqtt.url, mqtt_protocol="3.1.1")
    bridge.start()
    _up(bridge)
    assert bridge.publish_and_wait(Topics.commit(producer), _commit(producer, 2), retain=False, timeout=5)
    wait_until(lambda: seen.stored() == [(2, 2)], 10, "the commit over MQTT 3.1.1")
