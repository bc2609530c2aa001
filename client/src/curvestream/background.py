"""The daemon threads of a trainer process (the flush loop, the uploader): a named
thread running ``_run`` until :meth:`BackgroundLoop.stop`, woken by :meth:`wake`."""

from __future__ import annotations

import threading

__all__ = ["BackgroundLoop"]


class BackgroundLoop:
    thread_name = "curvestream"

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        raise NotImplementedError

    def wake(self) -> None:
        if not self._wake.is_set():  # the common case when woken often: no lock taken
            self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's thread does not exist here."""
        self._thread = None
        self._stop.set()
