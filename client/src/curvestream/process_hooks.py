"""What a run asks of its process: finish at exit, a failed status after an
uncaught exception, and nothing done twice in a forked child.

Installed when the first run starts, never at import: a process that only
imports curvestream (a bridge, a tool) keeps its own excepthook and fork hooks.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import weakref
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curvestream.run import Run

__all__ = ["watch", "forget"]

log = logging.getLogger("curvestream")

_live_runs: weakref.WeakSet[Run] = weakref.WeakSet()
_last_uncaught: tuple[type[BaseException], BaseException] | None = None
_installed = False
_lock = threading.Lock()


def watch(run: Run) -> None:
    """From now on until ``forget``: finish the run at exit (failed after an
    uncaught exception) and detach it in forked children."""
    _install()
    _live_runs.add(run)
    atexit.register(_finish_at_exit, weakref.ref(run))


def forget(run: Run) -> None:
    _live_runs.discard(run)


def _install() -> None:
    """The excepthook remembers an uncaught exception so the exit handler marks
    the run failed; the fork hook makes a forked child (a DataLoader worker)
    leave the parent's spool and connection alone."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        previous = sys.excepthook

        def excepthook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
            global _last_uncaught
            _last_uncaught = (exc_type, exc)
            previous(exc_type, exc, tb)

        sys.excepthook = excepthook
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)


def _finish_at_exit(ref: weakref.ref[Run]) -> None:
    run = ref()
    if run is None or run.finished:
        return
    exc = _last_uncaught
    try:
        if exc is not None:
            run.finish("failed", f"{exc[0].__name__}: {exc[1]}"[:2000])
        else:
            run.finish()
    except Exception:
        log.exception("curvestream: finishing run %s/%s at exit failed", run.project, run.name)


def _after_fork_in_child() -> None:
    from curvestream import session

    for run in list(_live_runs):
        run.after_fork_in_child()
    session.forget_after_fork()
