"""The one batching thread of a process: ``curvestream-recorder`` runs the flush
rounds of every run (:class:`curvestream.recorder.Recorder`), makes what a round
appended durable with one sync for all of them, and then tells the uploader.

It sleeps until the earliest run is due (a sealed batch at least every
``flush_interval_ms`` while points arrive), or until a run wakes it (its queue
grew long, it finished, it logged again after being idle). A process with a
hundred idle runs has a thread that sleeps.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from curvestream.background import BackgroundLoop
from curvestream.recorder import FlushMode, Recorder
from curvestream.spool import sync_spools

__all__ = ["FlushLoop"]

log = logging.getLogger("curvestream.recorder")


class FlushLoop(BackgroundLoop):
    thread_name = "curvestream-recorder"

    def __init__(self, on_spooled: Callable[[list[Recorder]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._on_spooled = on_spooled
        self._clock = clock
        self._recorders: list[Recorder] = []
        self._lock = threading.Lock()
        self.rounds = 0

    def add(self, recorder: Recorder) -> None:
        recorder.attach(self.wake)
        with self._lock:
            self._recorders = [*self._recorders, recorder]
        self.wake()

    def remove(self, recorder: Recorder) -> None:
        with self._lock:
            self._recorders = [r for r in self._recorders if r is not recorder]

    # ------------------------------------------------------------------ life
    def _run(self) -> None:
        while not self._stop.is_set():
            wake_at = [t for t in (r.wake_at() for r in self._recorders) if t is not None]
            timeout = max(0.0, min(wake_at) - self._clock()) if wake_at else None
            self._wake.wait(timeout)
            self._wake.clear()
            try:
                self.round()
            except Exception:
                log.exception("curvestream: recorder round failed")
                self._stop.wait(0.1)

    # ------------------------------------------------------------------ one round
    def round(self) -> None:
        """Flush every recorder that is due; one sync for everything appended."""
        now = self._clock()
        rounds: list[tuple[Recorder, FlushMode, bool]] = []
        for rec in self._recorders:
            mode = rec.due(now)
            if mode is None:
                continue
            try:
                wrote = rec.flush(mode)
            except Exception:
                rec.stats.spool_errors += 1
                log.exception("curvestream: recorder round of %s failed", rec.spool.dir)
                wrote = False
            rounds.append((rec, mode, wrote))
        if not rounds:
            return
        self.rounds += 1
        written = [rec for rec, _, wrote in rounds if wrote]
        if written:
            try:
                sync_spools(r.spool for r in written)
            except OSError as exc:  # the records are written; the next round's sync tries again
                log.warning("curvestream: cannot sync the spool: %s", exc)
        for rec, mode, _ in rounds:
            rec.round_done(mode)
        told = [rec for rec, mode, wrote in rounds if wrote or mode is FlushMode.FINAL]
        if told:
            if self._on_spooled is not None:
                self._on_spooled(told)
            for rec in told:
                if rec.on_spooled is not None:
                    rec.on_spooled()
