"""A log that says each kind of trouble at most every few seconds, with how
many times it was kept quiet meanwhile: a store down for an hour is a few
hundred lines, not millions.

    >>> import logging
    >>> quiet = RateLimitedLog(logging.getLogger("example"), every_s=10.0)
    >>> quiet.warning("store", "store down: %s", "refused")   # logged
    >>> quiet.warning("store", "store down: %s", "refused")   # counted, not logged
    >>> quiet._suppressed
    {'store': 1}
"""

from __future__ import annotations

import logging
import time

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, every_s: float = 10.0) -> None:
        self.logger = logger
        self.every_s = every_s
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def warning(self, reason: str, msg: str, *args: object, level: int = logging.WARNING,
                exc_info: BaseException | None = None) -> None:
        """Log ``msg`` (at ``level``) unless ``reason`` was logged less than ``every_s`` ago."""
        now = time.monotonic()
        if now - self._last.get(reason, -1e9) >= self.every_s:
            n = self._suppressed.pop(reason, 0)
            suffix = f" ({n} more like it suppressed)" if n else ""
            template = msg + suffix
            self.logger.log(level, template, *args, exc_info=exc_info)
            self._last[reason] = now
        else:
            self._suppressed[reason] = self._suppressed.get(reason, 0) + 1
