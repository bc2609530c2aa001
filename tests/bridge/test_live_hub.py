"""Live push: what an open chart's WebSocket receives, frame by frame.

Most tests drive the :class:`LiveHub` directly on an event loop of their own,
with an in-memory socket (a transport seam) and ``_flush()`` as the frame tick,
so what lands in one frame is decided by the test, not by timing. The last ones
go through the bridge's app and starlette's WebSocket test client."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from starlette.websockets import WebSocketDisconnect

from curvestream_wire.v1 import batch_pb2, run_pb2

from bridge_client import served_bridge
from curvestream_bridge.decode import DecodedBatch, decode_batch
from curvestream_bridge.live import MAX_POINTS_PER_SERIES_FRAME, MAX_TEXTS_PER_RUN_FRAME, LiveHub

T0 = 1_700_000_000_000_000_000
_seq = iter(range(1, 1_000_000))


def _batch(project: str, run: str, series: dict[str, list[float]] | None = None, first_step: int = 0,
           texts: int = 0, histogram: str = "") -> batch_pb2.Batch:
    b = batch_pb2.Batch(version=1, producer_id=b"\x03" * 16, seq=next(_seq), project=project, run=run)
    for key, values in (series or {}).items():
        steps = list(range(first_step, first_step + len(values)))
        b.scalars.add(key=key, steps=steps, wall_ns=[T0 + s * 1_000_000 for s in steps], values=values)
    for i in range(texts):
        b.texts.add(key="log", step=i, wall_ns=T0 + i, text=f"line {i}", level=20)
    if histogram:
        b.histograms.add(key=histogram, step=first_step, wall_ns=T0, bucket_edges=[0.0, 1.0], counts=[1.0])
    return b


def _decoded(*batches: batch_pb2.Batch) -> list[DecodedBatch]:
    return [decode_batch(b.SerializeToString(), 1 << 30, 1 << 30) for b in batches]


def _status(project: str, run: str, state: int) -> run_pb2.RunStatus:
    return run_pb2.RunStatus(project=project, run=run, state=state, reason="done")


class _Socket:
    """What the hub needs of a WebSocket, in memory; ``stall()`` makes it a slow client."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.received: list[dict[str, Any]] = []
        self.acks: list[dict[str, Any]] = []  # "subscribed": each subscription once it is in place
        self.moving = asyncio.Event()
        self.moving.set()

    async def accept(self) -> None:
        pass

    async def receive_text(self) -> str:
        text = await self.inbox.get()
        if text is None:
            raise WebSocketDisconnect(1000)
        return text

    async def send_text(self, text: str) -> None:
        await self.moving.wait()
        message = json.loads(text)
        (self.acks if message["type"] == "subscribed" else self.received).append(message)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["type"] == kind]


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class _Scene:
    def __init__(self, hub: LiveHub) -> None:
        self.hub = hub
        self.tasks: list[asyncio.Task] = []

    async def connect(self, *subscriptions: dict[str, Any]) -> _Socket:
        sock = _Socket()
        self.tasks.append(asyncio.get_running_loop().create_task(self.hub.serve(sock)))  # type: ignore[arg-type]
        await self.subscribe(sock, *subscriptions)
        return sock

    async def subscribe(self, sock: _Socket, *subscriptions: dict[str, Any]) -> None:
        await sock.inbox.put(json.dumps({"subscribe": list(subscriptions)}))
        await _settle()

    async def frame(self) -> None:
        self.hub._flush()  # one frame tick (what the hub's timer task does every frame_ms)
        await _settle()


def _live(scenario: Callable[[_Scene], Awaitable[None]]) -> None:
    async def main() -> None:
        scene = _Scene(LiveHub(frame_ms=100))
        try:
            await scenario(scene)
        finally:
            for sock_task in scene.tasks:
                sock_task.cancel()
            await asyncio.gather(*scene.tasks, return_exceptions=True)

    asyncio.run(main())


