"""``run.alert(title, text, level)`` end to end, through real Mosquitto into a
bridge process on real InfluxDB 1.6.7: the alert reaches every channel a rule's
alert reaches (the API, the live WebSocket the page reads, an Alertmanager
webhook, InfluxDB for Grafana's annotations, and back to the trainer's
``on_alert``) at the step it was raised; one raised while the bridge is down
waits in the spool and arrives after; each arrives once, the bridge killed with
``kill -9`` in between; both resolve when the run finishes."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading

import httpx
import websockets

import curvestream
from helpers import get_json, prometheus_value
from servers import free_port, wait_until
from webhook_receiver import WebhookReceiver

PROJECT, RUN = "coded", "raiser"
ANNOTATIONS = pathlib.Path(__file__).resolve().parents[2] / "grafana" / "queries" / "alert_annotations.influxql"


def _annotations_query() -> str:
    """The dashboards' annotation query for this run, over all time, as Grafana sends it."""
    return (ANNOTATIONS.read_text().replace("${project:regex}", PROJECT).replace("${run:regex}", RUN)
            .replace("$timeFilter", "time > 0"))


def _code_alerts(bridge_url: str) -> list[dict]:
    alerts = get_json(bridge_url, "/api/v1/alerts", project=PROJECT, run=RUN)["alerts"]
    return [a for a in alerts if a["kind"] == "code"]


def _listen(ws_url: str, got: list[dict], subscribed: threading.Event, stop: threading.Event) -> None:
    async def listen() -> None:
        async with websockets.connect(ws_url) as ws:
            await ws.send(json.dumps({"subscribe": [{"project": PROJECT, "run": RUN}]}))
            subscribed.set()
            while not stop.is_set():
                try:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 0.2))
                except asyncio.TimeoutError:
                    continue
                except websockets.ConnectionClosed:
                    return  # the bridge was killed
                if message["type"] == "alert":
                    got.append(message["alert"])

    asyncio.run(listen())


def test_an_alert_from_code_reaches_every_channel_once_at_its_step_and_survives_a_bridge_down(
        mosquitto, influxd, bridge_factory, spool_dir):
    hook = WebhookReceiver(free_port()).start()
    database = "alerts_from_code"
    bridge = bridge_factory(influxd.store_url(database), mosquitto.url, alert_webhook_url=hook.url)
    pushed: list[dict] = []
    subscribed, stop = threading.Event(), threading.Event()
    listener = threading.Thread(target=_listen, args=(bridge.url.replace("http", "ws") + "/api/v1/live", pushed,
                                                      subscribed, stop))
    listener.start()
    heard: list[curvestream.Alert] = []
    try:
        assert subscribed.wait(30)
        run = curvestream.init(PROJECT, id=RUN, mqtt_url=mosquitto.url, bridge_url=bridge.url,
                               spool_dir=str(spool_dir), flush_interval_ms=50)
        run.on_alert(heard.append)
        for step in range(100):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
        run.alert("Loss exploded", "loss 1e6 at step 99", level="critical")
        wait_until(lambda: len(_code_alerts(bridge.url)) == 1, 60, "the alert in the API")
        (alert,) = _code_alerts(bridge.url)
        assert (alert["rule"], alert["severity"], alert["step"], alert["state"], alert["message"], alert["key"]) == \
            ("Loss exploded", "critical", 99, "firing", "loss 1e6 at step 99", "")
        wait_until(lambda: hook.alerts(alertname="Loss exploded"), 60, "the webhook")
        wait_until(lambda: any(a.kind == "code" for a in heard), 60, "the trainer's on_alert")
        wait_until(lambda: any(a["kind"] == "code" for a in pushed), 60, "the live WebSocket")
        assert [(a.rule, a.step, a.state) for a in heard if a.kind == "code"] == [("Loss exploded", 99, "firing")]
        rows = httpx.post(f"{influxd.url}/query", data={"db": database, "q": _annotations_query(),
                                                        "epoch": "ms"}, timeout=30).json()["results"][0]["series"]
        assert [(r[1], r[2]) for r in rows[0]["values"]] == [("loss 1e6 at step 99", 99)]  # Grafana's annotations

        wait_until(lambda: prometheus_value(bridge.url, "curvestream_alert_deliveries_recorded_total",
                                            sink="webhook") >= 1, 60, "the webhook's delivery recorded")
        bridge.kill()  # kill -9: the next alert waits in the spool
        for step in range(100, 150):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
        run.alert("While the bridge was down", "raised at step 149", level="warning")
        bridge.start()
        wait_until(lambda: len(_code_alerts(bridge.url)) == 2, 120, "the alert raised while the bridge was down")
        assert run.finish().complete
        wait_until(lambda: all(a["state"] == "resolved" for a in _code_alerts(bridge.url)), 60, "resolved at the end")
        wait_until(lambda: prometheus_value(bridge.url, "curvestream_alert_deliveries_recorded_total",
                                            sink="webhook") >= 3, 60, "the webhook deliveries recorded")
    finally:
        stop.set()
        listener.join(30)
        hook.stop()
    for title, step in (("Loss exploded", 99), ("While the bridge was down", 149)):
        assert [a["status"] for a in hook.alerts(alertname=title)] == ["firing", "resolved"], title
        (fired,) = [a for a in _code_alerts(bridge.url) if a["rule"] == title]
        assert fired["fired_step"] == step
    assert sorted((a.rule, a.state) for a in heard if a.kind == "code") == [
        ("Loss exploded", "firing"), ("Loss exploded", "resolved"),
        ("While the bridge was down", "firing"), ("While the bridge was down", "resolved")]
