"""Third-party libraries' warnings (the embedded amqtt broker's) become counted,
rate-limited curvestream lines without tracebacks."""

from __future__ import annotations

import logging

import pytest

from curvestream_bridge.library_logs import LIBRARIES, route_library_logs
from curvestream_bridge.metrics import LIBRARY_LOG_LINES, Metrics


@pytest.fixture
def metrics():
    yield Metrics()
    for name in LIBRARIES:  # as the test found them
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)


def test_a_flood_of_amqtt_warnings_and_tracebacks_is_counted_and_said_once(caplog, metrics):
    route_library_logs(metrics)
    amqtt = logging.getLogger("amqtt.mqtt.protocol.handler")
    with caplog.at_level(logging.INFO, logger="curvestream"):
        for packet in range(300):
            amqtt.warning("Timeout waiting for PUBACK for packet ID %d", packet)
            try:
                raise TimeoutError(f"Timeout waiting for PUBACK for packet ID {packet}")
            except TimeoutError:
                logging.getLogger("amqtt.broker").exception("Task failed and will be skipped: <Task %d>", packet)
    lines = [r for r in caplog.records if r.name.startswith("curvestream")]
    assert [r.getMessage() for r in lines] == [
        "curvestream: amqtt warning: Timeout waiting for PUBACK for packet ID 0",
        "curvestream: amqtt error: Task failed and will be skipped: <Task 0> (TimeoutError: Timeout waiting for "
        "PUBACK for packet ID 0)",
    ]
    assert all(r.exc_info is None for r in lines), "no traceback"
    assert metrics.get(LIBRARY_LOG_LINES, library="amqtt", level="warning") == 300
    assert metrics.get(LIBRARY_LOG_LINES, library="amqtt", level="error") == 300
    assert "curvestream_library_log_lines_total" in metrics.render()


def test_amqtt_lines_about_ordinary_connections_are_counted_but_not_shown(caplog, metrics):
    """A real embedded broker and a client that starts with MQTT 5 and a Will, as a trainer in `auto` mode does."""
    import paho.mqtt.client as paho

    from curvestream_bridge.embedded import EmbeddedBroker
    from servers import free_port, wait_until

    def counted() -> float:
        return sum(metrics.get(LIBRARY_LOG_LINES, library="amqtt", level=level) for level in ("warning", "error"))

    route_library_logs(metrics)
    broker = EmbeddedBroker("127.0.0.1", free_port())
    broker.start()
    try:
        with caplog.at_level(logging.DEBUG, logger="curvestream"):
            for _ in range(3):
                client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
                client.will_set("curvestream/v1/p/r/status", b"lost", qos=1, retain=True)
                client.connect("127.0.0.1", broker.port)
                client.loop_start()
                wait_until(lambda: counted() > 0, 10, "amqtt's answer")
                client.loop_stop()
                client.disconnect()
    finally:
        broker.stop()
    shown = [r.getMessage() for r in caplog.records if r.name.startswith("curvestream") and r.levelno >= logging.INFO]
    assert shown == []
    quiet = [r.getMessage() for r in caplog.records if r.name.startswith("curvestream")]
    assert any("Will flag set" in m or "Invalid connection" in m for m in quiet), quiet
    assert counted() >= 3
