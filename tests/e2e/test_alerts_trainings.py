"""Alerts on real trainings: numpy SGD runs stream through the client and
Mosquitto into a bridge process with a rules file; alerts come back over the
API, a webhook receiver and ``run.on_alert``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import curvestream
from alert_trainings import Regression, sgd
from helpers import get_json
from servers import BridgeProcess, free_port, wait_until
from watch_hint import WatchHint
from webhook_receiver import WebhookReceiver

PROJECT = "alerts"
K = 1000  # the plateau run's learning rate drops to 0 here
PATIENCE, SMOOTHING = 400, 0.98
LAG = int(5 / (1 - SMOOTHING))  # the smoothed loss settles within ~5 time constants
RULES = f"""
rules:
  - name: loss-plateau
    kind: plateau
    key: "train/loss"
    mode: min
    smoothing: {SMOOTHING}
    patience_steps: {PATIENCE}
    min_delta: 0.02
    warmup_steps: 100
  - {{name: nonfinite, kind: nonfinite, key: "*"}}
  - {{name: loss-spike, kind: spike, key: "train/loss", threshold: 10}}
  - {{name: stalled, kind: stalled, after_s: 8}}
  - {{name: lost, kind: lost}}
"""


@pytest.fixture(scope="module")
def receiver():
    hook = WebhookReceiver(free_port()).start()
    yield hook
    hook.stop()


@pytest.fixture(scope="module")
def bridge(mosquitto, receiver, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("alerts-bridge")
    rules = workdir / "rules.yaml"
    rules.write_text(RULES)
    server = BridgeProcess(workdir, f"duckdb:///{workdir / 'store.duckdb'}", mosquitto.url,
                           alert_rules=str(rules), alert_webhook_url=receiver.url)
    server.start()
    yield server
    server.stop()


def alerts_of(bridge, run: str, **params: str) -> list[dict]:
    return get_json(bridge.url, "/api/v1/alerts", project=PROJECT, run=run, **params)["alerts"]


def train(bridge, mosquitto, spool, run: str, gen, pace_s: float = 0.0, on_alert=None, until=None):
    """Log a training's losses; returns the logged values and the finished run."""
    losses = []
    with curvestream.init(project=PROJECT, id=run, mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(spool), flush_interval_ms=50) as r:
        if on_alert is not None:
            r.on_alert(on_alert(r))
        for step, loss in gen:
            if r.stop_requested:
                break
            r.log({"train/loss": loss}, step=step)
            losses.append(loss)
            if pace_s:
                time.sleep(pace_s)
    assert r.finish().complete
    return np.array(losses), r


def settled(bridge, run: str, steps: int) -> None:
    def all_there() -> bool:
        metrics = get_json(bridge.url, f"/api/v1/runs/{PROJECT}/{run}/metrics")["metrics"]
        return any(m["key"] == "train/loss" and m["count"] == steps for m in metrics)

    wait_until(all_there, 60, f"all points of {run}")