def _points(sock: _Socket, run: str) -> list[dict[str, Any]]:
    return [s for m in sock.of_type("points") if m["run"] == run for s in m["series"]]


# ---------------------------------------------------------------- subscriptions


def test_a_client_gets_the_points_of_the_runs_and_keys_it_subscribed_to_only():
    async def scenario(scene: _Scene) -> None:
        loss_only = await scene.connect({"project": "p", "run": "a", "keys": ["loss"]})
        every_key = await scene.connect({"project": "p", "run": "a"})
        scene.hub.points(_decoded(_batch("p", "a", {"loss": [1.0, 2.0], "acc": [0.5, 0.6]}),
                                  _batch("p", "b", {"loss": [9.0]})))
        await scene.frame()
        assert _points(loss_only, "a") == [{"key": "loss", "step": [0, 1], "time_ms": [T0 / 1e6, T0 / 1e6 + 1],
                                            "y": [1.0, 2.0]}]
        assert {s["key"] for s in _points(every_key, "a")} == {"loss", "acc"}
        assert _points(loss_only, "b") == [] and _points(every_key, "b") == []

    _live(scenario)


def test_a_new_subscription_replaces_the_old_one():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        await scene.subscribe(sock, {"project": "p", "run": "b"})
        scene.hub.points(_decoded(_batch("p", "a", {"x": [1.0]}), _batch("p", "b", {"x": [2.0]})))
        await scene.frame()
        assert [m["run"] for m in sock.of_type("points")] == ["b"]

    _live(scenario)


def test_every_client_hears_of_a_new_run_once_subscribed_or_not():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect()
        first = _decoded(_batch("p", "new run", {"x": [1.0]}))
        scene.hub.points(first)  # decoded, not yet stored: the runs list does not have it
        await scene.frame()
        assert sock.received == []
        scene.hub.stored(first)
        await scene.frame()
        second = _decoded(_batch("p", "new run", {"x": [2.0]}, first_step=1))
        scene.hub.points(second)
        scene.hub.stored(second)
        await scene.frame()
        assert sock.received == [{"type": "run", "project": "p", "run": "new run"}]

    _live(scenario)


def test_a_subscription_is_acknowledged_once_in_place_and_what_changes_after_the_ack_is_pushed():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"}, {"project": "p", "run": "b"})
        assert sock.acks == [{"type": "subscribed", "runs": 2}]
        scene.hub.status(_status("p", "a", run_pb2.RUN_STATE_FINISHED))  # a page reads the runs again on the ack:
        await scene.frame()  # what changed before it is in that read, what changes after it is pushed
        assert [(m["run"], m["state"]) for m in sock.of_type("status")] == [("a", "finished")]
        await scene.subscribe(sock, {"project": "p", "run": "a"})
        assert sock.acks[-1] == {"type": "subscribed", "runs": 1}

    _live(scenario)


def test_a_bad_subscribe_message_is_answered_with_an_error_and_keeps_the_subscription():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        for bad in ("not json", json.dumps({"subscribe": [{"project": "p"}]}), json.dumps([1])):
            await sock.inbox.put(bad)
        await _settle()
        scene.hub.points(_decoded(_batch("p", "a", {"x": [1.0]})))
        await scene.frame()
        errors = sock.of_type("error")
        assert len(errors) == 3 and all(e["error"].startswith("bad subscribe message") for e in errors)
        assert [m["run"] for m in sock.of_type("points")] == ["a"]

    _live(scenario)


def test_a_client_that_leaves_is_forgotten():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        assert scene.hub.client_count == 1
        await sock.inbox.put(None)  # the socket closes
        await _settle()
        assert scene.hub.client_count == 0

    _live(scenario)


# ---------------------------------------------------------------- frames


