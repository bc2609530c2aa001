"""How a long wait for the bridge shows itself: a bar on a terminal, a
sentence every few seconds anywhere else (a log file, a batch job's output).

    >>> import io
    >>> out = io.StringIO()
    >>> show = WaitProgress("curvestream: run p/r", stream=out, points_per_batch=100)
    >>> show(40); show(10); show(0)
    >>> print(out.getvalue().strip())
    curvestream: run p/r: 40 of 40 batches left (~4,000 points)
    curvestream: run p/r: all 40 batches done
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["WaitProgress"]


class WaitProgress:
    """Call it with the number of batches left; it decides what to print and when."""

    def __init__(self, label: str, total: int | None = None, unit: str = "batches", stream: TextIO | None = None,
                 points_per_batch: float = 0.0, delay_s: float = 0.0, every_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.points_per_batch = points_per_batch
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._clock = clock
        self._start = clock()
        self._delay_s = delay_s
        self._every_s = 0.2 if self.tty else every_s
        self._last = -1e18
        self._shown = False

    def __call__(self, left: int) -> None:
        if self.total is None or left > self.total:
            self.total = left
        now = self._clock()
        if left and (now - self._start < self._delay_s or now - self._last < self._every_s):
            return
        if not left and not self._shown:
            return  # done before anything was worth saying
        self._last = now
        self._shown = True
        self.stream.write(self._bar(left) if self.tty else self._words(left) + "\n")
        self.stream.flush()

    def _words(self, left: int) -> str:
        if not left:
            return f"{self.label}: all {self.total:,} {self.unit} done"
        points = f" (~{round(left * self.points_per_batch):,} points)" if self.points_per_batch else ""
        return f"{self.label}: {left:,} of {self.total:,} {self.unit} left{points}"

    def _bar(self, left: int) -> str:
        total = self.total or 0
        done = max(0, total - left)
        width = 30
        filled = int(width * done / total) if total else width
        end = "\n" if not left else ""
        return f"\r{self.label} [{'#' * filled}{'-' * (width - filled)}] {done}/{total} {self.unit}{end}"
