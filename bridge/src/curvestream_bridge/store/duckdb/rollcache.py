"""The rollup rows of recently read series, kept in memory and exact.

A query of a long series spends most of its time reading its rollup rows
(:mod:`.points`): a join of the wanted buckets against tables that hold every
series' rows. Only this process can write the file (DuckDB locks it), so a copy
of a series' rows in memory can be kept exact: loaded after its first read,
extended by every write that commits rows of it, dropped when the database is
opened again. A read then finds its rows by binary search. A read that finds
no rows kept reads them from the tables as it would without the cache and
queues the series for one loader thread (a load of a 10M-point series costs
about what two reads cost: the read that asked does not wait for it).

Per (series, axis) an :class:`Entry` holds, per level, one merged row per bucket
sorted by bucket (plus the chunk-id ranges of every bottom row, the ranges the
raw points of a straddling bucket are read by), and the rows later writes added,
as they were written: a read merges the rows of a bucket as it merges any
(:func:`..m4.query.assemble`); past :data:`COMPACT_SHARE` of the merged rows
they are merged in. Entries are never changed: a write builds new arrays.

Consistency: a read must use the rows of its own DuckDB snapshot (its chunk
reads go by the chunk ids of these rows). Commits are counted; a read fixes
its snapshot (BEGIN and the first statement that reads a table) under
:attr:`RollupCache.lock` and notes the last commit and the series of a commit
under way, if any (:meth:`RollupCache.committing`: the COMMIT itself runs
outside the lock, so reads never wait for it). A read uses an entry only when
it reflects no later commit than its snapshot and no commit under way then.
A load runs in a snapshot of its own, and its rows are kept only if no commit
touched their series since that snapshot began (nor was under way then). The
entries are held in LRU order within a byte budget
(``duckdb:///file.db?rollup_cache_mb=N``, 0: no cache, reads go to SQL).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import queue
import threading
from typing import Any, Callable, Iterator

import duckdb
import numpy as np

from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.duckdb.aggrows import AGG_NAMES, agg_from, ints
from curvestream_bridge.store.duckdb.upper import upper_rows
from curvestream_bridge.store.m4.agg import M4Agg, merge
from curvestream_bridge.store.m4.levels import LevelPlan

__all__ = ["RollupCache", "Reader", "Entry", "Added", "begin_read", "COMPACT_SHARE", "COMPACT_MIN"]

log = logging.getLogger("curvestream.bridge.duckdb")

COMPACT_SHARE = 16
"""A level's added rows are merged in once they exceed 1/16 of its merged rows…"""
COMPACT_MIN = 512
"""… and this many: a live series' small writes append, a merge copies the level."""

Added = tuple[str, int, np.ndarray, np.ndarray, M4Agg]
"""Rows a write added: (axis, level, sids, buckets, aggregates; bottom ones with c0/c1)."""


@dataclasses.dataclass(frozen=True)
class Level:
    """One level's rows: merged (``b`` sorted, unique) and added since (``pb``, any order)."""

    b: np.ndarray
    agg: M4Agg
    pb: np.ndarray
    pagg: M4Agg

    def rows(self, want: np.ndarray | None) -> tuple[np.ndarray, M4Agg]:
        """The rows of the sorted buckets ``want`` (all rows when None)."""
        if want is None:
            b, agg = self.b, self.agg
        else:
            at = np.searchsorted(self.b, want)
            at = at[self.b[np.minimum(at, len(self.b) - 1)] == want] if len(self.b) else at[:0]
            b, agg = self.b[at], self.agg.take(at)
        if len(self.pb) == 0:
            return b, agg
        mine = np.flatnonzero(np.isin(self.pb, want)) if want is not None else slice(None)
        return np.concatenate([b, self.pb[mine]]), M4Agg.concat([agg, self.pagg.take(mine)])


