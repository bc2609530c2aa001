"""The one retry delay of every retry loop: jittered exponential backoff that
honours a server's ``Retry-After`` and whose waits wake on shutdown.

    >>> b = Backoff(initial_s=0.2, max_s=1.0, rng=lambda: 0.5)  # rng 0.5: no jitter
    >>> [b.next_delay() for _ in range(5)]
    [0.2, 0.4, 0.8, 1.0, 1.0]
    >>> b.next_delay(retry_after_s=3.0)
    3.0
    >>> b.reset(); b.next_delay()
    0.2
"""

from __future__ import annotations

import random
import threading
from typing import Callable

__all__ = ["Backoff"]


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
