"""Third-party libraries' log lines, told in curvestream's words.

amqtt (the embedded broker) logs a warning and a traceback for each trouble
with one message; under load that buried the console (672 lines in 15 s). Here
their warnings and errors are counted in ``/metrics``
(``curvestream_library_log_lines_total{library, level}``) and logged as one
line each, without the traceback, at most every 10 s per library and kind of
message, with how many were kept quiet meanwhile. What amqtt says about every
ordinary connection (:data:`ROUTINE`: a client trying MQTT 5 first, a
connection closed without a DISCONNECT) is only counted, at DEBUG on the
console. ``CURVESTREAM_LOG_LEVEL=DEBUG`` lets them through untouched.

    >>> from curvestream_bridge.metrics import LIBRARY_LOG_LINES, Metrics
    >>> m = Metrics()
    >>> router = LibraryLogs(m)
    >>> router.handle(logging.makeLogRecord({"name": "amqtt.broker", "levelno": logging.WARNING,
    ...                                      "levelname": "WARNING", "msg": "Timeout waiting for PUBACK"}))
    True
    >>> m.get(LIBRARY_LOG_LINES, library="amqtt", level="warning")
    1
"""

from __future__ import annotations

import logging
import re

from curvestream_bridge.metrics import LIBRARY_LOG_LINES, Metrics
from curvestream_bridge.ratelog import RateLimitedLog

__all__ = ["LibraryLogs", "route_library_logs", "LIBRARIES", "ROUTINE"]

LIBRARIES = ("amqtt", "transitions", "paho")
"""Loggers routed: the embedded broker, its state machine, and the MQTT client."""

log = logging.getLogger("curvestream.bridge.libraries")

_NUMBERS = re.compile(r"\d+")

ROUTINE = re.compile(r"Invalid connection from|Invalid protocol from|Will flag set, but will topic/message not present")
"""amqtt's lines about ordinary connections: a trainer that starts with MQTT 5 and falls back to
3.1.1 (amqtt 0.12 answers such a CONNECT with these), one that goes without a DISCONNECT."""


class LibraryLogs(logging.Handler):
    def __init__(self, metrics: Metrics, every_s: float = 10.0) -> None:
        super().__init__(logging.WARNING)
        self.metrics = metrics
        self._quiet = RateLimitedLog(log, every_s)

    def emit(self, record: logging.LogRecord) -> None:
        library = record.name.split(".")[0]
        level = record.levelname.lower()
        self.metrics.inc(LIBRARY_LOG_LINES, library=library, level=level)
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        first = (text.splitlines() or [""])[0][:300]
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            first += f" ({type(exc).__name__}: {str(exc)[:200]})"
        if library == "amqtt" and ROUTINE.search(first):
            log.debug("curvestream: %s %s: %s", library, level, first)
            return
        kind = f"{library} {record.levelno} {_NUMBERS.sub('#', first)[:60]}"  # packet ids etc. do not make a new kind
        self._quiet.warning(kind, "curvestream: %s %s: %s", library, level, first,
                            level=max(record.levelno, logging.WARNING))


def route_library_logs(metrics: Metrics) -> LibraryLogs | None:
    """Send :data:`LIBRARIES`' warnings and errors through one :class:`LibraryLogs`
    (their lower levels are dropped); nothing changes when curvestream itself logs at DEBUG."""
    if logging.getLogger("curvestream").getEffectiveLevel() <= logging.DEBUG:
        return None
    router = LibraryLogs(metrics)
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, LibraryLogs)]:
            logger.removeHandler(old)
        logger.addHandler(router)
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    return router