@dataclasses.dataclass(frozen=True)
class Entry:
    """The rows of one series and axis as of commit ``as_of``. ``cb``/``c0``/``c1``:
    the chunk-id range of every bottom row, sorted by bucket (those added since
    ride in ``levels[0].pagg``)."""

    plan: LevelPlan
    levels: tuple[Level, ...]
    cb: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    as_of: int

    @property
    def nbytes(self) -> int:
        n = self.cb.nbytes + self.c0.nbytes + self.c1.nbytes
        for lv in self.levels:
            n += lv.b.nbytes + lv.pb.nbytes + _agg_bytes(lv.agg) + _agg_bytes(lv.pagg)
        return n

    def rows(self, pieces: Any) -> list[tuple[int, np.ndarray, M4Agg]]:
        """The rows ``(k, buckets, agg)`` of a frame's pieces (all of the top
        level), as :func:`..m4.query.assemble` takes them."""
        top = self.plan.top
        return [(k, *lv.rows(None if k == top else pieces.keys(k))) for k, lv in enumerate(self.levels)]

    def chunk_ranges(self, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chunk-id ranges ``(c0, c1)`` of every bottom row of ``buckets`` (sorted)."""
        lo, hi = np.searchsorted(self.cb, buckets, "left"), np.searchsorted(self.cb, buckets, "right")
        lens = hi - lo
        idx = np.repeat(lo, lens) + np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        added = self.levels[0]
        mine = np.flatnonzero(np.isin(added.pb, buckets))
        return (np.concatenate([self.c0[idx], added.pagg.c0[mine]]),
                np.concatenate([self.c1[idx], added.pagg.c1[mine]]))


class RollupCache:
    """Entries per (sid, axis) within ``budget_bytes``; see the module docstring."""

    def __init__(self, budget_bytes: int, cursor: Callable[[], duckdb.DuckDBPyConnection]) -> None:
        self.budget = budget_bytes
        self.lock = threading.Lock()
        self._cursor = cursor  # the calling thread's cursor of the open database
        self._queue: queue.SimpleQueue[tuple[int, str, LevelPlan] | None] = queue.SimpleQueue()
        self._queued: set[tuple[int, str]] = set()
        self._idle = threading.Condition()
        self._loader: threading.Thread | None = None
        self._entries: collections.OrderedDict[tuple[int, str], Entry] = collections.OrderedDict()
        self._commits = 0
        self._cleared_at = 0
        self._last_commit: dict[int, int] = {}  # per sid: the last commit that added rows of it
        self._committing: frozenset[int] = frozenset()  # the sids of the commit under way
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.before_insert: Callable[[], None] | None = None  # a seam for tests: between a load and its insert

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    @property
    def entries(self) -> int:
        return len(self._entries)

    def snapshot(self) -> tuple[int, frozenset[int]]:
        """For a read that fixes its snapshot now (call under :attr:`lock`):
        the last commit it sees, and the series of a commit under way (it may
        or may not see that one: their rows are not taken from the cache)."""
        return self._commits, self._committing

    def clear(self) -> None:
        """Forget everything: the database was opened (again)."""
        with self.lock:
            self._commits += 1
            self._cleared_at = self._commits
            self._entries.clear()
            self.bytes = 0

    @contextlib.contextmanager
    def committing(self, added: list[Added]) -> Iterator[None]:
        """Around a write's COMMIT of ``added``: its series' kept rows are not
        used by reads that begin meanwhile, and are extended once it is done
        (dropped if the COMMIT failed). The lock is not held during the
        COMMIT: reads do not wait for it (nor for the checkpoint it may run)."""
        sids = frozenset(int(sid) for part in added for sid in np.unique(part[2]).tolist())
        with self.lock:
            self._commits += 1
            commit = self._commits
            self._committing = sids
            for sid in sids:
                self._last_commit[sid] = commit
        try:
            yield
        except BaseException:
            with self.lock:
                for key in [key for key in self._entries if key[0] in sids]:
                    self.bytes -= self._entries.pop(key).nbytes
                self._committing = frozenset()
            raise
        with self.lock:
            self._apply(added, commit)
            self._committing = frozenset()

    def _apply(self, added: list[Added], commit: int) -> None:
        """Extend the kept entries of the series of ``added`` (under :attr:`lock`)."""
        try:
            by_key: dict[tuple[int, str], list[tuple[int, np.ndarray, M4Agg]]] = {}
            for axis, k, sids, buckets, agg in added:
                for sid in np.unique(sids).tolist():
                    if (sid, axis) in self._entries:
                        mine = np.flatnonzero(sids == sid)
                        by_key.setdefault((sid, axis), []).append((k, buckets[mine], agg.take(mine)))
            for key, parts in by_key.items():
                self._put(key, _extend(self._entries[key], parts, commit))
        except BaseException:  # the rows committed: never leave an entry without them
            log.exception("curvestream bridge: rollup cache dropped after a failed update")
            self._entries.clear()
            self.bytes = 0
            self._cleared_at = self._commits

    def entry(self, seen: tuple[int, frozenset[int]], sid: int, axis: str, plan: LevelPlan) -> Entry | None:
        """The rows of a series as of the reader's snapshot (``seen``: see
        :meth:`snapshot`), or None: the read takes them from the tables, and
        the loader thread loads them for the next reads."""
        key = (sid, axis)
        with self.lock:
            e = self._entries.get(key)
            if e is not None and e.as_of <= seen[0] and sid not in seen[1]:
                self._entries.move_to_end(key)
                self.hits += 1
                return e
            self.misses += 1
        with self._idle:
            if key in self._queued:
                return None
            self._queued.add(key)
            if self._loader is None:
                self._loader = threading.Thread(target=self._load_queued, name="curvestream-rollup-cache",
                                                daemon=True)
                self._loader.start()
        self._queue.put((sid, axis, plan))
        return None

    def settle(self, timeout: float = 60.0) -> bool:
        """Wait until every queued load is done (tests; a clean close)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._queued, timeout)

    def stop(self) -> None:
        """End the loader thread (after the loads already queued)."""
        with self._idle:
            loader, self._loader = self._loader, None
        if loader is not None:
            self._queue.put(None)
            loader.join()

    def _load_queued(self) -> None:
        while (item := self._queue.get()) is not None:
            sid, axis, plan = item
            try:
                self._load(sid, axis, plan)
            except (duckdb.Error, StoreUnavailable) as exc:  # the next miss queues it again
                log.debug("curvestream bridge: rollup rows of series %s not loaded: %s", sid, exc)
            except Exception:  # noqa: BLE001 - a background thread logs, the reads go to SQL
                log.exception("curvestream bridge: rollup rows of series %s not loaded", sid)
            finally:
                with self._idle:
                    self._queued.discard((sid, axis))
                    self._idle.notify_all()

    def _load(self, sid: int, axis: str, plan: LevelPlan) -> None:
        """Load a series' rows in a snapshot of their own; keep them if no
        commit touched the series since that snapshot began."""
        cur = self._cursor()
        try:
            seen, committing = _begin(cur, self)
            e = load(cur, sid, axis, plan, seen)
            cur.execute("COMMIT")
        except BaseException:
            try:
                cur.execute("ROLLBACK")
            except duckdb.Error:
                pass  # the database was invalidated under the load: the first error says why
            raise
        if self.before_insert is not None:
            self.before_insert()
        with self.lock:
            fresh = sid not in committing and self._last_commit.get(sid, 0) <= seen
            if fresh and seen >= self._cleared_at and (sid, axis) not in self._entries:
                self._put((sid, axis), e)

    def _put(self, key: tuple[int, str], e: Entry) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old.nbytes
        size = e.nbytes
        while self._entries and self.bytes + size > self.budget:
            _, gone = self._entries.popitem(last=False)
            self.bytes -= gone.nbytes
        if size <= self.budget:
            _freeze(e)
            self._entries[key] = e
            self.bytes += size


