"""Deleting a run from a running bridge, and keeping it deleted.

:class:`DeletedRuns` is what the ingest and the alert engine ask of every batch,
meta and status: whether its run was deleted (``(project, run) in deleted``).
It is the store's record of deletions (:mod:`.store.lifecycle`), read again
every :data:`REFRESH_S` seconds, so a bridge sharing the store learns of a
deletion made through another one.

:func:`delete_run` deletes a run:

1. the run joins :class:`DeletedRuns` at once: from then on its batches are
   rejected (the trainer is told, stops sending them and lets them go from its
   spool: its ``finish()`` reports them as rejected), its meta and status
   messages dropped;
2. the store deletes everything of the run on the ingest writer thread, between
   two rounds, so no write of the run already under way lands after it
   (:meth:`~.ingest.Ingest.between_rounds`); the alert engine's entries about
   the run go with it;
3. the alert engine forgets the run, and the retained meta, status and watched
   messages of the run are cleared on the broker, so a bridge subscribing later
   does not learn of the run again (and if a trainer still running announces it
   again, step 1 drops it, also after a restart: the deletion is in the store).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from curvestream_wire.topics import Topics

if TYPE_CHECKING:
    from curvestream_bridge.alerts.service import AlertService
    from curvestream_bridge.ingest import Ingest
    from curvestream_bridge.store import Store

__all__ = ["DeletedRuns", "delete_run", "REFRESH_S"]

log = logging.getLogger("curvestream.bridge")

REFRESH_S = 10.0


class DeletedRuns:
    def __init__(self, store: Store, clock: Callable[[], float] = time.monotonic) -> None:
        self._read = getattr(store, "deleted_runs", None)
        self._clock = clock
        self._runs: frozenset[tuple[str, str]] = frozenset()
        self._added: set[tuple[str, str]] = set()  # known here before the store says so
        self._read_at = -REFRESH_S
        self._lock = threading.Lock()

    def __contains__(self, run: object) -> bool:
        if self._clock() - self._read_at >= REFRESH_S:
            self._refresh()
        return run in self._runs

    def _refresh(self) -> None:
        with self._lock:
            if self._clock() - self._read_at < REFRESH_S:
                return
            self._read_at = self._clock()
            if self._read is None:
                return
            try:
                stored = self._read()
            except Exception as exc:
                log.warning("curvestream bridge: cannot read the deleted runs (%s); asking again in %g s", exc,
                            REFRESH_S)
                return
            self._runs = frozenset(stored) | self._added

    def add(self, run: tuple[str, str]) -> None:
        with self._lock:
            self._added.add(run)
            self._runs = self._runs | {run}

    def discard(self, run: tuple[str, str]) -> None:
        with self._lock:
            self._added.discard(run)
            self._runs = self._runs - {run}


def delete_run(project: str, run: str, *, store: Store, ingest: Ingest, deleted: DeletedRuns,
               alerts: AlertService | None, publish: Callable[[str, bytes], Any] | None,
               timeout_s: float = 300.0) -> bool:
    """Delete ``project/run`` (see the module docstring); False when no such run is stored.
    Raises StoreUnavailable, or TimeoutError when the writer did not get to it in time."""
    key = (project, run)
    if key in deleted:
        return False  # deleted before
    deleted.add(key)
    entries = alerts.run_entries(project, run) if alerts is not None else []
    try:
        found = ingest.between_rounds(lambda: store.delete_run(project, run, entries), timeout_s)  # type: ignore[attr-defined]
    except TimeoutError:
        raise  # still queued: the writer deletes it when it gets to it, and the run stays gated meanwhile
    except BaseException:
        deleted.discard(key)  # not deleted: its batches are stored again
        raise
    if not found:
        deleted.discard(key)
        return False
    if alerts is not None:
        alerts.forget_run(project, run)
    if publish is not None:
        for topic in (Topics.meta(project, run), Topics.status(project, run), Topics.watched(project, run)):
            try:
                publish(topic, b"")
            except Exception:
                log.warning("curvestream bridge: could not clear the retained message %s of a deleted run", topic)
    log.warning("curvestream bridge: run %s/%s deleted", project, run)
    return True
