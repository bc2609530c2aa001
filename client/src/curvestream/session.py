"""What the runs of one process share: one batching thread, one uploader and one
MQTT connection, whatever the number of runs. Each run keeps its own producer
id, sequence, spool and status.

The connection's Last Will is the session's: ``lost`` on
``curvestream/v1/session/<id>``; every run's meta and status name the session,
and the bridge marks each run of a lost session that was still running
``lost``. On every (re)connect the session publishes ``running`` there (a
dropped connection may have set ``lost``), then each run's meta and status.

Runs share a session when their connection settings are the same
(:meth:`curvestream.settings.Settings.session_key`); the session ends, with a
clean disconnect, when its last run finishes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from curvestream_wire.topics import Topics
from curvestream_wire.v1 import run_pb2

from curvestream.delivery import Delivery
from curvestream.flush_loop import FlushLoop
from curvestream.mqtt import MqttLink, client_id_for
from curvestream.recorder import Recorder
from curvestream.settings import Settings
from curvestream.spool import Spool, SpoolLocked, list_producers
from curvestream.uploader import Uploader

if TYPE_CHECKING:
    from curvestream.run import Run

__all__ = ["Session", "session_for"]

log = logging.getLogger("curvestream")

_sessions: dict[tuple, Session] = {}
_registry_lock = threading.Lock()


def session_for(settings: Settings) -> Session:
    """The open session for these settings, started on first use."""
    key = settings.session_key()
    with _registry_lock:
        session = _sessions.get(key)
        if session is None:
            session = _sessions[key] = Session(settings)
            session.start()
        session.expect_run()
        return session


def forget_after_fork() -> None:
    """In a forked child: every session belongs to the parent."""
    global _registry_lock
    _registry_lock = threading.Lock()
    for session in list(_sessions.values()):
        session.forget_after_fork()
    _sessions.clear()


class Session:
    def __init__(self, settings: Settings, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.id = os.urandom(16)
        self.settings = settings
        self._time_ns = clock_ns
        self.loop = FlushLoop(on_spooled=self._spooled)
        self.delivery: Delivery | None = None
        if settings.mode == "online":
            will = (Topics.session(self.id), self._status(run_pb2.RUN_STATE_LOST).SerializeToString())
            self.delivery = Delivery(settings, client_id_for(self.id), on_connected=self._announce, will=will)
            self.delivery.uploader.on_freed = self._space_freed
        self._runs: dict[bytes, Run] = {}  # by producer id
        self._recorders: dict[bytes, Recorder] = {}  # by producer id, adopted spools' owners included
        self._expected = 0  # runs being made that will attach (keeps the session open meanwhile)
        self._lock = threading.Lock()
        self.closed = False

    @property
    def link(self) -> MqttLink | None:
        return self.delivery.link if self.delivery is not None else None

    @property
    def uploader(self) -> Uploader | None:
        return self.delivery.uploader if self.delivery is not None else None

    def start(self) -> None:
        self.loop.start()
        if self.delivery is not None:
            self.delivery.start()

    def expect_run(self) -> None:
        with self._lock:
            self._expected += 1

    def _status(self, state: run_pb2.RunState) -> run_pb2.RunStatus:
        return run_pb2.RunStatus(version=1, state=state, session=self.id, updated_ns=self._time_ns())

    # ------------------------------------------------------------------ runs coming and going
    def attach(self, run: Run) -> list[Spool]:
        """Serve ``run`` from now on; returns the leftovers of dead producers found in its
        spool directory, which its ``finish()`` also waits for."""
        adopted = self._adopt_leftovers(run.settings, run.producer_id) if self.delivery is not None else []
        with self._lock:
            self._expected -= 1
            self._runs[run.producer_id] = run
            self._recorders[run.producer_id] = run.recorder
            for spool in adopted:
                self._recorders[spool.producer_id] = run.recorder
        self.loop.add(run.recorder)
        if self.delivery is not None:
            link = self.delivery.link
            self.delivery.track(run.spool, run.clock_ns)
            for spool in adopted:
                self.delivery.track(spool)
            link.watch(Topics.watched(run.project, run.name), run.on_watched)
            if link.connected:
                run.announce(link)
        return adopted

    def abandon(self) -> None:
        """A run that was expected will not attach (its making failed)."""
        with self._lock:
            self._expected -= 1
        self._close_if_unused()

    def wait_committed(self, producers: list[bytes], on_progress: Callable[[int], None], stall_s: float) -> None:
        if self.delivery is not None:
            self.delivery.uploader.wait_committed(producers, on_progress=on_progress, stall_s=stall_s)

    def publish_status(self, run: Run, status: run_pb2.RunStatus, timeout: float = 2.0) -> bool:
        link = self.link
        if link is None:
            return False
        return link.publish_and_wait(Topics.status(run.project, run.name), status.SerializeToString(), retain=True,
                                     timeout=timeout)

    def detach(self, run: Run) -> int:
        """Stop serving ``run`` (after its final round); free what the bridge committed of its
        spools and release them. Returns the batches left in them."""
        spools = [run.spool, *run.adopted]
        self.loop.remove(run.recorder)
        if self.delivery is not None:
            left = self.delivery.uploader.outstanding_batches([s.producer_id for s in spools])
            link = self.delivery.link
            link.unwatch(Topics.watched(run.project, run.name))
            link.unwatch(Topics.alerts(run.project, run.name))
            for spool in spools:
                spool.drop_committed(self.delivery.untrack(spool.producer_id).covers)
        else:
            left = sum(s.records for s in run.spool.segments)
        for spool in spools:
            spool.release()
        with self._lock:
            self._runs.pop(run.producer_id, None)
            for spool in spools:
                self._recorders.pop(spool.producer_id, None)
        self._close_if_unused()
        return left

    def _close_if_unused(self) -> None:
        with _registry_lock:
            with self._lock:
                if self._runs or self._expected or self.closed:
                    return
                self.closed = True
            key = self.settings.session_key()
            if _sessions.get(key) is self:
                del _sessions[key]
        self._stop()

    def _stop(self) -> None:
        """The last run finished: clear the session's retained status, disconnect cleanly
        (the broker then drops the Will), stop the threads."""
        if self.delivery is not None:
            self.delivery.link.publish_and_wait(Topics.session(self.id), b"", retain=True, timeout=2.0)
            self.delivery.stop()
        self.loop.stop()

    # ------------------------------------------------------------------ threads' callbacks
    def _announce(self, link: MqttLink) -> None:
        """On every (re)connect, in paho's thread: the session is running, and so is each run."""
        link.publish(Topics.session(self.id), self._status(run_pb2.RUN_STATE_RUNNING).SerializeToString(),
                     retain=True)
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.announce(link)

    def _spooled(self, recorders: list[Recorder]) -> None:
        if self.delivery is not None:
            self.delivery.uploader.spooled([r.spool.producer_id for r in recorders])

    def _space_freed(self, spools: list[Spool]) -> None:
        recorders = self._recorders
        for spool in spools:
            recorder = recorders.get(spool.producer_id)
            if recorder is not None:
                recorder.space_freed()

    def _adopt_leftovers(self, settings: Settings, own: bytes) -> list[Spool]:
        """Spools of dead producers in this spool directory (their lock is free)."""
        with self._lock:
            ours = {p.hex() for p in self._recorders} | {own.hex()}
        adopted = []
        for directory in list_producers(settings.spool_path):
            if directory.name in ours:
                continue
            try:
                spool = Spool.adopt(directory)
            except SpoolLocked:
                continue
            except OSError as exc:
                log.warning("curvestream: cannot read leftover spool %s: %s", directory, exc)
                continue
            if spool.segments:
                log.info("curvestream: replaying %d leftover segment(s) of %s/%s from %s",
                         len(spool.segments), spool.project, spool.run, directory)
                adopted.append(spool)
            else:
                spool.release()
        return adopted

    def forget_after_fork(self) -> None:
        self.closed = True
        self.loop.forget_after_fork()
        if self.delivery is not None:
            self.delivery.forget_after_fork()
