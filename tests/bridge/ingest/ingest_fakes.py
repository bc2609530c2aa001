"""A store that keeps batches in memory, with faults on demand, and payload
makers: the seams for the ingest stages' unit tests."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream_bridge.batch import DecodedBatch

PID = b"\x01" * 16


def payload(seq: int, n: int = 4, project: str = "p", run: str = "r", pid: bytes = PID, sent_ns: int = 0,
            status: run_pb2.RunStatus | None = None) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=pid, seq=seq, project=project, run=run, sent_ns=sent_ns)
    s = b.scalars.add(key="loss")
    s.steps.extend(range(seq * n, seq * n + n))
    s.wall_ns.extend(range(10**18 + seq * n, 10**18 + seq * n + n))
    s.values.extend([float(i) for i in range(n)])
    if status is not None:
        b.status.CopyFrom(status)
    return b.SerializeToString()


class FakeStore:
    """The writer role in memory. ``faults``: exceptions the next writes raise, in
    order; ``refuse``: seqs whose batches raise StoreRejected; ``gate``: while
    cleared, a write waits (it has begun, it has not finished)."""

    name = "fake"

    def __init__(self) -> None:
        self.batches: dict[tuple[bytes, int], DecodedBatch] = {}
        self.writes: list[list[int]] = []
        self.faults: list[BaseException] = []
        self.refuse: set[int] = set()
        self.statuses: dict[tuple[str, str], run_pb2.RunStatus] = {}
        self.metas: list[run_pb2.RunMeta] = []
        self.range_reads: list[list[bytes]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.begun = threading.Event()

    def write(self, batches: Sequence[DecodedBatch]) -> None:
        self.begun.set()
        self.gate.wait()
        if self.faults:
            raise self.faults.pop(0)
        if any(b.seq in self.refuse for b in batches):
            from curvestream_bridge.store.base import StoreRejected

            raise StoreRejected("refused")
        self.writes.append([b.seq for b in batches])
        for b in batches:
            self.batches.setdefault((b.producer_id, b.seq), b)

    def stored_ranges(self, producer_id: bytes) -> list[tuple[int, int]]:
        return [(seq, seq) for pid, seq in sorted(self.batches) if pid == producer_id]

    def stored_ranges_many(self, producer_ids: Sequence[bytes]) -> dict[bytes, list[tuple[int, int]]]:
        self.range_reads.append(list(producer_ids))
        return {pid: self.stored_ranges(pid) for pid in producer_ids}

    def apply_status(self, status: run_pb2.RunStatus) -> bool:
        run = (status.project, status.run)
        known = self.statuses.get(run)
        if known is not None and known.updated_ns > status.updated_ns:
            return False
        self.statuses[run] = status
        return True

    def apply_meta(self, meta: run_pb2.RunMeta) -> None:
        self.metas.append(meta)

    def points(self) -> int:
        return sum(b.points for b in self.batches.values())