@dataclasses.dataclass(frozen=True)
class Reader:
    """A read's use of the cache: the commit its snapshot sees."""

    cache: RollupCache
    seen: tuple[int, frozenset[int]]

    def entry(self, sid: int, axis: str, plan: LevelPlan) -> Entry | None:
        return self.cache.entry(self.seen, sid, axis, plan)


def begin_read(cur: duckdb.DuckDBPyConnection, cache: RollupCache | None) -> Reader | None:
    """Begin a read transaction; with the cache, fix its snapshot under the
    cache's lock (DuckDB takes it at the first statement that reads a table,
    not at BEGIN) and answer what the read may take from the cache."""
    if cache is None or not cache.enabled:
        cur.execute("BEGIN TRANSACTION")
        return None
    return Reader(cache, _begin(cur, cache))


def _begin(cur: duckdb.DuckDBPyConnection, cache: RollupCache) -> tuple[int, frozenset[int]]:
    """BEGIN, and fix the snapshot under the cache's lock; what it sees (:meth:`RollupCache.snapshot`)."""
    with cache.lock:
        cur.execute("BEGIN TRANSACTION")
        cur.execute("SELECT sid FROM series LIMIT 0").fetchall()
        return cache.snapshot()


def load(cur: duckdb.DuckDBPyConnection, sid: int, axis: str, plan: LevelPlan, as_of: int) -> Entry:
    """All rows of a series and axis, read in ``cur``'s snapshot, merged per bucket."""
    cols = ", ".join(AGG_NAMES)
    got = cur.execute(f"SELECT 0 AS k, b, {cols}, c0, c1 FROM m4b_{axis} WHERE sid = $1 UNION ALL "
                      f"SELECT k, b, {cols}, -1, -1 FROM {upper_rows(axis)} WHERE sid = $1", [sid]).fetchnumpy()
    k, b, agg = ints(got["k"]), ints(got["b"]), agg_from(got)
    if len(b) > 1 and not bool(np.all((k[1:] > k[:-1]) | ((k[1:] == k[:-1]) & (b[1:] >= b[:-1])))):
        order = np.lexsort((b, k))  # rows come in the order written: sorting them here costs less than in SQL
        k, b, agg = k[order], b[order], agg.take(order)
    bounds = np.searchsorted(k, np.arange(plan.top + 2))
    levels = []
    for lv in plan.levels:
        rows = slice(int(bounds[lv]), int(bounds[lv + 1]))
        levels.append(_merged(b[rows], agg.take(rows), axis))
    bottom = slice(0, int(bounds[1]))
    return Entry(plan, tuple(levels), b[bottom].copy(), agg.c0[bottom].copy(), agg.c1[bottom].copy(), as_of)


