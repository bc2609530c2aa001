"""The binary answer of the series endpoints (``Accept:
application/vnd.curvestream.series``, see docs/http-api.md): the JSON answer's
fields in a small JSON header, its point arrays as little-endian columns.

    magic    4 bytes  b"CSS1"
    length   uint32 LE, the header's length in bytes
    header   UTF-8 JSON: the JSON answer with every "points" object replaced
             by {"n": points, "offset": where its columns start, in bytes
             after the padding}
    padding  zero bytes up to a multiple of 8
    columns  per series: x float64[n], y float64[n], step int64[n], time_ms float64[n]

Every column starts at a multiple of 8, so a browser reads it in place as a
``Float64Array`` / ``BigInt64Array`` over the body. NaN and ±Inf are IEEE
values in y (the header's ``before``/``after`` spell them as the JSON answer
does).

    >>> import numpy as np
    >>> body = encode({"raw": True, "points": None}, [{"x": np.array([0.0, 1.0]), "y": np.array([np.nan, np.inf]),
    ...                                               "step": np.array([0, 1]), "time_ms": np.array([5.0, 6.0])}])
    >>> head, cols = decode(body)
    >>> head["points"], cols[0]["y"].tolist(), cols[0]["step"].tolist()
    ({'n': 2, 'offset': 0}, [nan, inf], [0, 1])
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

__all__ = ["MEDIA_TYPE", "MAGIC", "COLUMNS", "encode", "decode", "wants_binary"]

MEDIA_TYPE = "application/vnd.curvestream.series"
MAGIC = b"CSS1"
COLUMNS = (("x", "<f8"), ("y", "<f8"), ("step", "<i8"), ("time_ms", "<f8"))


def wants_binary(accept: str | None) -> bool:
    """Whether an ``Accept`` header asks for the binary answer (it must name it: ``*/*`` gets JSON)."""
    return accept is not None and any(part.split(";")[0].strip().lower() == MEDIA_TYPE for part in accept.split(","))


def encode(header: dict[str, Any], columns: list[dict[str, np.ndarray]]) -> bytes:
    """``header``: the JSON answer, either one series (its ``points`` key is
    filled in) or ``{"series": [...]}`` (each one's ``points``), in the order
    of ``columns``."""
    targets = header["series"] if "series" in header else [header]
    if len(targets) != len(columns):
        raise ValueError(f"{len(targets)} series in the header, {len(columns)} sets of columns")
    parts: list[bytes] = []
    offset = 0
    for target, cols in zip(targets, columns):
        n = len(cols["x"])
        target["points"] = {"n": n, "offset": offset}
        for name, dtype in COLUMNS:
            data = np.ascontiguousarray(cols[name], dtype=dtype)
            if len(data) != n:
                raise ValueError(f"column {name} holds {len(data)} values, x holds {n}")
            parts.append(data.tobytes())
            offset += 8 * n
    text = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    pad = -(8 + len(text)) % 8
    return b"".join([MAGIC, struct.pack("<I", len(text)), text, b"\0" * pad, *parts])


def decode(body: bytes) -> tuple[dict[str, Any], list[dict[str, np.ndarray]]]:
    """The header and each series' columns (for tests and Python clients)."""
    if body[:4] != MAGIC:
        raise ValueError("not a curvestream series answer")
    (length,) = struct.unpack_from("<I", body, 4)
    header = json.loads(body[8:8 + length])
    start = 8 + length + (-(8 + length) % 8)
    targets = header["series"] if "series" in header else [header]
    out = []
    for target in targets:
        n, at = target["points"]["n"], start + target["points"]["offset"]
        cols = {}
        for i, (name, dtype) in enumerate(COLUMNS):
            cols[name] = np.frombuffer(body, dtype=dtype, count=n, offset=at + 8 * n * i)
        out.append(cols)
    return header, out
