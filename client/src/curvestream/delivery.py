"""Where spooled batches go, assembled in one place: an MQTT link, the bridge's
direct-write fallback, the channel policy between them and the uploader that
knows them only as exporters. Used by the runs of a process (:mod:`.session`),
``curvestream sync`` and the TensorBoard importer.

Building it does no I/O and starts nothing; :meth:`Delivery.start` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from curvestream_wire.seqset import SeqSet
from curvestream_wire.v1 import run_pb2

from curvestream import notices
from curvestream.channels import FallbackPolicy
from curvestream.exporters import HttpExporter, MqttExporter
from curvestream.http_fallback import BridgeHttp
from curvestream.mqtt import MqttLink
from curvestream.settings import Settings
from curvestream.spool import Spool
from curvestream.uploader import Uploader

__all__ = ["Delivery"]


class Delivery:
    def __init__(
        self,
        settings: Settings,
        client_id: str,
        *,
        will: tuple[str, bytes] | None = None,
        on_connected: Callable[[MqttLink], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self.http = BridgeHttp(settings.bridge_url, settings.write_token) if settings.bridge_url else None
        self.link = MqttLink(settings, client_id, on_commit=self._on_commit, will=will, on_connected=on_connected,
                             clock=clock, on_change=self._changed)
        fallback = HttpExporter(self.http, self._on_commit) if self.http is not None else None
        policy = FallbackPolicy(MqttExporter(self.link), fallback, settings.fallback_after_ms / 1000)
        self.uploader = Uploader(settings, policy, clock=clock, wall_clock_ns=wall_clock_ns, tick=self.link.poll)
        self.uploader.on_event = self._said

    def _on_commit(self, commit: run_pb2.Commit) -> None:
        self.uploader.on_commit(commit)

    def _changed(self) -> None:
        self.uploader.wake()

    def _said(self, event: str, exporter: str, detail: str) -> None:
        """What the uploader met, said on stderr (:mod:`.notices`, each once): batches going
        over HTTP, or nowhere."""
        settings, link = self.settings, self.link
        if event == "fallback":
            notices.fallback(settings, link.last_error)
        elif event == "waiting" and (self._clock() - link.down_since) * 1000 >= max(settings.fallback_after_ms, 5000):
            notices.unreachable(settings, link.last_error)  # and no bridge URL to fall back on
        elif event == "failed" and exporter == "http":
            notices.unreachable(settings, detail)

    def track(self, spool: Spool, wall_clock_ns: Callable[[], int] | None = None) -> None:
        """Send this spool's batches (the commits for them are listened for first)."""
        self.link.watch_commits(spool.producer_id)
        self.uploader.track(spool, wall_clock_ns)

    def untrack(self, producer_id: bytes) -> SeqSet:
        """Stop sending this producer's batches; returns what the bridge committed of them."""
        self.link.unwatch_commits(producer_id)
        return self.uploader.untrack(producer_id)

    def start(self) -> None:
        self.uploader.start()
        self.link.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.uploader.stop(timeout)
        self.link.stop()

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's threads and socket are left alone."""
        self.link.abandon_after_fork()
        self.uploader.forget_after_fork()
