"""Two bridges on an MQTT 5 shared subscription split every run's batches
between them; each alert is still raised at the step the rules give for the
whole run, and delivered exactly once (webhook and MQTT), also after the
delivering bridge is killed with kill -9."""

from __future__ import annotations

import collections
import json

import numpy as np
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

import curvestream
from alert_trainings import Regression, sgd
from curvestream_bridge.alerts.engine import AlertEngine
from curvestream_bridge.alerts.rules import parse_rules
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from helpers import get_json, prometheus_value
from servers import free_port, wait_until
from webhook_receiver import WebhookReceiver

RULES = """
rules:
  - {name: loss-plateau, kind: plateau, key: "train/loss", smoothing: 0.98, patience_steps: 400, min_delta: 0.02,
     warmup_steps: 100}
  - {name: nonfinite, kind: nonfinite}
  - {name: loss-spike, kind: spike, key: "train/loss", threshold: 10}
"""

TRAININGS = {
    "plateau": lambda: sgd(Regression(0), 2000, lambda s: 0.5 if s < 1000 else 0.0),
    "diverges": lambda: sgd(Regression(0), 1200, lambda s: 0.5 if s < 800 else 0.5 * 1.05 ** (s - 800),
                            skip_above=float("inf")),
    "corrupted": lambda: sgd(Regression(0), 2000, lambda s: 0.5, corrupt_at=1500),
}


def expected(losses: np.ndarray, run: str) -> list[tuple[str, str, str, int]]:
    steps = np.arange(len(losses))
    batch = DecodedBatch(b"x", 1, "cluster", run, [ScalarColumn("train/loss", steps, steps * 1000, losses)], [], [],
                         None, None, 0)
    return [(a.run, a.rule, a.state, a.step) for a in AlertEngine(parse_rules(RULES)).evaluate([batch]).alerts]


def test_two_bridges_sharing_a_subscription_raise_and_deliver_every_alert_exactly_once_even_when_one_is_killed(
        mosquitto, influxd, bridge_factory, tmp_path):
    hook = WebhookReceiver(free_port()).start()
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    store = influxd.store_url("alerts_cluster")
    bridges = [bridge_factory(store, mosquitto.url, name=name, mqtt_shared_group="curvestream",
                              alert_rules=str(rules), alert_webhook_url=hook.url) for name in ("first", "second")]
    published: collections.Counter = collections.Counter()
    watcher = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    watcher.on_message = lambda c, u, m: published.update([(json.loads(m.payload)["id"],
                                                           json.loads(m.payload)["version"])])
    watcher.connect("127.0.0.1", mosquitto.port)
    watcher.subscribe("curvestream/v1/cluster/+/alerts", qos=1)
    watcher.loop_start()
    want = []
    recorded_by_the_killed = {"webhook": 0.0, "mqtt": 0.0}

    def recorded(sink: str) -> float:
        return prometheus_value(bridges[0].url, "curvestream_alert_deliveries_recorded_total", sink=sink)

    try:
        for run, training in TRAININGS.items():
            if run == "corrupted":  # kill the delivering bridge (the lowest id) once the first alerts are out
                wait_until(lambda want=want: len(hook.alerts()) >= len(want), 60, "the first runs' webhooks")
                assert all(prometheus_value(b.url, "curvestream_batches_ingested_total") > 0 for b in bridges)
                # delivered and recorded: killed between a webhook's answer and its record (a few ms), the
                # successor would send that change again (at least once, as docs/alerts.md says)
                wait_until(lambda: recorded("webhook") >= len(hook.alerts()) and recorded("mqtt") >= len(published),
                           30, "the first runs' deliveries recorded")
                recorded_by_the_killed = {sink: recorded(sink) for sink in recorded_by_the_killed}
                bridges[0].kill()
            losses = np.array([v for _, v in training()])
            want += expected(losses, run)
            with curvestream.init(project="cluster", id=run, mqtt_url=mosquitto.url, bridge_url="",
                                  spool_dir=str(tmp_path / run), max_batch_points=100, ack_timeout_ms=3000,
                                  finish_timeout_ms=120_000) as r:
                for step, loss in enumerate(losses):
                    r.log({"train/loss": float(loss)}, step=step)
            assert r.finish().complete

        def found(bridge) -> list[tuple[str, str, str, int]]:
            alerts = get_json(bridge.url, "/api/v1/alerts", project="cluster")["alerts"]
            return sorted((a["run"], a["rule"], a["state"], a["fired_step"] if a["state"] == "firing" else a["step"])
                          for a in alerts)

        final = sorted(_final_states(want))
        survivor = bridges[1]
        wait_until(lambda: found(survivor) == final, 60, "the alerts, as the rules give them")
        wait_until(lambda: len(hook.alerts()) >= len(want) and len(published) >= len(want), 30, "the deliveries")

        def all_recorded() -> bool:
            """Every change's delivery recorded in the store, by the killed bridge or the survivor (a webhook's
            after its answer, an MQTT one after its PUBACK): no bridge sends a recorded change again, so
            nothing more can arrive once this holds (a change sent twice is recorded twice and counted here)."""
            return all(recorded_by_the_killed[sink] + prometheus_value(
                survivor.url, "curvestream_alert_deliveries_recorded_total", sink=sink) >= len(want)
                for sink in recorded_by_the_killed)

        wait_until(all_recorded, 30, "every delivery recorded")
        got = sorted((a["labels"]["run"], a["labels"]["alertname"], a["status"]) for a in hook.alerts())
        assert got == sorted((run, rule, state) for run, rule, state, _ in want)
        assert len(published) == len(want) and set(published.values()) == {1}
    finally:
        watcher.loop_stop()
        watcher.disconnect()
        hook.stop()


def _final_states(changes: list[tuple[str, str, str, int]]) -> list[tuple[str, str, str, int]]:
    """Each alert's latest change, as GET /api/v1/alerts lists it (a resolved one keeps the step it resolved at)."""
    last: dict[tuple[str, str], tuple[str, str, str, int]] = {}
    for run, rule, state, step in changes:
        last[(run, rule)] = (run, rule, state, step)
    return list(last.values())
