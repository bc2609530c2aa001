"""Every point of a series from its chunks, in wall-time order, a page at a time.

The chunk index of the series (id, first wall time, count) is read once: the
export is the series as it was then, whatever is written meanwhile (chunks
are never changed once written). Pages of about ``PAGE_POINTS`` points are
fetched by chunk id in the order of their first wall time. Chunks of
different batches may overlap in time (a late batch, a re-delivery after a
restart): the points of a page that a later chunk could still precede are
held back and merged with the next page, so the pages come out sorted with
few points held. Each page is fetched on the calling thread's cursor, so the
pages may be read on different threads (an HTTP answer streamed from a
thread pool).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import duckdb
import numpy as np

from curvestream_bridge.store.base import PointColumns
from curvestream_bridge.store.duckdb import chunks as chunk_codec
from curvestream_bridge.store.duckdb.aggrows import scan

__all__ = ["PAGE_POINTS", "all_points"]

PAGE_POINTS = 1 << 20


def _page_bounds(counts: np.ndarray, page_points: int) -> list[tuple[int, int]]:
    """[a, b) ranges of chunks holding about ``page_points`` points each (at least one chunk)."""
    ends = np.cumsum(counts)
    bounds: list[tuple[int, int]] = []
    a = 0
    while a < len(counts):
        before = int(ends[a - 1]) if a else 0
        b = min(max(int(np.searchsorted(ends, before + page_points, side="left")) + 1, a + 1), len(counts))
        bounds.append((a, b))
        a = b
    return bounds


def _read_page(cur: duckdb.DuckDBPyConnection, sid: int, cids: np.ndarray) -> np.ndarray:
    with scan(cur, "want_c", {"cid": cids, "i": np.arange(len(cids), dtype=np.int64)}):
        blobs = cur.execute("SELECT c.pts FROM chunks c JOIN want_c w ON c.cid = w.cid WHERE c.sid = ? ORDER BY w.i",
                            [sid]).fetchnumpy()["pts"]
    if len(blobs) != len(cids):
        raise RuntimeError(f"series {sid}: {len(cids)} chunks listed, {len(blobs)} read")
    return chunk_codec.decode(blobs)


def all_points(cursor: Callable[[], duckdb.DuckDBPyConnection], sid: int) -> Iterator[PointColumns]:
    page_points = PAGE_POINTS
    index = cursor().execute("SELECT cid, w0, n FROM chunks WHERE sid = ? ORDER BY w0, cid", [sid]).fetchnumpy()
    cids = np.asarray(index["cid"], dtype=np.int64)
    w0 = np.asarray(index["w0"], dtype=np.int64)
    held = np.zeros(0, dtype=chunk_codec.RECORD)
    for a, b in _page_bounds(np.asarray(index["n"], dtype=np.int64), page_points):
        page = _read_page(cursor(), sid, cids[a:b])
        if len(held):
            page = np.concatenate((held, page))
        wall = page["wall"]
        if len(wall) > 1 and not bool(np.all(wall[1:] >= wall[:-1])):
            page = page[np.argsort(wall, kind="stable")]
        cut = len(page) if b == len(cids) else int(np.searchsorted(page["wall"], w0[b], side="left"))
        held = page[cut:]
        out = page[:cut]
        if len(out):
            yield PointColumns(np.ascontiguousarray(out["step"]), np.ascontiguousarray(out["wall"]),
                               np.ascontiguousarray(out["value"]))
