"""Every point of some series as a stream of binary frames: the export
endpoint's ``format=binary`` (media type ``application/vnd.curvestream.points``),
which ``curvestream.Api`` reads into DataFrames. One frame::

    magic    4 bytes  b"CSP1"
    length   uint32 LE, the header's length in bytes
    header   UTF-8 JSON: {"key": K, "n": n} for n points of key K
    padding  zero bytes up to a multiple of 8 from the frame's start
    columns  step int64[n], time_ns int64[n], value float64[n], little-endian

A key's frames follow each other in wall-time order. The stream ends with a
frame ``{"end": true, "points": total}`` and no columns; a stream without it
was cut short (a frame ``{"error": why}`` says why when the sender knew).
Values keep NaN, ±Inf and -0.0 as IEEE bytes; times are exact nanoseconds.

Unlike the series answer (``CSS1``), whose columns are a view's float64
x and milliseconds, these are the stored integers, and a stream has no total
length up front: it is sent as the store reads it.

    >>> import io, numpy as np
    >>> body = b"".join([*frame("loss", np.array([1, 2]), np.array([10, 20]), np.array([np.nan, -np.inf])),
    ...                  end_frame(2)])
    >>> [(k, s.tolist(), v.tolist()) for k, s, t, v in read_frames(io.BytesIO(body))]
    [('loss', [1, 2], [nan, -inf])]
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["MEDIA_TYPE", "MAGIC", "frame", "end_frame", "error_frame", "read_frames", "StreamCut"]

MEDIA_TYPE = "application/vnd.curvestream.points"
MAGIC = b"CSP1"
_COLUMNS = ("<i8", "<i8", "<f8")


class StreamCut(Exception):
    """The stream ended before its end frame, or the sender reported an error."""


class _ReadInto(Protocol):
    def readinto(self, buffer: Any) -> int | None: ...


def _head(header: dict[str, Any]) -> bytes:
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<I", len(text)) + text + b"\0" * (-(8 + len(text)) % 8)


def frame(key: str, step: Any, time_ns: Any, value: Any) -> list[bytes]:
    """One frame of ``key``'s points, as parts to write one after the other."""
    import numpy as np

    n = len(step)
    cols = [np.ascontiguousarray(c, dtype=d) for c, d in zip((step, time_ns, value), _COLUMNS)]
    if any(len(c) != n for c in cols):
        raise ValueError("the columns of a frame must have the same length")
    return [_head({"key": key, "n": n}), *(c.tobytes() for c in cols)]


def end_frame(points: int) -> bytes:
    return _head({"end": True, "points": points})


def error_frame(why: str) -> bytes:
    return _head({"error": why})


def _fill(stream: _ReadInto, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = stream.readinto(view[got:])
        if not n:
            raise StreamCut(f"the points stream ended {len(view) - got} bytes into a frame")
        got += n


def read_frames(stream: _ReadInto) -> Iterator[tuple[str, Any, Any, Any]]:
    """``(key, step, time_ns, value)`` numpy arrays for each frame of a stream
    (anything with ``readinto``: an HTTP response, a file), read in place;
    raises :class:`StreamCut` when the end frame never comes."""
    import numpy as np

    total = 0
    head = bytearray(8)
    while True:
        try:
            _fill(stream, memoryview(head))
        except StreamCut:
            raise StreamCut(f"the points stream ended after {total:,} points, before its end frame") from None
        if head[:4] != MAGIC:
            raise StreamCut(f"not a points stream frame (starts {bytes(head[:4])!r})")
        (length,) = struct.unpack_from("<I", head, 4)
        text = bytearray(length + (-(8 + length) % 8))
        _fill(stream, memoryview(text))
        header = json.loads(bytes(text[:length]))
        if "error" in header:
            raise StreamCut(f"the bridge stopped the stream: {header['error']}")
        if header.get("end"):
            if header.get("points") != total:
                raise StreamCut(f"the stream says {header.get('points')} points, {total} came")
            return
        n = int(header["n"])
        cols = [np.empty(n, dtype=d) for d in _COLUMNS]
        for col in cols:
            _fill(stream, col.data.cast("B"))
        total += n
        yield header["key"], *cols
