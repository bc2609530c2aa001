"""Live push: new points reach open charts over WebSocket, coalesced per frame.

The ingest writer calls :meth:`LiveHub.points` (as soon as a batch is decoded,
before the store write), :meth:`LiveHub.stored` (after it: a new run is
announced once the runs list has it) and :meth:`LiveHub.status` from its
thread; they only append under a lock and wake an asyncio task, which pushes
to the sockets whose subscriptions match at once, then waits ``frame_ms``
before the next push: a point is never held back longer than one frame, and a
socket gets at most one frame per ``frame_ms``. A frame is the unit a socket's
queue holds (a page watching 100 runs gets 100 messages per frame, not 100
queue places): a slow socket drops whole frames (its queue is bounded), never
the writer, and is told which runs it missed (a ``gap`` message) once it keeps
up.

While a socket watches a run, the hub asks its trainers to flush more often
(``watch_hint``: the bridge publishes a retained MQTT message, see
``Topics.watched``), so log() → pixel is bounded by that shorter flush.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from starlette.websockets import WebSocket, WebSocketDisconnect

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.jsonnum import json_floats
from curvestream_bridge.store.base import state_name

if TYPE_CHECKING:
    from curvestream_bridge.grafana_live import GrafanaLivePusher

__all__ = ["LiveHub"]

log = logging.getLogger("curvestream.bridge.live")

MAX_POINTS_PER_SERIES_FRAME = 20_000
MAX_TEXTS_PER_RUN_FRAME = 1000
MAX_FRAMES_QUEUED = 64


class _Client:
    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.subs: dict[tuple[str, str], set[str] | None] = {}
        self.queue: asyncio.Queue[list[str]] = asyncio.Queue(maxsize=MAX_FRAMES_QUEUED)  # a frame's messages each
        self.gaps: set[tuple[str, str]] = set()  # runs whose points this client missed


class LiveHub:
    def __init__(self, frame_ms: int = 50, watch_hint: Callable[[tuple[str, str], bool], None] | None = None) -> None:
        self.frame_s = frame_ms / 1000
        self.watch_hint = watch_hint  # (run, watched): tell the run's trainers whether a page watches
        self._watched: set[tuple[str, str]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._woken = False
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], dict[str, list[np.ndarray]]] = {}
        self._events: list[dict[str, Any]] = []
        self._texts: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._histograms: dict[tuple[str, str, str], int] = {}
        self._known_runs: set[tuple[str, str]] = set()
        self._clients: set[_Client] = set()
        self._task: asyncio.Task | None = None
        self.grafana: GrafanaLivePusher | None = None
        # which runs were added or got a status or metadata; with True: which only got points stored
        self.on_runs_changed: Callable[[set[tuple[str, str]], bool], None] | None = None

    @property
    def client_count(self) -> int:
        return len(self._clients)

    # ------------------------------------------------------------------ from the writer thread
    def points(self, batches: Sequence[DecodedBatch]) -> None:
        """Decoded, validated, not yet stored: pushed with the next frame to the sockets watching their run."""
        watched = self._watched  # replaced, never changed in place, by the event loop
        if watched:
            self._collect(batches, watched)
        if self.grafana is not None:
            self.grafana.push(batches)

    def _collect(self, batches: Sequence[DecodedBatch], watched: set[tuple[str, str]]) -> None:
        with self._lock:
            for b in batches:
                run_key = (b.project, b.run)
                if run_key not in watched:
                    continue
                series = self._pending.setdefault(run_key, {})
                for col in b.scalars:
                    parts = series.setdefault(col.key, [])
                    parts.append(np.stack([col.steps.astype(np.float64), col.wall_ns / 1e6, col.values]))
                if b.texts:
                    self._texts.setdefault(run_key, []).extend(
                        {"key": t.key, "step": t.step, "time_ms": t.wall_ns / 1e6, "level": t.level, "text": t.text}
                        for t in b.texts)
                for h in b.histograms:
                    self._histograms[(b.project, b.run, h.key)] = h.step
        self._wake_up()

    def stored(self, batches: Sequence[DecodedBatch]) -> None:
        """Stored: a run the hub had not seen is announced (the runs list has it now)."""
        changed: set[tuple[str, str]] = set()
        grown: set[tuple[str, str]] = set()
        with self._lock:
            for b in batches:
                run_key = (b.project, b.run)
                grown.add(run_key)
                if b.meta is not None or b.status is not None:
                    changed.add(run_key)
                if run_key not in self._known_runs:
                    self._known_runs.add(run_key)
                    self._events.append({"type": "run", "project": b.project, "run": b.run})
                    changed.add(run_key)
        if changed:
            self._runs_changed(changed)
        if grown - changed:
            self._runs_changed(grown - changed, points_only=True)
        self._wake_up()

    def status(self, status: run_pb2.RunStatus) -> None:
        with self._lock:
            if status.state in (run_pb2.RUN_STATE_FINISHED, run_pb2.RUN_STATE_FAILED):
                self._known_runs.discard((status.project, status.run))  # an ended run holds nothing here
            self._events.append({"type": "status", "project": status.project, "run": status.run,
                                 "state": state_name(status.state), "reason": status.reason})
        self._runs_changed({(status.project, status.run)})
        self._wake_up()

    def meta(self, meta: run_pb2.RunMeta) -> None:
        """A run's metadata came on its own topic (the runs table reads that run again)."""
        self._runs_changed({(meta.project, meta.run)})

    def _runs_changed(self, runs: set[tuple[str, str]], points_only: bool = False) -> None:
        if self.on_runs_changed is not None:
            self.on_runs_changed(runs, points_only)

    def alert(self, alert: dict[str, Any]) -> None:
        """An alert changed: pushed to the sockets watching its run."""
        with self._lock:
            self._events.append({"type": "alert", "project": alert["project"], "run": alert["run"], "alert": alert})
        self._wake_up()

    def _wake_up(self) -> None:
        """Any thread: the flush task pushes now, or once the current frame is over."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or self._woken:
            return
        self._woken = True
        try:
            loop.call_soon_threadsafe(wake.set)
        except RuntimeError:  # the loop closed: the bridge is stopping
            pass

    # ------------------------------------------------------------------ asyncio side
    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = self._loop.create_task(self._flush_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for run_key in sorted(self._watched):  # a stopped bridge pushes nothing: trainers go back to their flush
            self._hint(run_key, False)
        self._watched.clear()

    async def _flush_forever(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._woken = False
            try:
                self._flush()
            except Exception:
                log.exception("curvestream bridge: live flush failed")
            await asyncio.sleep(self.frame_s)  # what comes meanwhile shares the next frame

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            events, self._events = self._events, []
            texts, self._texts = self._texts, {}
            histograms, self._histograms = self._histograms, {}
        if not self._clients:
            return
        frames: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        truncated: set[tuple[str, str]] = set()  # runs whose points were cut from this frame
        texts_cut: set[tuple[str, str]] = set()  # runs whose text lines were: a gap for every subscriber
        for (project, run), lines in texts.items():
            if len(lines) > MAX_TEXTS_PER_RUN_FRAME:
                lines = lines[-MAX_TEXTS_PER_RUN_FRAME:]
                texts_cut.add((project, run))
            events.append({"type": "texts", "project": project, "run": run, "texts": lines})
        for (project, run, key), step in histograms.items():
            events.append({"type": "histogram", "project": project, "run": run, "key": key, "step": step})
        events.sort(key=lambda e: e["type"] == "status")  # stable: a status change comes after its run's data
        for run_key, series in pending.items():
            out = {}
            for key, parts in series.items():
                arr = np.concatenate(parts, axis=1)
                # keep the newest; a gap message makes the chart re-query
                if arr.shape[1] > MAX_POINTS_PER_SERIES_FRAME:
                    arr = arr[:, -MAX_POINTS_PER_SERIES_FRAME:]
                    truncated.add(run_key)
                out[key] = {"key": key, "step": arr[0].astype(np.int64).tolist(), "time_ms": arr[1].tolist(),
                            "y": json_floats(arr[2])}
            frames[run_key] = out
        for client in list(self._clients):
            # new runs first, then points, then texts, histograms and status changes: a "finished"
            # arrives after the last points of its run
            messages: list[tuple[tuple[str, str] | None, str]] = [
                (None, json.dumps(e, ensure_ascii=False)) for e in events if e["type"] == "run"]
            later = [(None, json.dumps(e, ensure_ascii=False)) for e in events
                     if e["type"] != "run" and (e["project"], e["run"]) in client.subs]
            for run_key, wanted in client.subs.items():
                frame = frames.get(run_key)
                if not frame:
                    continue
                chosen = [s for k, s in frame.items() if wanted is None or k in wanted]
                if chosen:
                    if run_key in truncated:
                        client.gaps.add(run_key)
                    messages.append((run_key, json.dumps({"type": "points", "project": run_key[0], "run": run_key[1],
                                                          "series": chosen}, ensure_ascii=False, allow_nan=False)))
            client.gaps.update(r for r in truncated if r in client.subs and r not in frames)
            client.gaps.update(r for r in texts_cut if r in client.subs)
            messages.extend(later)
            if not messages and not client.gaps:
                continue
            if client.queue.full():  # the whole frame is dropped: told with a gap message once the client keeps up
                client.gaps.update(run_key for run_key, _ in messages if run_key is not None)
                continue
            gaps = [json.dumps({"type": "gap", "project": p, "run": r}, ensure_ascii=False)
                    for p, r in sorted(client.gaps)]
            client.gaps.clear()
            client.queue.put_nowait(gaps + [text for _, text in messages])

    async def serve(self, ws: WebSocket) -> None:
        await ws.accept()
        client = _Client(ws)
        self._clients.add(client)
        sender = asyncio.get_running_loop().create_task(self._send_loop(client))
        try:
            while True:
                text = await ws.receive_text()
                try:
                    msg = json.loads(text)
                    subs = {}
                    for item in msg.get("subscribe", []):
                        keys = item.get("keys")
                        run_key = (str(item["project"]), str(item["run"]))
                        subs[run_key] = None if keys is None else {str(k) for k in keys}
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    await client.queue.put([json.dumps({"type": "error", "error": f"bad subscribe message: {exc}"})])
                    continue
                client.subs = subs
                self._rewatch()
                # from here on every change of these runs is pushed: what the page read before may be older
                await client.queue.put([json.dumps({"type": "subscribed", "runs": len(subs)})])
        except WebSocketDisconnect:
            pass
        finally:
            self._clients.discard(client)
            sender.cancel()
            self._rewatch()

    def _rewatch(self) -> None:
        """Tell the trainers of runs that gained or lost their last watcher."""
        watched = {run_key for c in self._clients for run_key in c.subs}
        for run_key in sorted(watched - self._watched):
            self._hint(run_key, True)
        for run_key in sorted(self._watched - watched):
            self._hint(run_key, False)
        self._watched = watched

    def _hint(self, run_key: tuple[str, str], watched: bool) -> None:
        if self.watch_hint is None:
            return
        try:
            self.watch_hint(run_key, watched)
        except Exception:
            log.exception("curvestream bridge: live flush hint failed")

    @staticmethod
    async def _send_loop(client: _Client) -> None:
        try:
            while True:
                for text in await client.queue.get():
                    await client.ws.send_text(text)
        except (WebSocketDisconnect, RuntimeError, asyncio.CancelledError):
            return
        except Exception:
            return
