"""Alert delivery under faults, on real servers: a bridge killed with kill -9
mid-patience, a webhook receiver down for 30 s, a rules file with mistakes."""

from __future__ import annotations

import subprocess
import threading
import time

import numpy as np
import pytest

import curvestream
from alert_trainings import Regression, sgd
from curvestream_bridge.alerts.engine import AlertEngine
from curvestream_bridge.alerts.rules import parse_rules
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from helpers import get_json, prometheus_value
from servers import BridgeProcess, free_port, wait_until
from webhook_receiver import WebhookReceiver

PLATEAU = """
rules:
  - {name: loss-plateau, kind: plateau, key: "train/loss", smoothing: 0.98, patience_steps: 400, min_delta: 0.02,
     warmup_steps: 100}
  - {name: nonfinite, kind: nonfinite}
"""


def expected_alerts(losses: np.ndarray) -> list[tuple[str, str, int]]:
    """What the rules say about these losses, evaluated here in one go."""
    steps = np.arange(len(losses))
    column = ScalarColumn("train/loss", steps, steps * 1000, losses)
    changes = AlertEngine(parse_rules(PLATEAU)).evaluate([DecodedBatch(b"x", 1, "p", "r", [column], [], [], None,
                                                                       None, 0)])
    return [(a.rule, a.state, a.step) for a in changes.alerts]


def test_a_bridge_killed_mid_patience_fires_the_plateau_once_at_the_same_step(mosquitto, tmp_path):
    hook = WebhookReceiver(free_port()).start()
    rules = tmp_path / "rules.yaml"
    rules.write_text(PLATEAU)
    bridge = BridgeProcess(tmp_path / "bridge", f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url,
                           alert_rules=str(rules), alert_webhook_url=hook.url)
    bridge.start()
    k, n = 1000, 2600
    losses = np.array([v for _, v in sgd(Regression(0), n, lambda s: 0.5 if s < k else 0.0)])
    expected = expected_alerts(losses)
    assert [(rule, state) for rule, state, _ in expected] == [("loss-plateau", "firing")]
    logged = threading.Event()
    reports = []

    def trainer() -> None:
        with curvestream.init(project="crash", id="mid-patience", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                              spool_dir=str(tmp_path / "spool"), flush_interval_ms=50) as run:
            for step, loss in enumerate(losses):
                run.log({"train/loss": float(loss)}, step=step)
                if step == k + 200:  # in the middle of the patience window
                    logged.set()
                time.sleep(0.002 if step > k else 0)
        reports.append(run.finish())

    worker = threading.Thread(target=trainer)
    try:
        worker.start()
        assert logged.wait(60)
        time.sleep(0.2)
        bridge.kill()
        assert get_alerts_or_none(bridge) is None
        time.sleep(1.0)
        bridge.start()
        worker.join(180)
        assert not worker.is_alive()
        # every batch committed, and a bridge evaluates a batch before it commits it (ingest.py, on_round):
        # the alerts are final once the trainer's finish() is complete
        assert reports and reports[0].complete, reports
        found = get_json(bridge.url, "/api/v1/alerts", project="crash")["alerts"]
        assert [(a["rule"], a["state"], a["step"]) for a in found] == expected
        # the webhook's delivery recorded in the store (after its answer): no bridge sends it again
        wait_until(lambda: prometheus_value(bridge.url, "curvestream_alert_deliveries_recorded_total",
                                            sink="webhook") >= 1, 30, "the webhook delivered and recorded")
        assert [a["status"] for a in hook.alerts(alertname="loss-plateau")] == ["firing"]
    finally:
        bridge.stop()
        hook.stop()


def get_alerts_or_none(bridge: BridgeProcess):
    try:
        return get_json(bridge.url, "/api/v1/alerts")
    except OSError:
        return None


def test_a_webhook_receiver_down_for_30_s_gets_the_alerts_afterwards_while_ingest_goes_on(
        mosquitto, bridge_factory, tmp_path):
    port = free_port()
    rules = tmp_path / "rules.yaml"
    rules.write_text(PLATEAU)
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url, alert_rules=str(rules),
                            alert_webhook_url=f"http://127.0.0.1:{port}/hook")
    with curvestream.init(project="down", id="nan", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(tmp_path / "spool1")) as run:
        for step in range(100):
            run.log({"train/loss": float("nan") if step == 40 else 1.0}, step=step)
    wait_until(lambda: len(get_json(bridge.url, "/api/v1/alerts", project="down")["alerts"]) == 1
               and get_json(bridge.url, "/api/v1/alerts", project="down")["alerts"][0]["state"] == "resolved",
               30, "nonfinite to fire and resolve")
    went_down = time.monotonic()
    # ingest meanwhile: a run of 50,000 points is stored and committed in full
    with curvestream.init(project="down", id="meanwhile", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(tmp_path / "spool2")) as busy:
        for step in range(50_000):
            busy.log({"acc": step / 50_000}, step=step)
    assert busy.finish().complete
    metrics = get_json(bridge.url, "/api/v1/runs/down/meanwhile/metrics")["metrics"]
    assert metrics[0]["count"] == 50_000
    time.sleep(max(0.0, 30 - (time.monotonic() - went_down)))
    hook = WebhookReceiver(port).start()
    try:
        wait_until(lambda: len(hook.alerts(alertname="nonfinite")) == 2, 30, "the alerts after the receiver is up")
        assert [(a["status"], a["labels"]["run"]) for a in hook.alerts(alertname="nonfinite")] == \
            [("firing", "nan"), ("resolved", "nan")]
        resolved = hook.alerts(alertname="nonfinite")[1]
        assert resolved["endsAt"] != "0001-01-01T00:00:00Z" and resolved["endsAt"] >= resolved["startsAt"]
    finally:
        hook.stop()


@pytest.mark.parametrize("rule, words", [
    ("{name: wobbly, kind: wobble}", ["rule 'wobbly'", "field 'kind'"]),
    ("{name: globby, kind: plateau, key: 'train/[loss'}", ["rule 'globby'", "field 'key'", "bad glob"]),
    ("{name: hasty, kind: plateau, patience_steps: -5}", ["rule 'hasty'", "field 'patience_steps'"]),
])
def test_an_invalid_rules_file_stops_the_bridge_at_start_naming_the_rule_and_field(tmp_path, rule, words):
    rules = tmp_path / "rules.yaml"
    rules.write_text(f"rules:\n  - {{name: fine, kind: lost}}\n  - {rule}\n")
    bridge = BridgeProcess(tmp_path / "bridge", f"duckdb:///{tmp_path / 'store.duckdb'}", "",
                           alert_rules=str(rules))
    done = subprocess.run(bridge.command(), env=bridge.env(), capture_output=True, text=True, timeout=60,
                          cwd=bridge.workdir)
    assert done.returncode == 2
    for word in words:
        assert word in done.stderr
    assert not (tmp_path / "store.duckdb").exists()  # refused before opening anything
