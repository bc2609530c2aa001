"""Raw points packed in chunks: the DuckDB store keeps a series' points as rows
of up to ``CHUNK_POINTS`` consecutive points (one batch, wall-time order; once
a series has rollups, a chunk also ends where its bottom step bucket or its
bottom time bucket ends, so the chunks of a straddling bucket hold its points
and few others), each a little-endian array of ``(step int64, wall_ns int64,
value float64)``.

Why not one row per point: a zoomed-out query needs the raw points of about
two bottom buckets per pixel column, scattered over the whole series. DuckDB
reads a column in vectors of 2,048 rows, so fetching 4,000 scattered points
from a 100M-row table decodes most of it; fetching 4,000 chunks by id
(a hash join on one small column, then one BLOB per hit) does not. NaN and
±Inf are stored as they are.

    >>> split(5, size=2).tolist(), split(5, (np.array([0, 0, 0, 1, 1]),), size=2).tolist()
    ([0, 2, 4], [0, 2, 3])
    >>> blobs = encode(np.array([1, 2, 3]), np.array([10, 20, 30]), np.array([0.5, np.nan, -np.inf]), split(3, size=2))
    >>> [len(b) for b in blobs]
    [48, 24]
    >>> decode(blobs)["value"].tolist()
    [0.5, nan, -inf]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

__all__ = ["CHUNK_POINTS", "RECORD", "split", "encode", "decode"]

CHUNK_POINTS = 128
RECORD = np.dtype([("step", "<i8"), ("wall", "<i8"), ("value", "<f8")])


def split(n: int, groups: tuple[np.ndarray, ...] = (), size: int = CHUNK_POINTS) -> np.ndarray:
    """Start offsets of chunks of at most ``size`` points that also start
    wherever one of ``groups`` (arrays of one value per point) changes."""
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for group in groups:
        change |= group[1:] != group[:-1]
    starts = np.flatnonzero(np.concatenate(([True], change)))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lens = np.diff(np.append(starts, n))
    if np.all(lens <= size):
        return starts
    pieces = -(-lens // size)
    first = np.repeat(starts, pieces)
    k = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    return first + k * size


def encode(step: np.ndarray, wall: np.ndarray, value: np.ndarray, starts: np.ndarray) -> list[bytes]:
    """Pack points (already in wall order) into one blob per chunk (``starts``: see :func:`split`)."""
    rec = np.empty(len(step), dtype=RECORD)
    rec["step"], rec["wall"], rec["value"] = step, wall, value
    raw = rec.tobytes()
    bounds = (np.append(starts, len(step)) * RECORD.itemsize).tolist()
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


def decode(blobs: Sequence[bytes] | np.ndarray) -> np.ndarray:
    """The points of these chunks (a list or an object array of blobs), as one record array."""
    if len(blobs) == 0:
        return np.zeros(0, dtype=RECORD)
    return np.frombuffer(b"".join(blobs), dtype=RECORD)
