"""Runs learnt from retained messages only.

A run's meta and status topics are retained, so a bridge subscribing to a
broker that other bridges used gets the last meta and status of every run they
ever saw, delivered with the retain flag. Listed as runs, those are phantoms:
no point, "finished · N batches pending". So a retained meta or status of a
run the store does not know is held here, in memory, instead of being applied;
it is applied once the run proves real: a batch of its points is stored, or a
meta or status of it arrives live (without the retain flag; a trainer
publishing while the bridge listens). A run the store knows takes them at
once. A restarted bridge gets the retained messages again when it subscribes,
so nothing held is lost with the process.

    >>> from curvestream_bridge.ingest import Message
    >>> held = RetainedRuns(known=lambda: set())
    >>> m = Message("meta", b"...", "mqtt", ("p", "r"), retained=True)
    >>> held.hold(m), held.runs_held
    (True, 1)
    >>> [x.kind for x in held.release(("p", "r"))], held.runs_held
    (['meta'], 0)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curvestream_bridge.ingest import Message

__all__ = ["RetainedRuns"]


class RetainedRuns:
    def __init__(self, known: Callable[[], set[tuple[str, str]]]) -> None:
        self._load_known = known  # the runs the store has, read once when first needed
        self._known: set[tuple[str, str]] | None = None
        self._held: dict[tuple[str, str], dict[str, Message]] = {}
        self._lock = threading.Lock()

    @property
    def runs_held(self) -> int:
        return len(self._held)

    def hold(self, m: Message) -> bool:
        """True when ``m`` (a meta or status) is kept back: retained, of a run not known to be real.
        Its acknowledgement is sent now (the broker keeps the retained copy anyway)."""
        run = m.topic_run
        if run is None or not m.retained or self._is_known(run):
            return False
        if m.ack is not None:
            m.ack()
            m.ack = None
        with self._lock:
            self._held.setdefault(run, {})[m.kind] = m  # the newest of each kind
        return True

    def release(self, run: tuple[str, str]) -> list[Message]:
        """``run`` is real (a live message or a stored point): what was held for it, to apply first."""
        with self._lock:
            if self._known is not None:
                self._known.add(run)
            held = self._held.pop(run, None)
        return list(held.values()) if held else []

    def stored(self, runs: Iterable[tuple[str, str]]) -> list[Message]:
        out: list[Message] = []
        for run in set(runs):
            out += self.release(run)
        return out

    def _is_known(self, run: tuple[str, str]) -> bool:
        with self._lock:
            if self._known is None:
                self._known = set(self._load_known())
            return run in self._known