def _merged(b: np.ndarray, agg: M4Agg, axis: str) -> Level:
    """A level of rows sorted by bucket, duplicates merged (only theirs: a merge sorts)."""
    dup = np.concatenate(([False], b[1:] == b[:-1]))
    if dup.any():
        dup[:-1] |= dup[1:]
        return _compact(Level(b[~dup], agg.take(np.flatnonzero(~dup)), b[dup], agg.take(np.flatnonzero(dup))), axis)
    return Level(b, agg, b[:0], M4Agg.empty())  # slices of the rows read: nothing else holds them


def _compact(lv: Level, axis: str) -> Level:
    """The added rows merged into the merged ones: O(merged) copies, a sort of the added only."""
    keys, group = np.unique(lv.pb, return_inverse=True)
    at = np.searchsorted(lv.b, keys)
    found = at < len(lv.b)
    found[found] = lv.b[at[found]] == keys[found]
    rows = M4Agg.concat([lv.pagg, lv.agg.take(at[found])])
    merged = merge(rows, np.concatenate([group.ravel(), np.flatnonzero(found)]), len(keys), axis)
    new = ~found
    b = np.insert(lv.b, at[new], keys[new])
    agg = _insert(lv.agg, at[new], merged.take(np.flatnonzero(new)))
    agg.put(np.searchsorted(b, keys), merged)
    agg.c0[:] = -1  # the ranges live in the entry's cb/c0/c1
    agg.c1[:] = -1
    return Level(b, agg, b[:0].copy(), M4Agg.empty())


def _extend(e: Entry, parts: list[tuple[int, np.ndarray, M4Agg]], as_of: int) -> Entry:
    """``e`` with rows a write added (new arrays: readers keep the old ones)."""
    levels = list(e.levels)
    cb, c0, c1 = e.cb, e.c0, e.c1
    for k in sorted({p[0] for p in parts}):
        mine = [p for p in parts if p[0] == k]
        lv = levels[k]
        lv = Level(lv.b, lv.agg, np.concatenate([lv.pb, *(p[1] for p in mine)]),
                   M4Agg.concat([lv.pagg, *(p[2] for p in mine)]))
        if len(lv.pb) > max(COMPACT_MIN, len(lv.b) // COMPACT_SHARE):
            if k == 0:
                order = np.argsort(lv.pb, kind="stable")
                at = np.searchsorted(cb, lv.pb[order], "right")
                cb, c0, c1 = (np.insert(a, at, v[order]) for a, v in ((cb, lv.pb), (c0, lv.pagg.c0), (c1, lv.pagg.c1)))
            lv = _compact(lv, e.plan.axis)
        levels[k] = lv
    return Entry(e.plan, tuple(levels), cb, c0, c1, as_of)


def _insert(agg: M4Agg, at: np.ndarray, rows: M4Agg) -> M4Agg:
    """A copy of ``agg`` with ``rows`` inserted before positions ``at`` (as :func:`numpy.insert`)."""
    return M4Agg(*(np.insert(getattr(agg, f.name), at, getattr(rows, f.name), axis=getattr(agg, f.name).ndim - 1)
                   for f in dataclasses.fields(M4Agg)))


def _freeze(e: Entry) -> None:
    """Make a kept entry's arrays read-only: readers get them as they are (the
    top level's rows uncopied), so a merge that wrote into its input would fail
    instead of changing what later reads see."""
    arrays = [e.cb, e.c0, e.c1]
    for lv in e.levels:
        arrays += [lv.b, lv.pb, *(getattr(a, f.name) for a in (lv.agg, lv.pagg) for f in dataclasses.fields(M4Agg))]
    for a in arrays:
        a.flags.writeable = False


def _agg_bytes(agg: M4Agg) -> int:
    return sum(getattr(agg, f.name).nbytes for f in dataclasses.fields(M4Agg))
