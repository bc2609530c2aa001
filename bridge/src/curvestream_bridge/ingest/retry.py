"""Waiting out a store that is unavailable, and stopping in the middle of it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from curvestream_wire.backoff import Backoff

from curvestream_bridge.metrics import STORE_ERRORS, Metrics
from curvestream_bridge.ratelog import RateLimitedLog
from curvestream_bridge.store.base import StoreUnavailable

__all__ = ["Stopping", "Retrier", "why"]

T = TypeVar("T")


class Stopping(Exception):
    """The bridge is shutting down in the middle of a retry."""


def why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class Retrier:
    """Runs a store call until it works: a ``StoreUnavailable`` waits with
    jittered backoff (honouring its ``retry_after_s``); ``healthy`` is False
    meanwhile. Raises :class:`Stopping` once ``stop`` is set."""

    def __init__(self, stop: threading.Event, metrics: Metrics, ratelog: RateLimitedLog) -> None:
        self.stop = stop
        self.metrics = metrics
        self.ratelog = ratelog
        self.healthy = True

    def __call__(self, fn: Callable[[], T]) -> T:
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        while True:
            try:
                result = fn()
                self.healthy = True
                return result
            except StoreUnavailable as exc:
                self.healthy = False
                self.metrics.inc(STORE_ERRORS)
                kind = " ".join(str(exc).split()[:3])  # each kind of outage logged, each at most every 10 s
                self.ratelog.warning(f"store {kind}", "curvestream bridge: store unavailable, retrying: %s", exc)
                if backoff.wait(self.stop, exc.retry_after_s):
                    raise Stopping() from None

    def wait(self, backoff: Backoff) -> None:
        """One backoff step of a caller's own retry loop; raises Stopping when stopped meanwhile."""
        if backoff.wait(self.stop):
            raise Stopping() from None
