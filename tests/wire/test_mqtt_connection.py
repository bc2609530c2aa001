"""The one MQTT connection helper: URLs, the MQTT 5 → 3.1.1 fallback, session options."""

from __future__ import annotations

import pytest

from curvestream_wire.mqtt import Callbacks, HandshakeWatch, MqttConnection, MqttEndpoint, SessionOptions


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("url, expected", [
    ("mqtt://127.0.0.1", MqttEndpoint("127.0.0.1", 1883, False, None, None)),
    ("mqtts://u:p%3Aw@broker:9000", MqttEndpoint("broker", 9000, True, "u", "p:w")),
    ("ssl://broker", MqttEndpoint("broker", 8883, True, None, None)),
])
def test_a_broker_url_gives_host_port_tls_and_credentials(url, expected):
    assert MqttEndpoint.parse(url) == expected


@pytest.mark.parametrize("url", ["http://broker", "mqtt://", "mqtt://broker:notaport"])
def test_a_bad_broker_url_is_refused_naming_the_setting(url):
    with pytest.raises(ValueError, match="CURVESTREAM_MQTT_URL"):
        MqttEndpoint.parse(url, "CURVESTREAM_MQTT_URL")


def test_an_unanswered_mqtt5_connect_means_the_broker_speaks_only_3_1_1():
    clock = _Clock()
    watch = HandshakeWatch(clock, connack_timeout_s=4.0)
    watch.pre_connect()
    clock.now = 3.9
    assert not watch.should_downgrade()
    clock.now = 4.1
    assert watch.should_downgrade()


def test_a_failed_tcp_connect_is_not_taken_for_an_old_broker():
    clock = _Clock()
    watch = HandshakeWatch(clock, connack_timeout_s=1.0)
    watch.pre_connect()
    watch.connect_failed()
    clock.now = 10
    assert not watch.should_downgrade()


def test_a_connection_falls_back_to_3_1_1_only_when_asked_for_auto():
    clock = _Clock()
    endpoint = MqttEndpoint("127.0.0.1", 1, False, None, None)  # nothing listens: connects never complete
    auto = MqttConnection(endpoint, SessionOptions("cs-test-auto", connack_timeout_s=1.0), Callbacks(), "auto", clock)
    pinned = MqttConnection(endpoint, SessionOptions("cs-test-five", connack_timeout_s=1.0), Callbacks(), "5", clock)
    try:
        for conn in (auto, pinned):
            conn.handshake.pre_connect()
        clock.now = 2.0
        assert pinned.downgrade_if_needed(connected=False) is False
        assert pinned.protocol_name == "5"
        assert auto.downgrade_if_needed(connected=True) is False  # a live connection is never switched
        assert auto.downgrade_if_needed(connected=False) is True
        assert auto.protocol_name == "3.1.1"
    finally:
        auto.stop()
        pinned.stop()
