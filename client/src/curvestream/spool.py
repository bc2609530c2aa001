"""The on-disk spool: every batch is appended here before it is sent, and stays
until the bridge's commit watermark has passed it.

Layout, one directory per producer (one client session of one run)::

    <spool_dir>/<producer hex>/lock            flock held while the producer lives
    <spool_dir>/<producer hex>/<first seq>.seg segments, append-only

A segment starts with a header (magic, then a CRC-framed JSON object naming
the producer, project and run) and holds CRC-framed records::

    u32 magic | u32 payload length | u32 crc32(seq + payload) | u64 seq | payload

A torn tail (a crash in the middle of an append) or a damaged record fails its
CRC: the reader reports it and resynchronises on the next magic, so one bad
record never stops a replay. Segments are created under a temporary name and
renamed once their header is on disk, so a visible segment always has a header.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import errno
import fcntl
import json
import logging
import os
import pathlib
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator

__all__ = ["Spool", "SegmentInfo", "Damage", "iter_records", "list_producers", "SpoolLocked", "sync_spools"]

log = logging.getLogger("curvestream.spool")

FILE_MAGIC = b"CSSPOOL1"
RECORD_MAGIC = 0xC5A1_0001
_RECORD_HEAD = struct.Struct("<IIIQ")  # magic, length, crc, seq
_HEADER_HEAD = struct.Struct("<II")  # length, crc
RECORD_HEAD_SIZE = _RECORD_HEAD.size
MAX_RECORD_BYTES = 256 * 1024 * 1024
FRESH_MAX_BYTES = 4 * 1024 * 1024  # records kept in memory until the uploader reads them, per spool
_MAGIC_BYTES = struct.pack("<I", RECORD_MAGIC)


class SpoolLocked(Exception):
    """The producer directory belongs to a live process."""


@dataclasses.dataclass
class Damage:
    path: str
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path} at byte {self.offset}: {self.reason}"


@dataclasses.dataclass
class SegmentInfo:
    path: pathlib.Path
    first_seq: int
    last_seq: int = 0  # 0 while empty
    size: int = 0
    records: int = 0
    closed: bool = False
    created_monotonic: float = 0.0
    data_start: int = 0  # offset of the first record


def _crc(seq: int, payload: bytes | memoryview) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<Q", seq))) & 0xFFFFFFFF


def encode_record(seq: int, payload: bytes) -> bytes:
    return _RECORD_HEAD.pack(RECORD_MAGIC, len(payload), _crc(seq, payload), seq) + payload


def _read_header(data: bytes | memoryview, path: str) -> tuple[dict, int]:
    if bytes(data[:8]) != FILE_MAGIC:
        raise ValueError(f"{path}: not a curvestream spool segment")
    length, crc = _HEADER_HEAD.unpack_from(data, 8)
    start = 8 + _HEADER_HEAD.size
    raw = bytes(data[start : start + length])
    if len(raw) != length or zlib.crc32(raw) & 0xFFFFFFFF != crc:
        raise ValueError(f"{path}: damaged segment header")
    return json.loads(raw), start + length


def iter_records(
    data: bytes | memoryview,
    start: int,
    end: int,
    path: str = "",
    on_damage: Callable[[Damage], None] | None = None,
) -> Iterator[tuple[int, int, bytes]]:
    """Yield ``(offset, seq, payload)`` for every intact record in ``data[start:end]``."""
    pos = start
    head = _RECORD_HEAD.size
    while pos < end:
        if end - pos < head:
            if on_damage:
                on_damage(Damage(path, pos, f"torn tail: {end - pos} bytes, too short for a record"))
            return
        magic, length, crc, seq = _RECORD_HEAD.unpack_from(data, pos)
        body_end = pos + head + length
        if magic == RECORD_MAGIC and length <= MAX_RECORD_BYTES and body_end <= end:
            payload = bytes(data[pos + head : body_end])
            if _crc(seq, payload) == crc:
                yield pos, seq, payload
                pos = body_end
                continue
            reason = "checksum mismatch"
        elif magic == RECORD_MAGIC and body_end > end and length <= MAX_RECORD_BYTES:
            reason = f"torn tail: record of {length} bytes cut at {end - pos - head}"
        else:
            reason = "bad record header"
        nxt = bytes(data[pos + 1 : end]).find(_MAGIC_BYTES)
        if nxt >= 0 and reason.startswith("torn tail"):
            reason = "bad record length"  # more records follow: not the end of an interrupted write
        if on_damage:
            skipped = (nxt + 1) if nxt >= 0 else end - pos
            on_damage(Damage(path, pos, f"{reason}; skipped {skipped} bytes"))
        if nxt < 0:
            return
        pos = pos + 1 + nxt


def list_producers(spool_dir: pathlib.Path) -> list[pathlib.Path]:
    if not spool_dir.is_dir():
        return []
    return sorted(p for p in spool_dir.iterdir() if p.is_dir() and len(p.name) == 32)


class Spool:
    """The segments of one producer. Appends come from one thread (the recorder),
    reads and deletions from another (the uploader); a lock guards the list."""

    def __init__(self, directory: pathlib.Path, producer_id: bytes, project: str, run: str, *, owned: bool) -> None:
        self.dir = directory
        self.producer_id = producer_id
        self.project = project
        self.run = run
        self.owned = owned  # True: this process appends; False: adopted leftovers
        self.segments: list[SegmentInfo] = []
        self.damage: list[Damage] = []
        self._lock = threading.Lock()
        self._lock_fd: int | None = None
        self._fd: int | None = None  # the open segment, when owned
        self._fresh: dict[tuple[int, int], tuple[int, bytes]] = {}  # (segment, offset) -> (seq, payload)
        self._fresh_bytes = 0

    # ---------------------------------------------------------------- opening
    @classmethod
    def create(cls, spool_dir: pathlib.Path, producer_id: bytes, project: str, run: str) -> Spool:
        """A new producer's spool. Its directory appears under its final name
        already locked, so another run sending leftovers in the same spool
        directory never takes it for a dead producer's (and removes it)."""
        directory = spool_dir / producer_id.hex()
        if directory.is_dir():  # the same producer again: its own lock decides
            spool = cls(directory, producer_id, project, run, owned=True)
            spool._take_lock()
            return spool
        staging = spool_dir / f".{producer_id.hex()}.new"
        staging.mkdir(parents=True, exist_ok=True)
        spool = cls(staging, producer_id, project, run, owned=True)
        spool._take_lock()
        os.rename(staging, directory)  # the lock is on the file, and stays held
        spool.dir = directory
        return spool

    @classmethod
    def adopt(cls, directory: pathlib.Path) -> Spool:
        """Open a dead producer's leftovers; ``SpoolLocked`` when it still lives."""
        spool = cls(directory, bytes.fromhex(directory.name), "", "", owned=False)
        spool._take_lock()
        try:
            spool._scan()
        except BaseException:
            spool.release()
            raise
        return spool

    def _take_lock(self) -> None:
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SpoolLocked(str(self.dir)) from None
            raise
        self._lock_fd = fd

    def _scan(self) -> None:
        for path in sorted(self.dir.glob("*.seg")):
            data = path.read_bytes()
            try:
                header, data_start = _read_header(data, str(path))
            except ValueError as exc:
                self._report(Damage(str(path), 0, str(exc)))
                continue
            self.project = header.get("project", self.project)
            self.run = header.get("run", self.run)
            seg = SegmentInfo(path, int(header["first_seq"]), size=len(data), closed=True, data_start=data_start)
            for _, seq, _ in iter_records(data, data_start, len(data), str(path), self._report):
                seg.records += 1
                seg.last_seq = max(seg.last_seq, seq)
            if seg.records:
                self.segments.append(seg)
            else:
                path.unlink(missing_ok=True)
        for tmp in self.dir.glob("*.seg.tmp"):
            tmp.unlink(missing_ok=True)

    def _report(self, damage: Damage) -> None:
        self.damage.append(damage)
        log.warning("curvestream spool: damaged record skipped: %s", damage)

    # ---------------------------------------------------------------- writing
    def append(self, seq: int, payload: bytes, now: float) -> int:
        """Append one batch; return the bytes written. On a full disk, raise OSError
        and leave nothing of the record behind (a short write is cut off again)."""
        record = encode_record(seq, payload)
        with self._lock:
            seg = self.segments[-1] if self.segments and not self.segments[-1].closed else None
            if seg is None:
                seg = self._open_segment(seq, now)
            try:
                written = 0
                while written < len(record):
                    n = os.write(self._fd, record[written:])  # type: ignore[arg-type]
                    if n == 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(seg.path))
                    written += n
            except OSError:
                os.ftruncate(self._fd, seg.size)  # type: ignore[arg-type]
                raise
            if self._fresh_bytes + len(payload) <= FRESH_MAX_BYTES:
                self._fresh[(seg.first_seq, seg.size)] = (seq, payload)
                self._fresh_bytes += len(payload)
            seg.size += len(record)
            seg.records += 1
            seg.last_seq = seq
        return len(record)

    def _open_segment(self, first_seq: int, now: float) -> SegmentInfo:
        header = json.dumps(
            {"producer": self.producer_id.hex(), "project": self.project, "run": self.run, "first_seq": first_seq},
            ensure_ascii=False,
        ).encode()
        head = FILE_MAGIC + _HEADER_HEAD.pack(len(header), zlib.crc32(header) & 0xFFFFFFFF) + header
        path = self.dir / f"{first_seq:020d}.seg"
        tmp = path.with_suffix(".seg.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        try:
            if os.write(fd, head) != len(head):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
            os.fsync(fd)
        except OSError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.rename(tmp, path)
        _fsync_dir(self.dir)
        self._fd = fd
        seg = SegmentInfo(path, first_seq, size=len(head), created_monotonic=now, data_start=len(head))
        self.segments.append(seg)
        return seg

    def sync(self) -> None:
        """fsync the open segment (called once per flush interval)."""
        fd = self._fd
        if fd is not None:
            os.fsync(fd)

    def _open_fd(self) -> int | None:
        return self._fd

    def rotate_if_due(self, now: float, max_bytes: int, max_age_s: float) -> None:
        seg = self.segments[-1] if self.segments else None  # a look without the lock: most rounds stop here
        if seg is None or seg.closed or (seg.size < max_bytes and now - seg.created_monotonic < max_age_s):
            return
        with self._lock:
            seg = self.segments[-1] if self.segments else None
            if seg is None or seg.closed or not seg.records:
                return
            if seg.size >= max_bytes or now - seg.created_monotonic >= max_age_s:
                self._close_open_segment()

    def _close_open_segment(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
        if self.segments and not self.segments[-1].closed:
            self.segments[-1].closed = True

    # ---------------------------------------------------------------- reading
    def read_from(self, seg: SegmentInfo, offset: int) -> Iterator[tuple[int, int, bytes]]:
        """Intact records of ``seg`` from ``offset`` up to what is written now.

        Records just appended come from memory, read once (the uploader sends a batch
        right after it was spooled: no file opened for it); the rest from the file,
        one record at a time: the uploader stops at its window, and reading the rest
        of an 8 MB segment on every round was a quarter of the client's time under
        load. Anything irregular is read as a whole, as iter_records has it."""
        end = seg.size
        head = _RECORD_HEAD.size
        while offset < end and self._fresh:
            with self._lock:
                fresh = self._fresh.pop((seg.first_seq, offset), None)
                if fresh is not None:
                    self._fresh_bytes -= len(fresh[1])
            if fresh is None:
                break
            yield offset, fresh[0], fresh[1]
            offset += head + len(fresh[1])
        if offset >= end:
            return
        with open(seg.path, "rb") as fh:
            fh.seek(offset)
            pos = offset
            while pos + head <= end:
                magic, length, crc, seq = _RECORD_HEAD.unpack(fh.read(head))
                if magic != RECORD_MAGIC or length > MAX_RECORD_BYTES or pos + head + length > end:
                    break
                payload = fh.read(length)
                if len(payload) != length or _crc(seq, payload) != crc:
                    break
                yield pos, seq, payload
                pos += head + length
            if pos >= end:
                return
            fh.seek(pos)
            data = fh.read(end - pos)
        for at, seq, payload in iter_records(data, 0, len(data), str(seg.path), self._report_once(pos)):
            yield pos + at, seq, payload

    def pop_fresh(self, first_seq: int, offset: int) -> tuple[int, bytes] | None:
        """The record just appended at ``offset`` of segment ``first_seq``, from memory, once."""
        if not self._fresh:
            return None
        with self._lock:
            fresh = self._fresh.pop((first_seq, offset), None)
            if fresh is not None:
                self._fresh_bytes -= len(fresh[1])
        return fresh

    def ends_at(self, first_seq: int, offset: int) -> bool:
        """Whether ``offset`` of segment ``first_seq`` is the end of everything appended."""
        segments = self.segments
        return bool(segments) and segments[-1].first_seq == first_seq and segments[-1].size == offset

    def _report_once(self, base: int) -> Callable[[Damage], None]:
        """Report damage found in a slice read from byte ``base``, once per place."""
        def report(damage: Damage) -> None:
            damage = Damage(damage.path, damage.offset + base, damage.reason)
            if not any(d.path == damage.path and d.offset == damage.offset for d in self.damage):
                self._report(damage)

        return report

    # ---------------------------------------------------------------- deleting
    def drop_committed(self, is_committed: Callable[[int, int], bool]) -> int:
        """Delete closed segments whose every seq is committed; return bytes freed."""
        freed = 0
        with self._lock:
            keep = []
            for seg in self.segments:
                if seg.closed and seg.records and is_committed(seg.first_seq, seg.last_seq):
                    seg.path.unlink(missing_ok=True)
                    freed += seg.size
                    self._forget_fresh(seg.first_seq)
                else:
                    keep.append(seg)
            self.segments = keep
        return freed

    def _forget_fresh(self, first_seq: int) -> None:
        """Records of a deleted segment that were never read back (committed unsent)."""
        for key in [k for k in self._fresh if k[0] == first_seq]:
            self._fresh_bytes -= len(self._fresh.pop(key)[1])

    def snapshot(self) -> list[SegmentInfo]:
        with self._lock:
            return [dataclasses.replace(s) for s in self.segments]

    @property
    def bytes_on_disk(self) -> int:
        return sum(s.size for s in self.segments)  # no lock: a list's append and its replacement are atomic

    def close_for_writing(self) -> None:
        with self._lock:
            self._close_open_segment()

    def release(self, remove_if_empty: bool = True) -> None:
        """Close files and the lock; remove the directory when nothing is left."""
        with self._lock:
            self._close_open_segment()
            empty = not any(s.records for s in self.segments)
            if remove_if_empty and empty:
                for seg in self.segments:
                    seg.path.unlink(missing_ok=True)
                for leftover in self.dir.glob("*.seg"):
                    leftover.unlink(missing_ok=True)
                (self.dir / "lock").unlink(missing_ok=True)
                try:
                    self.dir.rmdir()
                except OSError:
                    pass
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def forget_after_fork(self) -> None:
        """In a forked child: close the child's copies of the descriptors (the
        parent keeps its lock and its segment) without touching any file."""
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = None
        self._lock_fd = None
        self._lock = threading.Lock()


_syncfs: Callable[[int], int] | bool | None = False  # False: not looked up yet


def _syncfs_function() -> Callable[[int], int] | None:
    """Linux's syncfs(2), or None where there is none."""
    global _syncfs
    if _syncfs is False:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _syncfs = libc.syncfs
        except (OSError, AttributeError):
            _syncfs = None
    return _syncfs  # type: ignore[return-value]


def sync_spools(spools: Iterable[Spool]) -> None:
    """Make what was appended to these spools durable: one ``fsync`` for a single
    open segment, one ``syncfs`` per filesystem for several (Linux), since an fsync
    each costs one disk flush each (100 of them ~280 ms on a virtual disk, against
    ~12 ms for one syncfs; bench/README.md)."""
    fds = [fd for fd in (s._open_fd() for s in spools) if fd is not None]
    syncfs = _syncfs_function() if len(fds) > 1 else None
    if syncfs is None:
        for fd in fds:
            os.fsync(fd)
        return
    by_device: dict[int, int] = {}
    for fd in fds:
        by_device.setdefault(os.fstat(fd).st_dev, fd)
    for fd in by_device.values():
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


def _fsync_dir(path: pathlib.Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
