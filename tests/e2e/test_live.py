"""New points, log lines, histograms and status changes reach a WebSocket
subscriber by push, coalesced per frame; unsubscribed runs are not sent."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import websockets

import curvestream
from watch_hint import WatchHint


async def _collect(url: str, subscribe: dict, until, subscribed: WatchHint, timeout: float = 60) -> list[dict]:
    messages: list[dict] = []
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps(subscribe))
        await asyncio.to_thread(subscribed.wait)  # the subscription is in place before anything is logged
        until.start()

        async def read() -> None:
            while not until.done(messages):
                messages.append(json.loads(await ws.recv()))

        await asyncio.wait_for(read(), timeout)
    return messages


def _run_in_own_thread(fn):
    """asyncio.run in a thread of its own: Playwright's sync API may own this thread's event loop."""
    import threading

    result: dict = {}

    def target() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:
            result["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(120)
    if "error" in result:
        raise result["error"]
    return result["value"]


class LogInBackground:
    def __init__(self, fn) -> None:
        self.fn = fn
        self.thread = None

    def start(self) -> None:
        import threading

        self.thread = threading.Thread(target=self.fn, daemon=True)
        self.thread.start()

    @staticmethod
    def done(messages: list[dict]) -> bool:
        return any(m["type"] == "status" and m["state"] == "finished" for m in messages)


def test_points_texts_histograms_and_status_are_pushed_to_subscribers(tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)

    def train() -> None:
        with curvestream.init(project="live", id="pushed", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                              spool_dir=str(spool_dir)) as run:
            for i in range(300):
                run.log({"loss": 1.0 / (i + 1), "ignored": 0.0}, step=i)
            run.log_text("log", "halfway there", step=150, level=20)
            run.log_histogram("weights", np.arange(100.0), step=299)
        with curvestream.init(project="live", id="not subscribed", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                              spool_dir=str(spool_dir)) as other:
            other.log({"loss": 5.0}, step=0)

    ws_url = bridge.url.replace("http://", "ws://") + "/api/v1/live"
    sub = {"subscribe": [{"project": "live", "run": "pushed", "keys": ["loss"]}]}
    trainer = LogInBackground(train)
    with WatchHint(mosquitto.port, "live", "pushed") as hint:
        messages = _run_in_own_thread(lambda: asyncio.run(_collect(ws_url, sub, trainer, hint)))
    trainer.thread.join(60)  # the second run finishes while its bridge still runs
    points = [m for m in messages if m["type"] == "points"]
    assert {m["run"] for m in points} == {"pushed"}
    steps = [s for m in points for series in m["series"] if series["key"] == "loss" for s in series["step"]]
    assert steps == list(range(300)), "every point pushed once, in order"
    assert all(series["key"] == "loss" for m in points for series in m["series"]), "only the keys asked for"
    texts = [t for m in messages if m["type"] == "texts" for t in m["texts"]]
    assert [(t["text"], t["step"], t["level"]) for t in texts] == [("halfway there", 150, 20)]
    assert [(m["key"], m["step"]) for m in messages if m["type"] == "histogram"] == [("weights", 299)]
    assert any(m["type"] == "run" and m["run"] == "pushed" for m in messages)
    assert not any(m.get("run") == "not subscribed" and m["type"] != "run" for m in messages)


def test_a_trainer_flushes_sooner_while_a_page_watches_its_run_and_back_after(tmp_path, mosquitto, bridge_factory,
                                                                              spool_dir):
    from servers import wait_until

    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    ws_url = bridge.url.replace("http://", "ws://") + "/api/v1/live"
    with curvestream.init(project="live", id="watched", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(spool_dir)) as run:
        assert run.recorder.flush_interval_s == 0.2  # the default

        async def watch_then_leave() -> float:
            async with websockets.connect(ws_url) as ws:
                await ws.send(json.dumps({"subscribe": [{"project": "live", "run": "watched"}]}))
                for _ in range(600):
                    if run.recorder.flush_interval_s != 0.2:
                        break
                    await asyncio.sleep(0.05)
                return run.recorder.flush_interval_s

        watched = _run_in_own_thread(lambda: asyncio.run(watch_then_leave()))
        assert watched == 0.05, "the bridge's hint (CURVESTREAM_LIVE_FLUSH_HINT_MS) arrived"
        wait_until(lambda: run.recorder.flush_interval_s == 0.2, 30, "the default flush once nobody watches")
