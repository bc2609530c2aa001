"""TensorBoard event files read record by record, checked as TensorFlow's
record reader checks them::

    u64 length | u32 masked crc32c(length) | payload | u32 masked crc32c(payload)

A file still being written ends in a partial record: reading stops before it
(``torn_tail``) so an import never stores half an event. A record whose checksum
fails raises :class:`DamagedRecord` naming the file and the byte offset.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Callable, Iterator

__all__ = ["read_records", "DamagedRecord", "masked_crc32c"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")


def _crc32c_function() -> Callable[[bytes], int]:
    try:
        from crc32c import crc32c  # hardware CRC32C, the package tensorboardX uses too

        return crc32c
    except ImportError:
        pass
    try:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import crc32c
    except ImportError:
        from tensorboardX.crc32c import crc32c  # type: ignore[no-redef]
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
    """Iterates ``(offset, payload)``; ``torn_tail`` tells whether the file ended mid-record."""

    def __init__(self, fh: BinaryIO, path: str = "") -> None:
        self._fh = fh
        self.path = path
        self.torn_tail = False

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        fh = self._fh
        offset = fh.tell()
        while True:
            head = fh.read(12)
            if not head:
                return
            if len(head) < 12:
                self.torn_tail = True
                return
            (length,) = _LENGTH.unpack_from(head)
            if masked_crc32c(head[:8]) != _CRC.unpack_from(head, 8)[0]:
                raise DamagedRecord(self.path, offset, "length checksum")
            body = fh.read(length + 4)
            if len(body) < length + 4:
                self.torn_tail = True
                return
            payload = body[:length]
            if masked_crc32c(payload) != _CRC.unpack_from(body, length)[0]:
                raise DamagedRecord(self.path, offset, "payload checksum")
            yield offset, payload
            offset += 12 + length + 4


def read_records(path: str) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        yield from RecordReader(fh, path)
