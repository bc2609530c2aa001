"""Parked batches: the bridge's dead-letter store for valid batches the store
failed on unexpectedly (a bug, an answer nobody foresaw).

A batch is parked before the trainer is told it may free its spool: from
then on the bridge owns it. One file per (producer, seq), written to a hidden
name, flushed to disk and renamed, so a file either holds the whole batch or
does not exist; parking the same batch again replaces it. A parked file is a
line of JSON (why, when, from where) followed by the batch exactly as it
arrived. ``curvestream-bridge replay-dead-letters`` sends each through the
ingest pipeline again; a batch the store takes (or holds already) leaves the
parked set.

    >>> import tempfile
    >>> parked = ParkedBatches(tempfile.mkdtemp())
    >>> parked.park(b"payload", b"\\x01" * 16, 7, "TypeError: boom", "mqtt")  # new: True; parked before: False
    True
    >>> [(p.seq, p.reason) for p in parked.entries()], parked.payload(parked.entries()[0])
    ([(7, 'TypeError: boom')], b'payload')
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import threading
import time

__all__ = ["ParkedBatches", "ParkedBatch"]

_SUFFIX = ".batch"


@dataclasses.dataclass(frozen=True)
class ParkedBatch:
    path: pathlib.Path
    producer_id: bytes
    seq: int
    reason: str
    source: str
    parked_ns: int

    def to_json(self) -> dict[str, object]:
        return {"producer": self.producer_id.hex(), "seq": self.seq, "reason": self.reason, "source": self.source,
                "parked_ms": self.parked_ns / 1e6, "file": self.path.name}


class ParkedBatches:
    """The parked set, in one directory (made when the first batch is parked)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = pathlib.Path(directory)
        self._lock = threading.Lock()
        self._count = len(self._files())

    @property
    def count(self) -> int:
        return self._count

    def park(self, payload: bytes, producer_id: bytes, seq: int, reason: str, source: str) -> bool:
        """Keep this batch durably; raises OSError (a full disk) when it could not,
        and then nothing of it is left behind. False: it was parked already (a
        re-delivery), and is now kept with the latest reason."""
        head = json.dumps({"producer": producer_id.hex(), "seq": seq, "reason": reason, "source": source,
                           "parked_ns": time.time_ns()}).encode() + b"\n"
        final = self.directory / f"{producer_id.hex()}-{seq:020d}{_SUFFIX}"
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            temp = self.directory / f".{final.name}.{os.getpid()}.tmp"
            existed = final.exists()
            try:
                with open(temp, "wb") as fh:
                    fh.write(head + payload)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(temp, final)
                _fsync_dir(self.directory)
            except OSError:
                temp.unlink(missing_ok=True)
                raise
            if not existed:
                self._count += 1
            return not existed

    def entries(self) -> list[ParkedBatch]:
        """The parked batches, oldest first."""
        out = []
        for path in self._files():
            try:
                with open(path, "rb") as fh:
                    head = json.loads(fh.readline())
            except (OSError, ValueError):
                continue  # removed meanwhile, or not ours
            out.append(ParkedBatch(path, bytes.fromhex(head["producer"]), int(head["seq"]), head["reason"],
                                   head["source"], int(head["parked_ns"])))
        return sorted(out, key=lambda p: (p.parked_ns, p.path.name))

    @staticmethod
    def payload(entry: ParkedBatch) -> bytes:
        with open(entry.path, "rb") as fh:
            fh.readline()
            return fh.read()

    def remove(self, entry: ParkedBatch) -> None:
        """The batch left the parked set (stored, or found malformed and dead-lettered)."""
        with self._lock:
            try:
                entry.path.unlink()
            except FileNotFoundError:
                return
            self._count -= 1
            _fsync_dir(self.directory)

    def _files(self) -> list[pathlib.Path]:
        try:
            return [p for p in self.directory.iterdir() if p.name.endswith(_SUFFIX) and not p.name.startswith(".")]
        except FileNotFoundError:
            return []


def _fsync_dir(directory: pathlib.Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
