"""Alerts the bridge raises about this run, handed to the training script.

    >>> import curvestream
    >>> run = curvestream.init(project="mnist", run="r1")          # doctest: +SKIP
    >>> def on_alert(alert):                                       # doctest: +SKIP
    ...     if alert.kind == "plateau" and alert.state == "firing":
    ...         run.request_stop(alert.message)
    >>> run.on_alert(on_alert)                                     # doctest: +SKIP
    >>> for step in range(10_000):                                 # doctest: +SKIP
    ...     if run.stop_requested:
    ...         break
    ...     run.log({"train/loss": train_step()}, step=step)
    >>> run.finish()  # ends "finished" with the stop's reason     # doctest: +SKIP

The bridge publishes each alert change on ``curvestream/v1/<project>/<run>/alerts``
(JSON, the object of ``GET /api/v1/alerts``). Callbacks run on one
``curvestream-alerts`` thread, never on the training thread or the MQTT
thread; an exception in a callback is logged and never reaches training.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Alert", "AlertDispatcher"]

log = logging.getLogger("curvestream.alerts")


@dataclasses.dataclass(frozen=True)
class Alert:
    """One alert change: ``state`` is ``firing`` or ``resolved``; ``step`` is where
    its condition became true (or stopped being true); ``message`` says why."""

    id: str
    rule: str
    kind: str  # plateau | nonfinite | spike | threshold | stalled | lost | code (run.alert)
    state: str
    project: str
    run: str
    key: str
    step: int
    value: float | str | None
    message: str
    from_step: int
    to_step: int
    version: int
    raw: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Alert:
        window = body.get("window") or {}
        return cls(str(body["id"]), str(body["rule"]), str(body["kind"]), str(body["state"]), str(body["project"]),
                   str(body["run"]), str(body.get("key", "")), int(body["step"]), body.get("value"),
                   str(body.get("message", "")), int(window.get("from_step", body["step"])),
                   int(window.get("to_step", body["step"])), int(body.get("version", 0)), body)


class AlertDispatcher:
    """Parses alert payloads (from the MQTT thread) and calls the callbacks on its own thread."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[Alert], Any]] = []
        self._queue: queue.Queue[Alert | None] = queue.Queue(maxsize=10_000)
        self._seen: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, callback: Callable[[Alert], Any]) -> None:
        if not callable(callback):
            raise TypeError(f"curvestream: on_alert needs a callable, got {type(callback).__name__}")
        with self._lock:
            self._callbacks.append(callback)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="curvestream-alerts", daemon=True)
                self._thread.start()

    def payload(self, data: bytes) -> None:
        """From the MQTT thread: never blocks, never raises."""
        try:
            alert = Alert.from_json(json.loads(data))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("curvestream: ignoring an unreadable alert message: %s", exc)
            return
        ident = (alert.id, alert.version)
        with self._lock:
            if ident in self._seen:  # the same change published twice (a re-evaluation, a second bridge)
                return
            self._seen.add(ident)
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            log.warning("curvestream: alert callbacks are behind; dropping %s", alert.message)

    def stop(self, timeout: float = 1.0) -> None:
        """Calls what is queued, then ends the thread."""
        thread = self._thread
        if thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)

    def _run(self) -> None:
        while True:
            alert = self._queue.get()
            if alert is None:
                return
            with self._lock:
                callbacks = list(self._callbacks)
            for callback in callbacks:
                try:
                    callback(alert)
                except Exception:
                    log.exception("curvestream: an on_alert callback raised (alert %s); training goes on",
                                  alert.message)
