"""The batch model: what a decoded, validated batch is, for every part that
handles one (the ingest pipeline, the store engines, the alert engine, the
live push). It depends on nothing of the bridge, so a store engine imports it
without importing the ingest edge that makes batches from the wire.

    >>> import numpy as np
    >>> col = ScalarColumn("loss", np.array([1, 2]), np.array([10, 20]), np.array([0.5, 0.25]))
    >>> DecodedBatch(b"p", 1, "proj", "run", [col], [], [], None, None, 0).points
    2
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from curvestream_wire.v1 import run_pb2

__all__ = ["DecodedBatch", "ScalarColumn"]


@dataclasses.dataclass
class ScalarColumn:
    key: str
    steps: np.ndarray  # int64
    wall_ns: np.ndarray  # int64
    values: np.ndarray  # float64, NaN and ±Inf kept


@dataclasses.dataclass
class DecodedBatch:
    producer_id: bytes
    seq: int
    project: str
    run: str
    scalars: list[ScalarColumn]
    histograms: list[Any]  # batch_pb2.Histogram
    texts: list[Any]  # batch_pb2.TextRecord
    meta: run_pb2.RunMeta | None
    status: run_pb2.RunStatus | None
    sealed_ns: int
    sent_ns: int = 0  # the client's clock when it sent the batch (0: an older client)
    alerts: list[Any] = dataclasses.field(default_factory=list)  # batch_pb2.CodeAlert: raised by the script

    @property
    def points(self) -> int:
        return sum(len(c.values) for c in self.scalars) + len(self.histograms) + len(self.texts)