def test_a_healthy_training_raises_nothing(bridge, mosquitto, tmp_path):
    losses, _ = train(bridge, mosquitto, tmp_path, "healthy", sgd(Regression(0), 3000, lambda s: 0.5))
    assert losses[-1] < losses[len(losses) // 2] < losses[0]  # it trains
    settled(bridge, "healthy", 3000)
    # finish() saw every batch committed, and the bridge evaluates a batch before it commits it (ingest.py,
    # on_round): nothing is left to raise an alert later
    assert alerts_of(bridge, "healthy") == []


def test_a_learning_rate_dropped_to_zero_raises_a_plateau_the_trainer_hears_and_stops_on(
        bridge, mosquitto, receiver, tmp_path):
    heard = []

    def stop_on_plateau(run):
        def callback(alert):
            heard.append((alert, threading.current_thread().name))
            if alert.kind == "plateau" and alert.state == "firing":
                run.request_stop(alert.message)
        return callback

    # after the drop the trainer keeps stepping (slowly) until its own alert stops it
    gen = sgd(Regression(0), K + 20_000, lambda s: 0.5 if s < K else 0.0)
    paced = ((s, v) for s, v in gen if s < K or time.sleep(0.002) is None)
    losses, _run = train(bridge, mosquitto, tmp_path, "plateau", paced, on_alert=stop_on_plateau)
    fired = [a for a in alerts_of(bridge, "plateau") if a["kind"] == "plateau"]
    assert len(fired) == 1 and fired[0]["state"] == "firing"
    step = fired[0]["step"]
    assert K + PATIENCE <= step <= K + PATIENCE + LAG
    assert fired[0]["window"] == {"from_step": step - PATIENCE, "to_step": step}
    assert f"has not improved by 2% for {PATIENCE} steps" in fired[0]["message"]
    assert len(losses) < K + 20_000, heard  # it stopped early
    assert [(a.kind, a.state, a.step) for a, _ in heard] == [("plateau", "firing", step)]
    assert heard[0][1] == "curvestream-alerts"
    runs = {r["run"]: r for r in get_json(bridge.url, "/api/v1/runs", project=PROJECT)["runs"]}
    assert runs["plateau"]["alerts_firing"] == 1 and runs["healthy"]["alerts_firing"] == 0
    assert runs["plateau"]["state"] == "finished"
    assert runs["plateau"]["reason"] == f"stopped early: {fired[0]['message']}"
    wait_until(lambda: receiver.alerts(alertname="loss-plateau", run="plateau"), 30, "the plateau webhook")


def test_a_learning_rate_raised_until_overflow_raises_nonfinite_at_the_first_nan_or_inf(
        bridge, mosquitto, receiver, tmp_path):
    gen = sgd(Regression(0), 1500, lambda s: 0.5 if s < 800 else 0.5 * 1.05 ** (s - 800), skip_above=float("inf"))
    losses, _ = train(bridge, mosquitto, tmp_path, "diverges", gen)
    first_bad = int(np.flatnonzero(~np.isfinite(losses))[0])
    settled(bridge, "diverges", 1500)
    wait_until(lambda: [a for a in alerts_of(bridge, "diverges") if a["kind"] == "nonfinite"], 30, "nonfinite")
    nonfinite = [a for a in alerts_of(bridge, "diverges") if a["kind"] == "nonfinite"]
    assert [(a["state"], a["step"], a["key"]) for a in nonfinite] == [("firing", first_bad, "train/loss")]
    wait_until(lambda: receiver.alerts(alertname="nonfinite", run="diverges"), 30, "the nonfinite webhook")
    body = next(b for b in receiver.bodies if b["alerts"][0]["labels"]["run"] == "diverges"
                and b["alerts"][0]["labels"]["alertname"] == "nonfinite")
    assert body["version"] == "4" and body["status"] == "firing" and body["receiver"] == "curvestream"
    item = body["alerts"][0]
    assert item["labels"] == {"alertname": "nonfinite", "project": PROJECT, "run": "diverges", "key": "train/loss",
                              "severity": "critical", "kind": "nonfinite"}
    assert item["annotations"]["description"] == nonfinite[0]["message"]
    assert item["endsAt"] == "0001-01-01T00:00:00Z" and item["startsAt"].endswith("Z") and item["fingerprint"]
    assert item["generatorURL"].startswith(bridge.url + "/?run=alerts/diverges") and "zoom=" in item["generatorURL"]


def test_a_single_corrupted_batch_raises_a_spike_at_its_step_and_no_plateau(bridge, mosquitto, receiver, tmp_path):
    losses, _ = train(bridge, mosquitto, tmp_path, "corrupted", sgd(Regression(0), 3000, lambda s: 0.5,
                                                                   corrupt_at=1500))
    assert losses[1500] > 1000 * losses[1499]
    settled(bridge, "corrupted", 3000)
    wait_until(lambda: any(a["kind"] == "spike" and a["state"] == "resolved" for a in alerts_of(bridge, "corrupted")),
               30, "the spike and its end")
    found = alerts_of(bridge, "corrupted")
    assert [(a["kind"], a["fired_step"]) for a in found] == [("spike", 1500)]
    states = [a["status"] for a in receiver.alerts(alertname="loss-spike", run="corrupted")]
    wait_until(lambda: [a["status"] for a in receiver.alerts(alertname="loss-spike", run="corrupted")]
               == ["firing", "resolved"], 30, f"firing and resolved webhooks (so far {states})")


def test_a_hung_training_thread_raises_stalled_then_resolves_when_it_resumes(bridge, mosquitto, receiver, tmp_path):
    def hangs_once():
        for step, loss in sgd(Regression(0), 600, lambda s: 0.5):
            if step == 300:  # (a busy machine may make a shorter pause look stalled too: wait for this one)
                wait_until(lambda: any(a["kind"] == "stalled" and a["state"] == "firing" and a["fired_step"] == 299
                                       for a in alerts_of(bridge, "hangs")), 60,
                           "stalled while the training thread hangs")
            yield step, loss

    train(bridge, mosquitto, tmp_path, "hangs", hangs_once())
    wait_until(lambda: [(a["state"], a["fired_step"]) for a in alerts_of(bridge, "hangs") if a["kind"] == "stalled"]
               == [("resolved", 299)], 30, "stalled to resolve")
    stalled = next(a for a in alerts_of(bridge, "hangs") if a["kind"] == "stalled")
    assert stalled["fired_step"] == 299 and stalled["step"] == 300, json.dumps(stalled)
    wait_until(lambda: [a["status"] for a in receiver.alerts(alertname="stalled", run="hangs")][-2:]
               == ["firing", "resolved"], 30, "stalled webhooks")


TRAINER = textwrap.dedent("""
    import sys, time
    import curvestream
    run = curvestream.init(project=sys.argv[1], id=sys.argv[2], mqtt_url=sys.argv[3], spool_dir=sys.argv[4],
                           flush_interval_ms=50)
    for step in range(200):
        run.log({"train/loss": 1.0 / (step + 1)}, step=step)
    print("logged", flush=True)
    time.sleep(600)
""")


def test_a_trainer_killed_with_kill_9_raises_lost(bridge, mosquitto, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", TRAINER, PROJECT, "killed", mosquitto.url, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "logged"
        settled(bridge, "killed", 200)
        assert alerts_of(bridge, "killed") == []
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    wait_until(lambda: alerts_of(bridge, "killed"), 30, "the lost alert")
    lost = alerts_of(bridge, "killed")
    assert [(a["kind"], a["state"], a["step"]) for a in lost] == [("lost", "firing", 199)]


def test_alerts_test_replays_a_stored_run_and_prints_what_fired_live(bridge, mosquitto, tmp_path):
    train(bridge, mosquitto, tmp_path, "replayed", sgd(Regression(0), 2000, lambda s: 0.5 if s < K else 0.0))
    settled(bridge, "replayed", 2000)
    wait_until(lambda: alerts_of(bridge, "replayed"), 30, "the live plateau")
    live = [(a["rule"], a["state"], a["step"], a["message"]) for a in alerts_of(bridge, "replayed")]
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    command = [sys.executable, "-m", "curvestream.cli", "alerts", "test", "--rules", str(rules), "--bridge",
               bridge.url, PROJECT, "replayed"]
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    replayed = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(a["rule"], a["state"], a["step"], a["message"]) for a in replayed] == live
    text = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    assert f"FIRING   loss-plateau train/loss at step {live[0][2]}" in text
    assert "1 alert(s) would fire on alerts/replayed with 5 rule(s)" in text


def test_an_alert_is_pushed_on_the_live_websocket_to_pages_watching_its_run(bridge, mosquitto, tmp_path):
    from websockets.sync.client import connect

    ws_url = bridge.url.replace("http://", "ws://") + "/api/v1/live"
    with connect(ws_url) as ws:
        with WatchHint(mosquitto.port, PROJECT, "pushed") as hint:
            ws.send(json.dumps({"subscribe": [{"project": PROJECT, "run": "pushed"}]}))
            hint.wait()  # the subscription is in before the run starts
        train(bridge, mosquitto, tmp_path, "pushed", iter([(0, 1.0), (1, float("nan")), (2, 1.0)]))
        pushed = []
        deadline = time.monotonic() + 30
        while len(pushed) < 2 and time.monotonic() < deadline:
            message = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message["type"] == "alert":
                pushed.append(message["alert"])
    assert [(a["kind"], a["state"], a["step"]) for a in pushed] == [("nonfinite", "firing", 1),
                                                                    ("nonfinite", "resolved", 2)]
    assert pushed[-1] == alerts_of(bridge, "pushed")[0]  # the same object as the API's
