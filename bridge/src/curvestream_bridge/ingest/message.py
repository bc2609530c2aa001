"""What enters the pipeline: a message from a source, with the means to answer it."""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Callable
from typing import Any

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.parked import ParkedBatch

__all__ = ["Kind", "Message"]


class Kind:
    POINTS = "points"
    STATUS = "status"
    META = "meta"
    TASK = "task"  # a callable the writer runs after the writes of the messages before it (a run's deletion)


@dataclasses.dataclass
class Message:
    kind: str
    payload: bytes
    source: str  # "mqtt" | "http" | "replay"
    topic_run: tuple[str, str] | None = None
    ack: Callable[[], None] | None = None  # MQTT: acknowledge to the broker
    reply: concurrent.futures.Future | None = None  # HTTP: gets the Commit or the Rejected
    received_ns: int = 0
    parked: ParkedBatch | None = None  # a replay: the parked batch this payload came from
    decoded: DecodedBatch | None = None  # decoded (and clock-corrected) when received, already pushed live
    retained: bool = False  # MQTT: delivered from the broker's retained store (published before the subscription)
    task: Callable[[], Any] | None = None  # Kind.TASK: what to run; its result or error goes to ``reply``
