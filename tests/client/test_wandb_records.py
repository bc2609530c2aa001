"""The W&B run file framing (LevelDB's log behind a ':W&B' header): records
split over blocks, block trailers, a torn tail and a damaged chunk, on files
framed here as W&B frames them (real W&B files: tests/integrations/test_wandb_import.py)."""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from curvestream.importers.wandb_records import BLOCK, HEADER, DamagedRecord, RecordReader


def frame(records: list[bytes]) -> bytes:
    """Records framed as W&B's writer frames them (header in the first block)."""
    out = bytearray(HEADER)
    for data in records:
        first = True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < 7:
                out += b"\0" * left
                continue
            piece, data = data[:left - 7], data[left - 7:]
            kind = (1 if first else 4) if not data else (2 if first else 3)
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + piece), len(piece), kind) + piece
            first = False
            if not data:
                break
    return bytes(out)


def read(body: bytes) -> tuple[list[bytes], bool]:
    reader = RecordReader(io.BytesIO(body), "run-x.wandb")
    return [data for _, data in reader], reader.torn_tail


def test_records_of_any_size_come_back_across_blocks_and_trailers():
    records = [bytes([i % 251]) * size for i, size in enumerate([0, 1, 100, BLOCK - 14, 5, 3 * BLOCK + 17, 9, 40_000])]
    records += [b"x" * n for n in range(BLOCK - 40, BLOCK - 20)]  # ends landing in each block trailer size
    body = frame(records)
    assert read(body) == (records, False)


def test_a_file_cut_inside_a_chunk_or_a_record_ends_before_it():
    records = [b"a" * 10, b"b" * (BLOCK + 100), b"c" * 10]
    body = frame(records)
    for cut in (len(body) - 3, len(HEADER) + 17 + 7 + 5, len(HEADER) + 17 + BLOCK):
        got, torn = read(body[:cut])
        assert torn and got == records[:len(got)] and len(got) < 3


def test_a_damaged_chunk_is_named_by_its_offset():
    body = bytearray(frame([b"first record", b"second record"]))
    body[len(HEADER) + 7 + len(b"first record") + 7 + 2] ^= 0x40
    with pytest.raises(DamagedRecord, match=r"run-x.wandb: damaged W&B record at byte 26 \(checksum\)"):
        read(bytes(body))
    with pytest.raises(DamagedRecord, match="not a W&B run file"):
        read(b"\x00" * 100)
