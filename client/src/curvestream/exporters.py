"""Where a spooled batch is handed over: one small protocol, two exporters.

``export(topic, payload) -> Outcome`` says what became of one batch:

- ``SUCCESS``: handed over. The batch still leaves the spool only when the
  bridge's ``Commit`` names it (MQTT: later, on the commit topic; HTTP: in the
  answer, passed to ``on_commit`` at once).
- ``RETRYABLE``: not now (broker down, bridge busy, a 5xx or 429; maybe with a
  ``retry_after_s``): the batch stays in the spool and is sent again.
- ``PERMANENT``: this batch can never be stored (the bridge refused it for
  good): it is counted and never re-sent.

``down_since()`` says whether an exporter can take batches now (None) or since
when it cannot, ``refused()`` whether its far end refused the connection outright
(nothing listens there, so waiting for it is pointless): the channel policy
(:mod:`.channels`) chooses by them.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Protocol

from curvestream_wire.v1 import run_pb2

from curvestream.http_fallback import BridgeHttp, Permanent, Retryable
from curvestream.mqtt import MqttLink

__all__ = ["ExportResult", "Outcome", "Exporter", "MqttExporter", "HttpExporter"]


class ExportResult(enum.Enum):
    SUCCESS = "success"
    RETRYABLE = "retryable"
    PERMANENT = "permanent"


@dataclasses.dataclass(frozen=True)
class Outcome:
    result: ExportResult
    retry_after_s: float | None = None
    detail: str = ""


SUCCESS = Outcome(ExportResult.SUCCESS)


class Exporter(Protocol):
    name: str

    def export(self, topic: str, payload: bytes) -> Outcome: ...

    def down_since(self) -> float | None:
        """None while batches can go out now; else since when (monotonic) they cannot."""
        ...

    def refused(self) -> bool:
        """True while the last connection attempt was refused (ECONNREFUSED)."""
        ...

    def shutdown(self, timeout: float = 2.0) -> None: ...


class MqttExporter:
    """QoS 1 publish on the run's points topic while the link is up."""

    name = "mqtt"

    def __init__(self, link: MqttLink) -> None:
        self.link = link

    def export(self, topic: str, payload: bytes) -> Outcome:
        if self.link.publish(topic, payload):
            return SUCCESS
        return Outcome(ExportResult.RETRYABLE, detail="MQTT link down")

    def down_since(self) -> float | None:
        return None if self.link.connected else self.link.down_since

    def refused(self) -> bool:
        return not self.link.connected and self.link.refused

    def shutdown(self, timeout: float = 2.0) -> None:
        """The link belongs to its owner (it also carries status and commits): left to it."""


class HttpExporter:
    """The direct-write fallback: POST to the bridge, which answers with the Commit."""

    name = "http"

    def __init__(self, http: BridgeHttp, on_commit: Callable[[run_pb2.Commit], None]) -> None:
        self.http = http
        self.on_commit = on_commit

    def export(self, topic: str, payload: bytes) -> Outcome:
        try:
            commit = self.http.ingest(payload)
        except Retryable as exc:
            return Outcome(ExportResult.RETRYABLE, exc.retry_after_s, str(exc))
        except Permanent as exc:
            return Outcome(ExportResult.PERMANENT, detail=str(exc))
        self.on_commit(commit)
        return SUCCESS

    def down_since(self) -> float | None:
        """Each request finds out for itself (failures back off in the uploader)."""
        return None

    def refused(self) -> bool:
        return False

    def shutdown(self, timeout: float = 2.0) -> None:
        self.http.close()
