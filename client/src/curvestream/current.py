"""The process's current run: the one ``curvestream.log()`` writes to and a
:class:`~curvestream.handler.LogHandler` without a run of its own follows."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curvestream.run import Run

__all__ = ["current_run", "make_current"]

_current: Run | None = None


def current_run() -> Run | None:
    return _current


def make_current(run: Run | None) -> Run | None:
    """Make ``run`` the current one (None: no run); returns the one it replaces."""
    global _current
    previous, _current = _current, run
    return previous
