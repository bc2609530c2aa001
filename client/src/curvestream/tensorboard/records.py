"""TensorBoard event files read record by record, checked as TensorFlow's
record reader checks them::

    u64 length | u32 masked crc32c(length) | payload | u32 masked crc32c(payload)

A file still being written ends in a partial record: reading stops before it
(``torn_tail``) so an import never stores half an event. A record whose checksum
fails raises :class:`DamagedRecord` naming the file and the byte offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

__all__ = ["read_records", "DamagedRecord", "masked_crc32c"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")


def _crc32c_function() -> Callable[[bytes], int]:
    try:
        from crc32c import crc32c as hardware  # hardware CRC32C, the package tensorboardX uses too

        return hardware
    except ImportError:
        pass
    try:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import crc32c
    except ImportError:
        from tensorboardX.crc32c import crc32c
    return crc32c


_crc32c: Callable[[bytes], int] | None = None


def masked_crc32c(data: bytes) -> int:
    global _crc32c
    if _crc32c is None:
        _crc32c = _crc32c_function()
    crc = _crc32c(data) & 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class DamagedRecord(ValueError):
    def __init__(self, path: str, offset: int, what: str) -> None:
        super().__init__(f"{path}: damaged record at byte {offset} ({what})")
        self.path = path
        self.offset = offset


class RecordReader:
    """Iterates ``(offset, payload)``; ``torn_tail`` tells whether the file ended mid-record.
    Reads in large chunks: an event is a few dozen bytes, and a read per record costs more than the record."""

    CHUNK = 8 * 1024 * 1024

    def __init__(self, fh: BinaryIO, path: str = "") -> None:
        self._fh = fh
        self.path = path
        self.torn_tail = False

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        global _crc32c
        if _crc32c is None:
            _crc32c = _crc32c_function()
        crc32c = _crc32c
        unpack_length, unpack_crc = _LENGTH.unpack_from, _CRC.unpack_from
        fh = self._fh
        base = fh.tell()  # file offset of buf[0]
        buf = b""
        pos = 0
        while True:
            avail = len(buf) - pos
            need = 12
            if avail >= 12:
                (length,) = unpack_length(buf, pos)
                crc = crc32c(buf[pos:pos + 8]) & 0xFFFFFFFF
                if (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF != unpack_crc(buf, pos + 8)[0]:
                    raise DamagedRecord(self.path, base + pos, "length checksum")
                need = 16 + length
                if avail >= need:
                    payload = buf[pos + 12:pos + 12 + length]
                    crc = crc32c(payload) & 0xFFFFFFFF
                    if (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF != unpack_crc(buf, pos + 12 + length)[0]:
                        raise DamagedRecord(self.path, base + pos, "payload checksum")
                    yield base + pos, payload
                    pos += need
                    continue
            more = fh.read(max(self.CHUNK, need - avail))
            if not more:
                self.torn_tail = avail > 0
                return
            base += pos
            buf = buf[pos:] + more
            pos = 0


def read_records(path: str) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        yield from RecordReader(fh, path)