def test_points_arriving_within_one_frame_go_out_as_one_message_per_run():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        for first in (0, 3, 6):
            scene.hub.points(_decoded(_batch("p", "a", {"x": [float(first), float(first + 1), float(first + 2)]},
                                             first_step=first)))
        await scene.frame()
        (message,) = sock.of_type("points")
        assert message["series"][0]["step"] == list(range(9))
        assert message["series"][0]["y"] == [float(i) for i in range(9)]
        await scene.frame()
        assert len(sock.of_type("points")) == 1, "an empty frame sends nothing"

    _live(scenario)


def test_non_finite_values_are_pushed_as_strings():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        scene.hub.points(_decoded(_batch("p", "a", {"x": [float("nan"), float("inf"), -float("inf"), 1.5]})))
        await scene.frame()
        assert _points(sock, "a")[0]["y"] == ["NaN", "Infinity", "-Infinity", 1.5]

    _live(scenario)


def test_a_status_change_comes_after_the_last_data_of_its_frame_and_only_to_subscribers():
    async def scenario(scene: _Scene) -> None:
        watcher = await scene.connect({"project": "p", "run": "a"})
        other = await scene.connect({"project": "p", "run": "b"})
        scene.hub.status(_status("p", "a", run_pb2.RUN_STATE_RUNNING))
        batches = _decoded(_batch("p", "a", {"x": [1.0]}, texts=1))
        scene.hub.points(batches)  # as the ingest writer does: decoded, stored, then the status
        scene.hub.stored(batches)
        scene.hub.status(_status("p", "a", run_pb2.RUN_STATE_FINISHED))
        await scene.frame()
        assert [m["type"] for m in watcher.received] == ["run", "points", "texts", "status", "status"]
        assert watcher.received[-1] == {"type": "status", "project": "p", "run": "a", "state": "finished",
                                        "reason": "done"}
        assert [m["type"] for m in other.received] == ["run"]

    _live(scenario)


def test_texts_and_new_histograms_reach_subscribers():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        scene.hub.points(_decoded(_batch("p", "a", texts=2, histogram="weights/w1", first_step=70)))
        await scene.frame()
        (texts,) = sock.of_type("texts")
        assert [(t["key"], t["text"], t["level"]) for t in texts["texts"]] == [("log", "line 0", 20),
                                                                              ("log", "line 1", 20)]
        assert sock.of_type("histogram") == [{"type": "histogram", "project": "p", "run": "a",
                                              "key": "weights/w1", "step": 70}]

    _live(scenario)


def test_more_points_of_a_key_than_a_frame_carries_send_the_newest_and_a_gap():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        n = MAX_POINTS_PER_SERIES_FRAME + 500
        scene.hub.points(_decoded(_batch("p", "a", {"x": [float(i) for i in range(n)]})))
        await scene.frame()
        steps = _points(sock, "a")[0]["step"]
        assert steps == list(range(500, n))
        assert sock.of_type("gap") == [{"type": "gap", "project": "p", "run": "a"}]

    _live(scenario)


def test_more_text_lines_than_a_frame_carries_send_the_newest_and_a_gap():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a"})
        scene.hub.points(_decoded(_batch("p", "a", texts=MAX_TEXTS_PER_RUN_FRAME + 5)))
        await scene.frame()
        lines = sock.of_type("texts")[0]["texts"]
        assert len(lines) == MAX_TEXTS_PER_RUN_FRAME and lines[0]["text"] == "line 5"
        assert len(sock.of_type("gap")) == 1

    _live(scenario)


def test_text_lines_cut_from_a_frame_mean_a_gap_for_a_client_watching_other_keys_of_the_run():
    async def scenario(scene: _Scene) -> None:
        sock = await scene.connect({"project": "p", "run": "a", "keys": ["loss"]})
        batch = _batch("p", "a", {"acc": [0.5]}, texts=MAX_TEXTS_PER_RUN_FRAME + 5)
        scene.hub.points(_decoded(batch))
        await scene.frame()
        assert len(sock.of_type("texts")[0]["texts"]) == MAX_TEXTS_PER_RUN_FRAME
        assert sock.of_type("gap") == [{"type": "gap", "project": "p", "run": "a"}]

    _live(scenario)


