"""The one retry delay of every retry loop: jittered exponential backoff that
honours a server's ``Retry-After`` and whose waits wake on shutdown.

    >>> b = Backoff(initial_s=0.2, max_s=1.0, rng=lambda: 0.5)  # rng 0.5: no jitter
    >>> [b.next_delay() for _ in range(5)]
    [0.2, 0.4, 0.8, 1.0, 1.0]
    >>> b.next_delay(retry_after_s=3.0)
    3.0
    >>> b.reset(); b.next_delay()
    0.2

A server's ``Retry-After`` header, in seconds or as an HTTP date:

    >>> parse_retry_after("7")
    7.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0)
    10.0
    >>> parse_retry_after("soon") is None, parse_retry_after(None) is None
    (True, True)
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable

__all__ = ["Backoff", "parse_retry_after"]


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from an HTTP ``Retry-After`` value (delay-seconds or an
    HTTP date, RFC 9110 10.2.3), never negative; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Backoff:
    """Delays of ``initial_s``, doubling up to ``max_s``, each scaled by a random
    factor in [0.5, 1.5) so that many clients retrying together spread out."""

    def __init__(self, initial_s: float, max_s: float, multiplier: float = 2.0,
                 rng: Callable[[], float] = random.random) -> None:
        if not 0 < initial_s <= max_s:
            raise ValueError(f"backoff: need 0 < initial_s <= max_s, got {initial_s}, {max_s}")
        self.initial_s = initial_s
        self.max_s = max_s
        self.multiplier = multiplier
        self._rng = rng
        self._next = initial_s

    def next_delay(self, retry_after_s: float | None = None) -> float:
        """The delay before the next attempt; a server's ``Retry-After`` wins."""
        base = self._next
        self._next = min(self._next * self.multiplier, self.max_s)
        if retry_after_s is not None:
            return max(0.0, retry_after_s)
        return min(base * (0.5 + self._rng()), self.max_s)

    def reset(self) -> None:
        """After a success: the next failure starts from ``initial_s`` again."""
        self._next = self.initial_s

    def wait(self, stop: threading.Event, retry_after_s: float | None = None) -> bool:
        """Sleep the next delay unless ``stop`` is set first; True when stopping."""
        return stop.wait(self.next_delay(retry_after_s))
