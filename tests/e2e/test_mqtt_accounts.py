"""The compose kit's locked-down broker on the real Mosquitto 2: no anonymous
access, trainer accounts made by ``curvestream mqtt add-user`` write only their
project's topics, and the bridge refuses a batch whose payload names another
run than its topic."""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Iterator

import paho.mqtt.client as mqtt
import pytest

from curvestream_wire.topics import Topics
from curvestream_wire.v1 import batch_pb2, run_pb2

import curvestream
from curvestream.mqtt_accounts import acl_block, password_line
from helpers import get_json, metric_counts, prometheus_value
from servers import Mosquitto, wait_until

COMPOSE_DIR = pathlib.Path(__file__).resolve().parents[2] / "compose"
BRIDGE = ("curvestream-bridge", "bridge-secret")
MNIST = ("trainer-mnist", "mnist-secret")


@pytest.fixture(scope="module")
def locked_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    """Mosquitto with compose/mosquitto/acl plus one trainer account of project mnist, as add-user writes it."""
    workdir = tmp_path_factory.mktemp("locked-mosquitto")
    passwd = workdir / "passwd"
    passwd.write_text(password_line(*BRIDGE) + "\n" + password_line(*MNIST) + "\n")
    acl = workdir / "acl"
    acl.write_text((COMPOSE_DIR / "mosquitto" / "acl").read_text() + "\n" + acl_block("mnist", MNIST[0]))
    server = Mosquitto(workdir / "broker", password_file=passwd, acl_file=acl)
    server.start()
    yield server
    server.stop()


def _client(broker: Mosquitto, account: tuple[str, str] | None, name: str) -> mqtt.Client:
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=name, protocol=mqtt.MQTTv5)
    if account is not None:
        client.username_pw_set(*account)
    return client


def _batch(project: str, run: str, producer: bytes, seq: int = 1) -> bytes:
    batch = batch_pb2.Batch(version=1, producer_id=producer, seq=seq, project=project, run=run)
    batch.scalars.add(key="loss", steps=[0, 1], wall_ns=[1, 2], values=[0.5, 0.25])
    return batch.SerializeToString()


def test_anonymous_and_wrong_password_clients_are_refused(locked_broker):
    for account in (None, (MNIST[0], "wrong")):
        client = _client(locked_broker, account, f"anon-{os.getpid()}")
        refused: list[bool] = []
        client.on_connect = lambda c, u, f, rc, p, refused=refused: refused.append(rc.is_failure)
        client.connect("127.0.0.1", locked_broker.port)
        client.loop_start()
        try:
            wait_until(lambda refused=refused: refused, 20, "the broker's answer to the connect")
        finally:
            client.loop_stop()
            client.disconnect()
        assert refused == [True], account


def test_a_trainer_account_streams_its_own_project_but_cannot_publish_into_another(
        locked_broker, tmp_path, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", locked_broker.url_for(*BRIDGE))
    # the client's whole protocol works with the account: points, meta, status, Last Will, commits
    with curvestream.init(project="mnist", id="r1", mqtt_url=locked_broker.url_for(*MNIST),
                          spool_dir=str(spool_dir)) as run:
        for step in range(100):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
    assert run._report is not None and run._report.complete, run._report
    assert metric_counts(bridge.url, "mnist", "r1") == {"loss": 100}

    intruder = _client(locked_broker, MNIST, "intruder")
    answers: list[int] = []
    acked = threading.Event()

    def on_publish(client, userdata, mid, reason_code, properties):
        answers.append(reason_code.value)
        acked.set()

    intruder.on_publish = on_publish
    intruder.connect("127.0.0.1", locked_broker.port)
    intruder.loop_start()
    try:
        intruder.publish(Topics.points("cifar", "r1"), _batch("cifar", "r1", os.urandom(16)), qos=1)
        assert acked.wait(20)
        acked.clear()
        # a batch of its own project, published after: once it is stored, the refused one would have been too
        intruder.publish(Topics.points("mnist", "r2"), _batch("mnist", "r2", os.urandom(16)), qos=1)
        assert acked.wait(20)
    finally:
        intruder.loop_stop()
        intruder.disconnect()
    assert answers == [135, 0]  # 0x87 Not authorized, then success
    wait_until(lambda: metric_counts(bridge.url, "mnist", "r2") == {"loss": 2}, 60, "the allowed batch stored")
    assert "cifar" not in {r["project"] for r in get_json(bridge.url, "/api/v1/runs")["runs"]}


def test_the_bridge_refuses_a_batch_whose_payload_names_another_run_than_its_topic(
        locked_broker, tmp_path, bridge_factory):
    # (on an MQTT 5 shared subscription, as several bridges use it: the ACL lets the bridge account share)
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", locked_broker.url_for(*BRIDGE),
                            mqtt_shared_group="bridges")
    producer = os.urandom(16)
    commits: list[run_pb2.Commit] = []
    trainer = _client(locked_broker, MNIST, "mismatch")

    def on_message(client, userdata, message):
        commit = run_pb2.Commit()
        commit.ParseFromString(message.payload)
        commits.append(commit)

    trainer.on_message = on_message
    trainer.connect("127.0.0.1", locked_broker.port)
    trainer.loop_start()
    try:
        trainer.subscribe(Topics.commit(producer), qos=1)
        wait_until(lambda: trainer.is_connected(), 20, "the trainer connected")
        # allowed by the ACL (mnist's topic), but the payload claims another run of the project
        trainer.publish(Topics.points("mnist", "honest"), _batch("mnist", "forged", producer), qos=1)
        wait_until(lambda: commits, 60, "the bridge's answer on the commit topic")
    finally:
        trainer.loop_stop()
        trainer.disconnect()
    assert [(r.first, r.last) for r in commits[0].rejected] == [(1, 1)] and not commits[0].stored
    assert prometheus_value(bridge.url, "curvestream_rejected_total", reason="topic_mismatch") == 1
    runs = {(r["project"], r["run"]) for r in get_json(bridge.url, "/api/v1/runs")["runs"]}
    assert ("mnist", "forged") not in runs and ("mnist", "honest") not in runs