def test_a_slow_client_drops_frames_without_blocking_the_writer_and_is_told_of_the_gap():
    async def scenario(scene: _Scene) -> None:
        slow = await scene.connect({"project": "p", "run": "a"})
        fast = await scene.connect({"project": "p", "run": "a"})
        slow.moving.clear()  # its socket stops taking messages
        frames = 100  # more than a client's queue holds
        for i in range(frames):
            writer = threading.Thread(target=scene.hub.points,
                                      args=(_decoded(_batch("p", "a", {"x": [float(i)]}, first_step=i)),))
            writer.start()
            writer.join(5)
            assert not writer.is_alive(), "the writer thread never waits for a client"
            await scene.frame()
        assert [s["step"][0] for s in _points(fast, "a")] == list(range(frames))
        slow.moving.set()  # the slow client catches up
        await _settle()
        got = [s["step"][0] for s in _points(slow, "a")]
        assert 0 < len(got) < frames, "some frames were dropped for it"
        assert slow.of_type("gap") == []
        await scene.frame()  # the next frame tells it to query again
        assert slow.of_type("gap") == [{"type": "gap", "project": "p", "run": "a"}]
        assert fast.of_type("gap") == []

    _live(scenario)


def test_a_hundred_runs_in_every_frame_reach_one_socket_whole_frame_after_frame():
    async def scenario(scene: _Scene) -> None:
        runs = [f"r{i:03d}" for i in range(100)]
        sock = await scene.connect(*({"project": "fleet", "run": r} for r in runs))
        frames = 5
        for f in range(frames):
            scene.hub.points(_decoded(*(_batch("fleet", r, {"loss": [float(f)]}, first_step=f) for r in runs)))
            await scene.frame()
        for r in runs:
            assert [s["step"] for s in _points(sock, r)] == [[f] for f in range(frames)], r
        assert sock.of_type("gap") == [], "a frame of 100 runs is one place in the socket's queue, not 100"

    _live(scenario)


def test_points_stored_while_nobody_listens_are_not_kept_for_later():
    async def scenario(scene: _Scene) -> None:
        scene.hub.points(_decoded(_batch("p", "a", {"x": [1.0]})))
        await scene.frame()
        sock = await scene.connect({"project": "p", "run": "a"})
        await scene.frame()
        assert sock.received == []

    _live(scenario)


def test_the_first_point_after_a_quiet_spell_is_pushed_at_once_not_after_a_frame():
    async def main() -> None:
        hub = LiveHub(frame_ms=3_600_000)  # an hour: only a push on arrival can deliver within the test
        hub.start()
        sock = _Socket()
        task = asyncio.get_running_loop().create_task(hub.serve(sock))  # type: ignore[arg-type]
        try:
            await sock.inbox.put(json.dumps({"subscribe": [{"project": "p", "run": "a"}]}))
            await _settle()
            threading.Thread(target=hub.points, args=(_decoded(_batch("p", "a", {"x": [1.0]})),)).start()
            while not sock.of_type("points"):
                await asyncio.sleep(0.01)
            assert _points(sock, "a")[0]["y"] == [1.0]
        finally:
            task.cancel()
            await hub.stop()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_trainers_of_a_run_are_told_while_a_page_watches_it():
    hints: list[tuple[tuple[str, str], bool]] = []

    async def main() -> None:
        hub = LiveHub(watch_hint=lambda run, watched: hints.append((run, watched)))
        scene = _Scene(hub)
        first = await scene.connect({"project": "p", "run": "a"}, {"project": "p", "run": "b"})
        second = await scene.connect({"project": "p", "run": "a"})
        assert hints == [(("p", "a"), True), (("p", "b"), True)]  # once per run, however many watch it
        await scene.subscribe(first, {"project": "p", "run": "a"})
        assert hints[2:] == [(("p", "b"), False)]
        await second.inbox.put(None)  # one of the two watchers of run a leaves
        await _settle()
        assert hints[3:] == []
        await first.inbox.put(None)
        await _settle()
        assert hints[3:] == [(("p", "a"), False)]

    asyncio.run(main())


