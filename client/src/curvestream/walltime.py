"""A wall clock that a caller may pin for the calls it makes, for logging
points whose wall time is known already (TensorBoard's ``walltime=``).

    >>> clock = PinnableClock()
    >>> with clock.pinned(1_700_000_000_000_000_000):
    ...     clock()
    1700000000000000000

Given to :class:`curvestream.Run` as ``clock_ns``: ``Run.log`` reads the clock
first thing, on the calling thread, so a pin set around the call gives that
point its wall time. The pin is per thread: the run's own threads and other
threads logging at the same moment still read the real time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

__all__ = ["PinnableClock", "seconds_to_ns"]


def seconds_to_ns(seconds: float) -> int:
    """TensorBoard's float seconds as int nanoseconds (rounded, not truncated)."""
    return round(float(seconds) * 1e9)


class PinnableClock:
    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self) -> int:
        pinned = getattr(self._local, "ns", None)
        return time.time_ns() if pinned is None else pinned

    def pin(self, wall_ns: int | None) -> None:
        """Pin this thread's reading to ``wall_ns`` (``None``: the real time again)."""
        self._local.ns = wall_ns

    @contextlib.contextmanager
    def pinned(self, wall_ns: int) -> Iterator[None]:
        self.pin(wall_ns)
        try:
            yield
        finally:
            self.pin(None)
