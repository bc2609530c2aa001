"""The rollup rows of recently read series, kept in the bridge's memory.

A snapped view (:mod:`..m4.snap`) needs no raw point: only the rollup rows of
the level its grid unit is aligned to and of the levels above, near the
column edges. InfluxDB 1.x reads them only as whole runs of rows (an edge a
statement costs ~0.3 ms, and decodes a block of 1,000 rows), so the rows of
the range a view needs at each level are read once, by one statement per
level, merged per bucket (rows of several writers), and kept here; the next
views of that range are folded from memory (:class:`Entry` is a
:class:`..m4.query.RowSource`).

Kept rows are exact as long as no writer has stored a row of the series
since they were read. Every write of a series rewrites its top-level rows
(their counts grow), and the writer stores them only after the other rows
of the write (:meth:`.store.InfluxStore.write`), so the top-level rows, one
to a few per writer, are the series' version: each read reads them anyway
(the series' extent), and an entry read at another version is dropped
whole. An entry is bounded by a byte budget shared by all entries
(``?rollup_cache_mb=``, default 512; 0: nothing kept), least recently used
first out.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable, Hashable

import numpy as np

from curvestream_bridge.store.m4.agg import M4Agg, merge
from curvestream_bridge.store.m4.fold import Folded
from curvestream_bridge.store.m4.plan import Pieces

__all__ = ["RowCache", "Entry", "Level"]


@dataclasses.dataclass(frozen=True)
class Level:
    """One level's kept rows: one merged row per bucket (``b`` sorted, unique), and
    the bucket ranges ``[lo, hi)`` read so far (sorted, disjoint)."""

    b: np.ndarray
    agg: M4Agg
    cover: tuple[tuple[int, int], ...]

    def missing(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of ``[lo, hi)`` not read yet."""
        out = []
        at = lo
        for a, b in self.cover:
            if b <= at:
                continue
            if a >= hi:
                break
            if a > at:
                out.append((at, a))
            at = max(at, b)
            if at >= hi:
                break
        if at < hi:
            out.append((at, hi))
        return out

    def with_rows(self, ranges: list[tuple[int, int]], b: np.ndarray, agg: M4Agg, axis: str) -> Level:
        """A new level with the rows read for ``ranges`` (several per bucket allowed: merged)."""
        keys, group = np.unique(b, return_inverse=True)
        rows = merge(agg, group.ravel(), len(keys), axis) if len(b) else M4Agg.empty()
        allb = np.concatenate([self.b, keys])
        order = np.argsort(allb, kind="stable")
        merged = M4Agg.concat([self.agg, rows]).take(order)
        cover = sorted(self.cover + tuple(ranges))
        joined: list[tuple[int, int]] = []
        for a, z in cover:
            if joined and a <= joined[-1][1]:
                joined[-1] = (joined[-1][0], max(joined[-1][1], z))
            else:
                joined.append((a, z))
        return Level(allb[order], merged, tuple(joined))

    def fold_into(self, acc: Folded, k: int, pieces: Pieces, axis: str) -> None:
        """Fold the rows of level k's pieces (each piece a range of ``b``)."""
        r = pieces.ranges[k]
        if len(r):
            acc.rows(self.agg, np.searchsorted(self.b, r[:, 0]), np.searchsorted(self.b, r[:, 1]), r[:, 2], axis)

    @property
    def nbytes(self) -> int:
        return self.b.nbytes + sum(getattr(self.agg, f.name).nbytes for f in dataclasses.fields(M4Agg))


_EMPTY = Level(np.zeros(0, np.int64), M4Agg.empty(), ())


@dataclasses.dataclass(frozen=True)
class Entry:
    """The kept rows of one series and axis at one ``version`` (its top-level rows), per level."""

    version: Hashable
    levels: dict[int, Level]

    def level(self, k: int) -> Level:
        return self.levels.get(k, _EMPTY)

    @property
    def nbytes(self) -> int:
        return sum(lv.nbytes for lv in self.levels.values())


class Rows:
    """What one frame folds: the kept rows of levels ``k0`` and up, and rows read for the
    levels below (near the few edges that cut a bucket), as a :class:`..m4.query.RowSource`."""

    def __init__(self, entry: Entry, k0: int, top: int, below: list[tuple[int, np.ndarray, M4Agg]],
                 top_rows: tuple[np.ndarray, M4Agg]) -> None:
        self.entry, self.k0, self.top, self.below, self.top_rows = entry, k0, top, below, top_rows

    def fold_into(self, acc: Folded, pieces: Pieces, axis: str) -> None:
        for k in range(self.k0, self.top):
            self.entry.level(k).fold_into(acc, k, pieces, axis)
        b, agg = self.top_rows
        acc.each_row(agg, pieces.interval_of(self.top, b), axis)
        for k, b, agg in self.below:
            if k < self.k0:  # rows read beside cut buckets at kept levels are folded from the kept ones
                acc.each_row(agg, pieces.interval_of(k, b), axis)


class RowCache:
    """Entries per (series, axis) within ``budget_bytes``, least recently used out first."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[Hashable, Entry] = collections.OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    @property
    def entries(self) -> int:
        return len(self._entries)

    def rows(self, key: Hashable, version: Hashable, axis: str, needed: dict[int, tuple[int, int]],
             read: Callable[[list[tuple[int, int, int]]], list[tuple[np.ndarray, M4Agg]]]) -> Entry:
        """An entry of ``key`` at ``version`` that holds the rows of every level ``k``
        over the buckets ``needed[k]`` (``[lo, hi)``). What is not kept is read by
        ``read([(k, lo, hi), ...])`` (each range's buckets and rows, in order) and kept
        within the budget; an entry of another version is dropped first."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.version != version:
                self._drop(key)
                entry = None
            if entry is None:
                entry = Entry(version, {})
            else:
                self._entries.move_to_end(key)
        wanted = [(k, lo, hi) for k, (a, z) in sorted(needed.items()) for lo, hi in entry.level(k).missing(a, z)]
        if not wanted:
            self.hits += 1
            return entry
        self.misses += 1
        got = read(wanted)
        levels = dict(entry.levels)
        for k in sorted({w[0] for w in wanted}):
            parts = [(w, g) for w, g in zip(wanted, got) if w[0] == k]
            levels[k] = levels.get(k, _EMPTY).with_rows(
                [(lo, hi) for (_, lo, hi), _ in parts], np.concatenate([g[0] for _, g in parts]),
                M4Agg.concat([g[1] for _, g in parts]), axis)
        fresh = Entry(version, levels)
        if self.enabled:
            with self._lock:
                current = self._entries.get(key)
                if current is None or current.version == version:  # else a newer read kept a newer version
                    if current is not None:
                        self._drop(key)
                    if fresh.nbytes <= self.budget:
                        self._entries[key] = fresh
                        self.bytes += fresh.nbytes
                        while self.bytes > self.budget:
                            self._drop(next(iter(self._entries)))
        return fresh

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self.bytes -= entry.nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0