# ---------------------------------------------------------------- through the app


def _subscribed(ws: Any, *subscriptions: dict[str, Any]) -> None:
    """Subscribe, and know it is in place: the bridge says so."""
    ws.send_json({"subscribe": list(subscriptions)})
    message = ws.receive_json()
    while message["type"] != "subscribed":
        message = ws.receive_json()
    assert message == {"type": "subscribed", "runs": len(subscriptions)}


@pytest.mark.timeout(60)
def test_points_posted_to_the_bridge_are_pushed_to_a_subscribed_websocket(tmp_path):
    with served_bridge(store=f"duckdb:///{tmp_path}/live.duckdb", live_frame_ms=20) as (_, client):
        with client.websocket_connect("/api/v1/live") as ws:
            _subscribed(ws, {"project": "p", "run": "a", "keys": ["loss"]})
            for b in (_batch("p", "b", {"loss": [5.0]}), _batch("p", "a", {"loss": [1.0, 2.0], "acc": [0.1, 0.2]})):
                assert client.post("/api/v1/ingest", content=b.SerializeToString()).status_code == 200
            seen = []
            while not any(m["type"] == "points" for m in seen) or len([m for m in seen if m["type"] == "run"]) < 2:
                seen.append(ws.receive_json())
        assert {m["run"] for m in seen if m["type"] == "run"} == {"a", "b"}
        (points,) = [m for m in seen if m["type"] == "points"]
        assert points["run"] == "a" and [(s["key"], s["y"]) for s in points["series"]] == [("loss", [1.0, 2.0])]


@pytest.mark.timeout(60)
def test_the_websocket_needs_the_read_token_when_one_is_set(tmp_path):
    with served_bridge(store=f"duckdb:///{tmp_path}/live.duckdb", read_token="r-secret") as (_, client):
        with pytest.raises(WebSocketDisconnect) as refused:
            with client.websocket_connect("/api/v1/live?token=wrong") as ws:
                ws.receive_text()
        assert refused.value.code == 1008
        with client.websocket_connect("/api/v1/live?" + urllib.parse.urlencode({"token": "r-secret"})) as ws:
            _subscribed(ws)


def test_a_run_that_ended_is_let_go_by_the_hub():
    hub = LiveHub()
    batch = DecodedBatch(b"p", 1, "p", "r", [], [], [], None, None, 0)
    hub.stored([batch])
    assert ("p", "r") in hub._known_runs
    hub.status(run_pb2.RunStatus(project="p", run="r", state=run_pb2.RUN_STATE_FINISHED))
    assert ("p", "r") not in hub._known_runs


def test_the_hub_names_the_runs_that_changed_and_those_that_only_got_points():
    hub = LiveHub()
    heard: list[tuple[set, bool]] = []
    hub.on_runs_changed = lambda runs, points_only: heard.append((runs, points_only))
    hub.stored([DecodedBatch(b"p", 1, "p", "new", [], [], [], None, None, 0)])
    assert heard == [({("p", "new")}, False)], "a new run"
    heard.clear()
    meta = run_pb2.RunMeta(project="p", run="b")
    hub.stored([DecodedBatch(b"p", 2, "p", "new", [], [], [], None, None, 0),
                DecodedBatch(b"q", 1, "p", "b", [], [], [], meta, None, 0)])
    assert heard == [({("p", "b")}, False), ({("p", "new")}, True)], "metadata; points only"
    heard.clear()
    hub.status(run_pb2.RunStatus(project="p", run="new", state=run_pb2.RUN_STATE_FINISHED))
    hub.meta(run_pb2.RunMeta(project="p", run="c"))
    assert heard == [({("p", "new")}, False), ({("p", "c")}, False)]
