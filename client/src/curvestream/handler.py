"""A ``logging.Handler`` that records log lines as text on a run.

    >>> import logging, curvestream
    >>> logging.getLogger("train").addHandler(curvestream.LogHandler())  # doctest: +SKIP

Records of curvestream's own loggers are skipped (no feedback loops).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from curvestream.current import current_run

if TYPE_CHECKING:
    from curvestream.run import Run

__all__ = ["LogHandler"]


class LogHandler(logging.Handler):
    def __init__(self, run: Run | None = None, key: str = "log", level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self._run = run
        self.key = key

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "curvestream" or record.name.startswith("curvestream."):
            return
        run = self._run
        if run is None:
            run = current_run()
        if run is None:
            return
        try:
            run.log_text(self.key, self.format(record), level=record.levelno)
        except Exception:
            self.handleError(record)
