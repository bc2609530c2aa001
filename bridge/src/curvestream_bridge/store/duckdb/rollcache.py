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

Per (series, axis) an :class:`.rollrows.Entry` holds, per level, one merged
row per bucket sorted by bucket (plus the chunk-id ranges of every bottom row,
the ranges the raw points of a straddling bucket are read by), and the rows
later writes added, as they were written: a read merges the rows of a bucket
as it merges any (:func:`..m4.query.assemble`); past a share of the merged
rows they are merged in. Entries are never changed: a write builds new arrays.

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
from collections.abc import Callable, Iterator

import duckdb
import numpy as np

from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.duckdb.file import begin, rolled_back_on_error
from curvestream_bridge.store.duckdb.rollrows import Added, Entry, extend, freeze, load
from curvestream_bridge.store.m4.agg import M4Agg
from curvestream_bridge.store.m4.levels import LevelPlan

__all__ = ["RollupCache", "Reader", "begin_read"]

log = logging.getLogger("curvestream.bridge.duckdb")


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
        if not self.enabled:  # nothing kept, nothing loaded: the write pays nothing
            yield
            return
        # the write's series by one np.unique (a fan-in write holds thousands, each in every level's rows)
        sids = frozenset(np.unique(np.concatenate([part[2] for part in added])).tolist()) if added else frozenset()
        with self.lock:
            self._commits += 1
            commit = self._commits
            self._committing = sids
            self._last_commit.update(dict.fromkeys(sids, commit))
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
        if not self._entries:
            return  # nothing kept to extend
        try:
            by_key: dict[tuple[int, str], list[tuple[int, np.ndarray, M4Agg]]] = {}
            for axis, k, sids, buckets, agg in added:
                for sid in np.unique(sids).tolist():
                    if (sid, axis) in self._entries:
                        mine = np.flatnonzero(sids == sid)
                        by_key.setdefault((sid, axis), []).append((k, buckets[mine], agg.take(mine)))
            for key, parts in by_key.items():
                self._put(key, extend(self._entries[key], parts, commit))
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
            except Exception:
                log.exception("curvestream bridge: rollup rows of series %s not loaded", sid)
            finally:
                with self._idle:
                    self._queued.discard((sid, axis))
                    self._idle.notify_all()

    def _load(self, sid: int, axis: str, plan: LevelPlan) -> None:
        """Load a series' rows in a snapshot of their own; keep them if no
        commit touched the series since that snapshot began."""
        cur = self._cursor()
        with rolled_back_on_error(cur):
            seen, committing = _begin(cur, self)
            e = load(cur, sid, axis, plan, seen)
            cur.execute("COMMIT")
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
            freeze(e)
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
        begin(cur)
        return None
    return Reader(cache, _begin(cur, cache))


def _begin(cur: duckdb.DuckDBPyConnection, cache: RollupCache) -> tuple[int, frozenset[int]]:
    """BEGIN, and fix the snapshot under the cache's lock; what it sees (:meth:`RollupCache.snapshot`)."""
    with cache.lock:
        begin(cur)
        cur.execute("SELECT sid FROM series LIMIT 0").fetchall()
        return cache.snapshot()
