"""Reads nobody waits for any more.

A page that zooms again aborts the request of the zoom before; on two cores,
finishing that read would slow down the one the page does wait for. The API
runs each series read with a :class:`ReadCancel` in :data:`CANCEL` and sets
it when the client goes away. Engines stop what runs (DuckDB interrupts the
statement, :func:`interrupting`) and look at it between phases (:func:`check`,
which raises :class:`ReadCancelled`).

    >>> gone = ReadCancel()
    >>> token = CANCEL.set(gone)
    >>> check()  # the client is still there
    >>> with interrupting(lambda: print("statement interrupted")):
    ...     gone.set()
    Traceback (most recent call last):
    ...
    curvestream_bridge.store.cancel.ReadCancelled: the client went away
    >>> CANCEL.reset(token)
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator

__all__ = ["CANCEL", "ReadCancel", "ReadCancelled", "check", "interrupting"]


class ReadCancelled(Exception):
    """The client of this read went away: nobody reads its answer."""


class ReadCancel:
    """Set once the client of a read went away; runs the hooks the engine registered then
    (each must be quick and must not register or remove hooks: DuckDB's ``interrupt``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._hooks: list[Callable[[], None]] = []

    def set(self) -> None:
        # the hooks run under the lock that their removal takes: once a read's block has
        # ended, nothing interrupts its cursor (a thread's cursor serves its next read)
        with self._lock:
            if self._set:
                return
            self._set = True
            for hook in self._hooks:
                hook()

    def is_set(self) -> bool:
        return self._set

    @contextlib.contextmanager
    def hook(self, fn: Callable[[], None]) -> Iterator[None]:
        with self._lock:
            self._hooks.append(fn)
        try:
            yield
        finally:
            with self._lock:
                self._hooks.remove(fn)


CANCEL: contextvars.ContextVar[ReadCancel | None] = contextvars.ContextVar("curvestream_read_cancel", default=None)


def check() -> None:
    """Raise :class:`ReadCancelled` if the current read's client went away."""
    gone = CANCEL.get()
    if gone is not None and gone.is_set():
        raise ReadCancelled("the client went away")


@contextlib.contextmanager
def interrupting(interrupt: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``interrupt()`` is called if the client goes away; a
    block that ends because of it raises :class:`ReadCancelled`."""
    gone = CANCEL.get()
    if gone is None:
        yield
        return
    check()
    with gone.hook(interrupt):
        try:
            yield
        except Exception:
            check()  # the interrupt's own error, said plainly
            raise
    check()
