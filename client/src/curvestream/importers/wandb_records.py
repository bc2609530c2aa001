"""The records of a W&B run file (``run-<id>.wandb``), framed as LevelDB's log
(``doc/log_format.md`` of LevelDB) behind a 7-byte header::

    header   b":W&B" | uint16 LE 0xBEE1 | uint8 version (0)
    blocks   32 KiB each (the first one starts with the header); a block holds
             chunks, and fewer than 7 bytes left at its end are zero padding
    chunk    uint32 LE crc32(type byte + data) | uint16 LE length | uint8 type | data
             type 1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST: a record is one FULL
             chunk or FIRST, MIDDLE…, LAST

W&B writes its CRC as zlib's CRC-32 (not LevelDB's masked CRC-32C). A file
still being written ends in a partial chunk or record: reading stops before it.
A chunk whose checksum fails, or chunks out of order, raise
:class:`DamagedRecord` naming the file and the byte offset.

    >>> import io, struct, zlib
    >>> def chunk(kind, data): return struct.pack("<IHB", zlib.crc32(bytes([kind]) + data), len(data), kind) + data
    >>> body = b":W&B" + struct.pack("<HB", 0xBEE1, 0) + chunk(1, b"one") + chunk(2, b"tw") + chunk(4, b"o")
    >>> [data for _, data in RecordReader(io.BytesIO(body))]
    [b'one', b'two']
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["RecordReader", "read_records", "DamagedRecord", "HEADER", "BLOCK"]

HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32 * 1024
_CHUNK_HEAD = struct.Struct("<IHB")
_ZEROS = bytes(_CHUNK_HEAD.size)
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


class DamagedRecord(ValueError):
    def __init__(self, path: str, offset: int, what: str) -> None:
        super().__init__(f"{path}: damaged W&B record at byte {offset} ({what})")
        self.path = path
        self.offset = offset


class RecordReader:
    """Iterates ``(offset of the record's first chunk, record bytes)``;
    ``torn_tail`` tells whether the file ended inside a chunk or a record."""

    def __init__(self, fh: BinaryIO, path: str = "") -> None:
        self._fh = fh
        self.path = path
        self.torn_tail = False

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        head = self._fh.read(len(HEADER))
        if head[:4] != HEADER[:4]:
            raise DamagedRecord(self.path, 0, "not a W&B run file: no ':W&B' header")
        if head[4:7] != HEADER[4:7]:
            raise DamagedRecord(self.path, 4, f"unknown W&B file version {head[4:7].hex()}")
        offset = len(HEADER)
        parts: list[bytes] = []
        first_at = 0
        block = head + self._fh.read(BLOCK - len(HEADER))
        base = 0  # file offset of block[0]
        while True:
            pos = offset - base
            fits = BLOCK - pos >= _CHUNK_HEAD.size
            if fits and len(block) - pos < _CHUNK_HEAD.size:  # the file ends here
                self.torn_tail = bool(parts) or len(block) > pos
                return
            if not fits or block[pos:pos + _CHUNK_HEAD.size] == _ZEROS:  # the block's zero trailer: next block
                base += BLOCK
                offset = base
                block = self._fh.read(BLOCK)
                if not block:
                    self.torn_tail = bool(parts)
                    return
                continue
            crc, length, kind = _CHUNK_HEAD.unpack_from(block, pos)
            end = pos + _CHUNK_HEAD.size + length
            if end > BLOCK:
                raise DamagedRecord(self.path, offset, "chunk runs past its block")
            if end > len(block):
                self.torn_tail = True
                return
            data = block[pos + _CHUNK_HEAD.size:end]
            if zlib.crc32(bytes([kind]) + data) != crc:
                raise DamagedRecord(self.path, offset, "checksum")
            if kind == FULL and not parts:
                yield offset, data
            elif kind == FIRST and not parts:
                first_at, parts = offset, [data]
            elif kind in (MIDDLE, LAST) and parts:
                parts.append(data)
                if kind == LAST:
                    yield first_at, b"".join(parts)
                    parts = []
            else:
                raise DamagedRecord(self.path, offset, f"chunk of type {kind} out of order")
            offset = base + end


def read_records(path: str) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        yield from RecordReader(fh, path)
