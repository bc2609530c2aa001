"""What a run could not keep (its spool's disk full, its quota reached, its queue
full), recorded where ``curvestream status`` finds it:
``<spool dir>/losses/<producer>.json``.

The file is made at its full size when the run starts and then rewritten in
place, so it can still be updated once the disk is full. ``finish()`` removes
it when nothing was lost and keeps it otherwise: it stays listed by
``curvestream status`` until deleted. While the run lives it holds a lock on
the file; an empty record whose run died is removed by the next status.

    >>> import pathlib, tempfile
    >>> spool = pathlib.Path(tempfile.mkdtemp())
    >>> record = LossRecord(spool, b"\\x01" * 16, "mnist", "r1")
    >>> record.update(points=300, batches=2, reason="[Errno 28] No space left on device")
    >>> record.close()
    >>> [(r["project"], r["points"]) for r in read_losses(spool)]
    [('mnist', 300)]
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import pathlib
from typing import Any

__all__ = ["LossRecord", "read_losses"]

log = logging.getLogger("curvestream")

_SIZE = 4096  # one page: written in place, it needs no new block on a full disk


def _losses_dir(spool_dir: pathlib.Path) -> pathlib.Path:
    return spool_dir / "losses"


class LossRecord:
    """One run's record; every method is best effort and never raises."""

    def __init__(self, spool_dir: pathlib.Path, producer_id: bytes, project: str, run: str) -> None:
        self.path = _losses_dir(spool_dir) / f"{producer_id.hex()}.json"
        self._fields: dict[str, Any] = {"project": project[:1000], "run": run[:1000], "points": 0, "batches": 0,
                                        "reason": ""}
        self._fd: int | None = None
        try:
            self._fd = self._open()
            self._write()
        except OSError as exc:
            log.warning("curvestream: cannot make the loss record %s (%s); losses are still reported by finish()",
                        self.path, exc)

    def _open(self) -> int:
        for _ in range(3):  # another run may remove the empty directory between mkdir and open
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        raise FileNotFoundError(str(self.path.parent))

    @property
    def reason(self) -> str:
        return self._fields["reason"]

    def update(self, points: int, batches: int, reason: str) -> None:
        self._fields.update(points=points, batches=batches, reason=reason[:500])
        self._write()

    def _write(self) -> None:
        if self._fd is None:
            return
        body = json.dumps(self._fields, ensure_ascii=False).encode()
        try:
            os.pwrite(self._fd, body.ljust(_SIZE), 0)
        except OSError:
            pass  # the count is in the FinishReport all the same

    def close(self) -> None:
        """Keep the record if anything was lost, else remove it."""
        if self._fd is None:
            return
        if not self._fields["points"]:
            self.path.unlink(missing_ok=True)
            try:
                self.path.parent.rmdir()
            except OSError:
                pass  # other runs' records
        os.close(self._fd)
        self._fd = None


def read_losses(spool_dir: pathlib.Path) -> list[dict[str, Any]]:
    """The runs that lost points (``project``, ``run``, ``points``, ``batches``,
    ``reason``, ``file``); removes the empty records of runs that died."""
    out = []
    try:
        paths = sorted(_losses_dir(spool_dir).glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            fields = json.loads(path.read_bytes().decode().strip() or "{}")
        except (OSError, ValueError):
            continue
        if fields.get("points"):
            out.append({**fields, "file": str(path)})
        else:
            _remove_if_dead(path)
    return out


def _remove_if_dead(path: pathlib.Path) -> None:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink(missing_ok=True)  # no run holds it: its run died before finish()
    except OSError:
        pass  # a live run
    finally:
        os.close(fd)
