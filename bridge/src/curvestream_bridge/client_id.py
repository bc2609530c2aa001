"""The bridge's MQTT client id when ``CURVESTREAM_MQTT_CLIENT_ID`` is not set.

A broker lets one connection hold a client id: two bridges with the same id
knock each other off for ever. So each bridge makes its own,
``curvestream-bridge-<host>-<6 random characters>``, and keeps it in its data
directory (``mqtt-client-id``: beside the DuckDB file, else beside the parked
batches), so a restarted bridge gets its persistent session back (the
messages the broker kept while it was down) and names its InfluxDB rows as
before. The file is locked while the bridge runs: a second bridge on the same
data directory makes an id of its own, kept nowhere, and says so.

    >>> import re
    >>> bool(re.fullmatch(r"curvestream-bridge-[a-z0-9-]+-[a-z0-9]{6}", new_client_id("Lab PC 7")))
    True
"""

from __future__ import annotations

import fcntl
import logging
import os
import pathlib
import re
import secrets
import socket
import string
import time
import urllib.parse
import weakref
from collections.abc import Callable
from typing import IO

__all__ = ["ClientId", "TakeoverWatch", "new_client_id", "data_dir", "FILE_NAME"]

log = logging.getLogger("curvestream.bridge.mqtt")

FILE_NAME = "mqtt-client-id"
_ALPHABET = string.ascii_lowercase + string.digits


def new_client_id(host: str | None = None) -> str:
    host = re.sub(r"[^a-z0-9-]+", "-", (host or socket.gethostname()).lower()).strip("-")[:40] or "host"
    return f"curvestream-bridge-{host}-{''.join(secrets.choice(_ALPHABET) for _ in range(6))}"


def data_dir(store: str, parked_dir: str) -> pathlib.Path | None:
    """Where a bridge keeps its files: the DuckDB file's folder, else the parked batches' parent."""
    parts = urllib.parse.urlsplit(store)
    if parts.scheme == "duckdb" and parts.netloc != ":memory:":
        return pathlib.Path(parts.netloc + urllib.parse.unquote(parts.path)).parent  # as open_store reads it
    if parked_dir:
        return pathlib.Path(parked_dir).parent
    return None


class ClientId:
    """The id in use and, while the bridge runs, the lock on the file that keeps it."""

    def __init__(self, value: str, path: pathlib.Path | None = None, handle: IO[str] | None = None) -> None:
        self.value = value
        self.path = path  # where it is kept; None: not kept
        # a bridge dropped without stop() (a test's, a failed start's) still lets go of the file and its lock
        self._close = weakref.finalize(self, handle.close) if handle is not None else None

    @classmethod
    def resolve(cls, configured: str, directory: pathlib.Path | None) -> ClientId:
        if configured:
            return cls(configured)
        if directory is None:
            value = new_client_id()
            log.info("curvestream bridge: MQTT client id %s (no data directory: not kept across restarts)", value)
            return cls(value)
        path = directory / FILE_NAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handle = open(path, "a+", encoding="utf-8")
        except OSError as exc:
            value = new_client_id()
            log.warning("curvestream bridge: cannot keep the MQTT client id in %s (%s); using %s for this run only",
                        path, exc.strerror or exc, value)
            return cls(value)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            value = new_client_id()
            log.warning("curvestream bridge: another bridge runs on the data directory %s; this one connects as %s, "
                        "an id kept nowhere (its MQTT session is not kept across restarts). Give each bridge its "
                        "own data directory or CURVESTREAM_MQTT_CLIENT_ID", directory, value)
            return cls(value)
        handle.seek(0)
        value = handle.read().strip()
        if not value:
            value = new_client_id()
            handle.seek(0)
            handle.truncate()
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return cls(value, path, handle)

    def release(self) -> None:
        if self._close is not None:
            self._close()  # the lock goes with the file; once only


SESSION_TAKEN_OVER = 0x8E
"""MQTT 5's reason when another connection took the client id (MQTT 3.1.1 brokers just close the socket)."""


class TakeoverWatch:
    """Tells a connection another client took over from an ordinary loss: MQTT 5's
    reason code, or (any protocol) three connections in a row that the broker
    closed within ``within_s`` of their start. Returns the words to log.

        >>> now = [0.0]
        >>> watch = TakeoverWatch("bridge-1", clock=lambda: now[0])
        >>> watch.connected(); watch.dropped(None) is None
        True
        >>> watch.dropped(0x8E).startswith("another client is connected with this bridge's MQTT client id 'bridge-1'")
        True
    """

    def __init__(self, client_id: str, within_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.client_id = client_id
        self.within_s = within_s
        self._clock = clock
        self._since = -1e18
        self._quick = 0

    def connected(self) -> None:
        self._since = self._clock()

    def dropped(self, reason: int | None) -> str | None:
        self._quick = self._quick + 1 if self._clock() - self._since < self.within_s else 0
        if reason == SESSION_TAKEN_OVER:
            how = "the broker says the session was taken over"
        elif self._quick >= 3:
            how = f"the broker closed it {self._quick} times in a row within {self.within_s:g} s of connecting"
        else:
            return None
        return (f"another client is connected with this bridge's MQTT client id {self.client_id!r} and the broker "
                f"dropped this connection ({how}): two bridges (or a bridge and another program) share one id and "
                "knock each other off. Give each its own CURVESTREAM_MQTT_CLIENT_ID, or leave it unset so that each "
                "bridge makes its own")
