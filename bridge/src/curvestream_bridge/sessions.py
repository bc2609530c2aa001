"""Runs that share one trainer connection, and what its Last Will means.

A trainer process sends all its runs over one MQTT connection, its session;
the connection's Last Will is ``lost`` on ``curvestream/v1/session/<id>``, and
each run's status names its session. :class:`SessionRuns` follows the run
statuses that pass by and turns a session's ``lost`` into a ``lost`` status for
each of its runs still running, handed to ingest like any status (dated by its
arrival there). A run that says ``running`` after its session was lost, with
no ``running`` from the session since (a retained status read after the Will,
as at a bridge's start), is lost too.

Memory: the runs still running, and a bounded number of lost sessions.

    >>> from curvestream_wire.v1 import run_pb2
    >>> runs = SessionRuns()
    >>> running = run_pb2.RunStatus(state=run_pb2.RUN_STATE_RUNNING, session=b"s1", producer_id=b"p1")
    >>> runs.run_status("mnist", "r1", running)
    []
    >>> will = run_pb2.RunStatus(state=run_pb2.RUN_STATE_LOST, session=b"s1")
    >>> [(s.project, s.run, s.state == run_pb2.RUN_STATE_LOST) for s in runs.session_status(will)]
    [('mnist', 'r1', True)]
    >>> runs.session_status(will)  # nothing left running
    []
"""

from __future__ import annotations

import collections
import threading

from curvestream_wire.v1 import run_pb2

__all__ = ["SessionRuns"]

REASON = "the trainer's connection was lost (the Last Will of its session)"


class SessionRuns:
    def __init__(self, max_lost_sessions: int = 10_000) -> None:
        self._running: dict[bytes, dict[tuple[str, str], bytes]] = {}  # session -> {(project, run): producer}
        self._lost: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        self._max_lost = max_lost_sessions
        self._lock = threading.Lock()

    def run_status(self, project: str, run: str, status: run_pb2.RunStatus) -> list[run_pb2.RunStatus]:
        """A run's status seen on its topic; returns the ``lost`` status to apply after it
        when its session is already lost."""
        if not status.session:
            return []
        key = (project, run)
        with self._lock:
            if status.state == run_pb2.RUN_STATE_RUNNING:
                if status.session in self._lost:
                    return [_lost(status.session, key, status.producer_id)]
                self._running.setdefault(status.session, {})[key] = status.producer_id
                return []
            runs = self._running.get(status.session)
            if runs is not None:
                runs.pop(key, None)
                if not runs:
                    del self._running[status.session]
        return []

    def session_status(self, status: run_pb2.RunStatus) -> list[run_pb2.RunStatus]:
        """The status of a session itself: ``lost`` (its Will) returns a ``lost`` status for
        each of its runs still running; ``running`` (it connected again) clears it."""
        with self._lock:
            if status.state == run_pb2.RUN_STATE_RUNNING:
                self._lost.pop(status.session, None)
                return []
            if status.state != run_pb2.RUN_STATE_LOST:
                return []
            self._lost[status.session] = None
            self._lost.move_to_end(status.session)
            while len(self._lost) > self._max_lost:
                self._lost.popitem(last=False)
            runs = self._running.pop(status.session, {})
        return [_lost(status.session, key, producer) for key, producer in runs.items()]


def _lost(session: bytes, key: tuple[str, str], producer: bytes) -> run_pb2.RunStatus:
    return run_pb2.RunStatus(version=1, project=key[0], run=key[1], state=run_pb2.RUN_STATE_LOST, reason=REASON,
                             producer_id=producer, session=session)
