"""Bridges on one host and one broker (real Mosquitto, bridge processes with
their own stores): each makes its own MQTT client id and keeps it across
restarts, so both stay connected and each gets every point; two that are given
one id say so in words; a bridge new to a broker does not list the runs it
learns only from retained messages."""

from __future__ import annotations

import pathlib

import curvestream
from helpers import get_json, prometheus_value
from servers import BridgeProcess, wait_until


def bridge(root: pathlib.Path, name: str, mqtt_url: str, **settings: str) -> BridgeProcess:
    server = BridgeProcess(root / name, f"duckdb:///{root / name / 'store.duckdb'}", mqtt_url, **settings)
    if "mqtt_client_id" not in settings:
        del server.settings["mqtt_client_id"]  # CURVESTREAM_MQTT_CLIENT_ID unset: the default
    return server


def runs(server: BridgeProcess, project: str) -> list[dict]:
    return get_json(server.url, "/api/v1/runs", project=project)["runs"]


def points(server: BridgeProcess, project: str) -> int:
    return sum(r["points"] for r in runs(server, project))


def train(mqtt_url: str, spool: pathlib.Path, project: str, steps: int, bridge_url: str = "") -> None:
    with curvestream.init(project=project, run="r", mqtt_url=mqtt_url, bridge_url=bridge_url, spool_dir=str(spool),
                          flush_interval_ms=50) as run:
        for step in range(steps):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
    assert run.finish().complete


def test_two_bridges_on_one_broker_stay_connected_and_each_keeps_its_id_across_a_restart(mosquitto, tmp_path):
    a, b = bridge(tmp_path, "a", mosquitto.url), bridge(tmp_path, "b", mosquitto.url)
    a.start()
    b.start()
    try:
        train(mosquitto.url, tmp_path / "spool1", "coexist", 5_000)
        wait_until(lambda: points(a, "coexist") == 5_000 and points(b, "coexist") == 5_000, 60,
                   "every point in both bridges")
        for server in (a, b):
            assert prometheus_value(server.url, "curvestream_mqtt_disconnects_total") == 0, server.log_tail()
            assert prometheus_value(server.url, "curvestream_mqtt_connected") == 1
        id_a, id_b = ((tmp_path / n / "mqtt-client-id").read_text().strip() for n in ("a", "b"))
        assert id_a != id_b and id_a.startswith("curvestream-bridge-") and id_b.startswith("curvestream-bridge-")

        a.stop()  # its persistent session keeps what is published meanwhile
        train(mosquitto.url, tmp_path / "spool2", "while-a-was-down", 1_000, bridge_url=b.url)
        a.start()
        assert (tmp_path / "a" / "mqtt-client-id").read_text().strip() == id_a
        wait_until(lambda: points(a, "while-a-was-down") == 1_000, 60, "what the broker kept for the restarted bridge")
        assert prometheus_value(b.url, "curvestream_mqtt_disconnects_total") == 0, b.log_tail()
    finally:
        a.stop()
        b.stop()


def test_two_bridges_given_one_client_id_say_that_one_took_the_other_over(mosquitto, tmp_path):
    a = bridge(tmp_path, "a", mosquitto.url, mqtt_client_id="one-id")
    b = bridge(tmp_path, "b", mosquitto.url, mqtt_client_id="one-id")
    a.start()
    b.start(timeout=60)
    try:
        words = "another client is connected with this bridge's MQTT client id 'one-id'"
        wait_until(lambda: any(words in s.log_path.read_text() for s in (a, b)), 60, "the takeover said in words")
        taken = [s for s in (a, b) if words in s.log_path.read_text()]
        assert "share one id and knock each other off" in taken[0].log_path.read_text()
        assert prometheus_value(taken[0].url, "curvestream_mqtt_takeovers_total") >= 1
    finally:
        a.stop()
        b.stop()


def test_a_bridge_new_to_a_broker_does_not_list_runs_it_knows_only_from_retained_messages(mosquitto, tmp_path):
    first = bridge(tmp_path, "first", mosquitto.url)
    first.start()
    try:
        train(mosquitto.url, tmp_path / "spool1", "retained", 500)  # its meta and status stay on the broker
        wait_until(lambda: [r["state"] for r in runs(first, "retained")] == ["finished"], 30, "the finished run")
    finally:
        first.stop()
    second = bridge(tmp_path, "second", mosquitto.url)
    second.start()  # subscribed: the broker has handed it the retained meta and status
    try:
        live = curvestream.init(project="live", run="quiet", mqtt_url=mosquitto.url, bridge_url="",
                                spool_dir=str(tmp_path / "spool2"))
        try:  # a run that starts while the bridge listens is listed at once, even without a point
            wait_until(lambda: [r["points"] for r in runs(second, "live")] == [0], 30, "the live run listed")
        finally:
            live.finish()
        assert runs(second, "retained") == []  # the retained messages came before the live one: held back
        assert prometheus_value(second.url, "curvestream_retained_runs_held") >= 1
    finally:
        second.stop()
