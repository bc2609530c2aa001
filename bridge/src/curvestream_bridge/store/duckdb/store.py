"""Embedded DuckDB: the store for one machine with no servers.

:class:`DuckDBStore` opens the file, writes a round of batches in one
transaction and reads series, histograms and texts. The run records, the
per-series figures, the (producer, seq) records and the alert state each have
a module of their own (below), whose functions run on the store's cursors and
in its transactions.

Schema (one file)::

    series(sid, project, run, key, kind,       -- one row per series; its figures: see .seriesstats
           count, first_step, last_step, first_ns, last_ns, last_value, last_is_nan,
           min_step, max_step, m4_base_step, m4_base_time)
    chunks, m4b_*, m4_*, m4p_*                 -- raw points and their rollups, see .points
    histograms(sid, step, wall_ns, edges, counts, min, max, sum, count)
    texts(sid, step, wall_ns, level, text)
    runs(project, run, meta_json, ...)         -- the runs list, see .runrecords
    batches(producer, seq, stored_ns)          -- what makes re-sends harmless, see .batchlog
    run_edits, deleted_runs                    -- a run's name, tags, notes set since; deletions, see .lifecycle
    alert_state, alert_events                  -- the alert engine's state, see .alertstate

Every write is one transaction: points, their rollups, per-series stats,
metadata and the (producer, seq) records commit together or not at all. A
batch whose (producer, seq) is already stored is skipped, so writing a batch
twice changes nothing.

``duckdb:///file.db?rollups=off`` keeps raw points only (queries then read
every point of the range); ``?rollup_cache_mb=N`` bounds the memory of the
rollup rows kept for reads (:mod:`.rollcache`, default 512, 0: none).

Errors are mapped by :mod:`.file`: a full disk, a locked file or an
invalidated database raise :class:`StoreUnavailable`, and the file is opened
again after DuckDB invalidated it, so writes resume when space returns.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import duckdb
import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.store.base import (
    AlertStateStore,
    MetricRecord,
    PointColumns,
    RunRecord,
    SeriesQuery,
    SeriesResult,
    StoreReader,
    StoreUnavailable,
    StoreWriter,
)
from curvestream_bridge.store.cancel import interrupting
from curvestream_bridge.store.duckdb import alertstate, batchlog, lifecycle, runrecords, seriesstats
from curvestream_bridge.store.duckdb.aggrows import scan
from curvestream_bridge.store.duckdb.allpoints import all_points
from curvestream_bridge.store.duckdb.file import DuckDBFile, mapped, rolled_back_on_error
from curvestream_bridge.store.duckdb.many import series_many
from curvestream_bridge.store.duckdb.points import SCHEMA as POINTS_SCHEMA
from curvestream_bridge.store.duckdb.points import PointWriter, series_query
from curvestream_bridge.store.duckdb.rollcache import Reader, RollupCache, begin_read
from curvestream_bridge.store.duckdb.split import split_read
from curvestream_bridge.store.duckdb.upper import merge_partials
from curvestream_bridge.store.lifecycle import apply_edits
from curvestream_bridge.store.m4.levels import AXES
from curvestream_bridge.store.m4.query import empty_result, rollup_axis

__all__ = ["DuckDBStore"]

log = logging.getLogger("curvestream.bridge.duckdb")

READ_THREADS = min(os.cpu_count() or 1, 4)
"""Threads that read the series of one overlay side by side (``?read_threads=N``; 1: the calling thread alone)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS series (
    sid INTEGER PRIMARY KEY, project VARCHAR NOT NULL, run VARCHAR NOT NULL, key VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, count BIGINT NOT NULL DEFAULT 0, first_step BIGINT, last_step BIGINT,
    first_ns BIGINT, last_ns BIGINT, last_value DOUBLE, last_is_nan BOOLEAN DEFAULT false,
    UNIQUE (project, run, key, kind));
ALTER TABLE series ADD COLUMN IF NOT EXISTS min_step BIGINT;
ALTER TABLE series ADD COLUMN IF NOT EXISTS max_step BIGINT;
ALTER TABLE series ADD COLUMN IF NOT EXISTS m4_base_step SMALLINT;
ALTER TABLE series ADD COLUMN IF NOT EXISTS m4_base_time SMALLINT;
CREATE TABLE IF NOT EXISTS histograms (sid INTEGER NOT NULL, step BIGINT, wall_ns BIGINT, edges DOUBLE[],
    counts DOUBLE[], min DOUBLE, max DOUBLE, sum DOUBLE, count UBIGINT);
CREATE TABLE IF NOT EXISTS texts (sid INTEGER NOT NULL, step BIGINT, wall_ns BIGINT, level INTEGER, text VARCHAR);
"""


class DuckDBStore(StoreWriter, StoreReader, AlertStateStore, lifecycle.DuckDBLifecycle):
    """The three roles of a store (:mod:`..base`) over one DuckDB file, and a run's
    life after the fact (:mod:`..lifecycle`)."""

    name = "duckdb"

    def __init__(self, path: str, rollups: bool = True, checkpoint_mb: int = 128, rollup_cache_mb: int = 512,
                 read_threads: int = READ_THREADS) -> None:
        self.path = path
        self.rollups = rollups
        self.checkpoint_mb = checkpoint_mb
        self.rollup_cache = RollupCache(rollup_cache_mb << 20, self._cursor)
        self.read_threads = max(1, read_threads)
        self._readers = (ThreadPoolExecutor(self.read_threads - 1, thread_name_prefix="curvestream-read")
                         if self.read_threads > 1 else None)
        self._write_lock = threading.Lock()
        self._db = DuckDBFile(path, self._on_open)

    def _on_open(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute(f"SET checkpoint_threshold = '{int(self.checkpoint_mb)}MiB'")
        con.execute(_SCHEMA)
        con.execute(runrecords.SCHEMA)
        con.execute(alertstate.SCHEMA)
        con.execute(batchlog.SCHEMA)
        con.execute(lifecycle.SCHEMA)
        con.execute(POINTS_SCHEMA)
        self.rollup_cache.clear()  # opened again after an invalidation: the file is the truth
        self._reload_sids(con)
        self._points = PointWriter(con, self.rollups)

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        return self._db.cursor()

    # ------------------------------------------------------------------ writing
    @mapped
    def write(self, batches: Sequence[DecodedBatch]) -> None:
        with self._write_lock:
            cur = self._cursor()
            try:
                cur.execute("BEGIN TRANSACTION")
                batches = batchlog.fresh(cur, batches)
                self._new_series(cur, batches)
                self._write_points(cur, batches)
                self._write_others(cur, batches)
                now = time.time_ns()
                if batches:
                    batchlog.record(cur, batches, now)
                with self.rollup_cache.committing(self._points.added):  # the kept rows follow
                    cur.execute("COMMIT")
                self._points.commit()
            except BaseException as exc:
                self._abandon(cur, exc)
                raise

    def _roll_back(self, cur: duckdb.DuckDBPyConnection, exc: BaseException) -> BaseException:
        """After a failed transaction: roll it back, unless the database was
        invalidated (noted by translating the error: it is reopened); the error
        as the store raises it."""
        error = self._db.translate(exc) if isinstance(exc, duckdb.Error) else exc
        if not self._db.invalidated:
            try:
                cur.execute("ROLLBACK")
            except duckdb.Error:
                pass  # no transaction left to roll back
        return error

    def _abandon(self, cur: duckdb.DuckDBPyConnection, exc: BaseException) -> None:
        """After a failed write: roll back, and forget the series and plans it made."""
        self._roll_back(cur, exc)
        if self._db.invalidated:
            return  # the reopen reads everything afresh
        try:
            self._reload_sids(cur)
            self._points.reload(cur)
        except duckdb.Error as again:
            self._db.translate(again)

    def _reload_sids(self, cur: duckdb.DuckDBPyConnection) -> None:
        self._sids: dict[tuple[str, str, str, str], int] = {
            (p, r, k, kind): sid for sid, p, r, k, kind in
            cur.execute("SELECT sid, project, run, key, kind FROM series").fetchall()}
        self._next_sid = max(self._sids.values(), default=0) + 1

    def _new_series(self, cur: duckdb.DuckDBPyConnection, batches: Sequence[DecodedBatch]) -> None:
        """The series of a write not known yet, and their runs' records, each by one statement."""
        new: dict[tuple[str, str, str, str], int] = {}
        for b in batches:
            for kind, items in (("scalar", b.scalars), ("histogram", b.histograms), ("text", b.texts)):
                for item in items:
                    ident = (b.project, b.run, item.key, kind)
                    if ident not in self._sids and ident not in new:
                        new[ident] = self._next_sid + len(new)
        if not new:
            return
        self._next_sid += len(new)
        idents = list(new)
        rows = {"sid": np.array(list(new.values()), np.int32),
                **{name: np.array([i[j] for i in idents], dtype=object)
                   for j, name in enumerate(("project", "run", "key", "kind"))}}
        with scan(cur, "new_series", rows):
            cur.execute("INSERT INTO series (sid, project, run, key, kind) SELECT sid, project, run, key, kind "
                        "FROM new_series")
        self._sids.update(new)
        runrecords.seen_many(cur, list(dict.fromkeys((i[0], i[1]) for i in idents)))

    def _sid(self, project: str, run: str, key: str, kind: str) -> int:
        return self._sids[(project, run, key, kind)]

    def _write_points(self, cur: duckdb.DuckDBPyConnection, batches: Sequence[DecodedBatch]) -> None:
        # every series of the write together: chunks, rollups and figures cost per write, not per series
        columns = [(self._sid(b.project, b.run, col.key, "scalar"), col.steps, col.wall_ns, col.values)
                   for b in batches for col in b.scalars]
        if not columns:
            return
        counts = dict(cur.execute("SELECT sid, count FROM series WHERE sid IN (SELECT unnest(?))",
                                  [list({c[0] for c in columns})]).fetchall())
        seriesstats.add_points(cur, self._points.write(cur, columns, counts))

    def _write_others(self, cur: duckdb.DuckDBPyConnection, batches: Sequence[DecodedBatch]) -> None:
        for b in batches:
            for h in b.histograms:
                sid = self._sid(b.project, b.run, h.key, "histogram")
                cur.execute(
                    "INSERT INTO histograms VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [sid, h.step, h.wall_ns, list(h.bucket_edges), list(h.counts), h.min, h.max, h.sum, h.count],
                )
                seriesstats.add_record(cur, sid, h.step, h.wall_ns)
            for t in b.texts:
                sid = self._sid(b.project, b.run, t.key, "text")
                cur.execute("INSERT INTO texts VALUES (?, ?, ?, ?, ?)", [sid, t.step, t.wall_ns, t.level, t.text])
                seriesstats.add_record(cur, sid, t.step, t.wall_ns)
        runrecords.apply_metas(cur, [b.meta for b in batches if b.meta is not None])
        runrecords.apply_statuses(cur, [b.status for b in batches if b.status is not None])

    @mapped
    def apply_status(self, status: run_pb2.RunStatus) -> bool:
        with self._write_lock:
            return runrecords.apply_status(self._cursor(), status)

    @mapped
    def apply_meta(self, meta: run_pb2.RunMeta) -> None:
        with self._write_lock:
            runrecords.apply_meta(self._cursor(), meta)

    @mapped
    def stored_ranges(self, producer_id: bytes) -> list[tuple[int, int]]:
        return batchlog.stored_ranges(self._cursor(), producer_id)

    @mapped
    def stored_ranges_many(self, producer_ids: Sequence[bytes]) -> dict[bytes, list[tuple[int, int]]]:
        return batchlog.stored_ranges_many(self._cursor(), producer_ids)

    # ------------------------------------------------------------------ alert engine state
    @mapped
    def load_alert_state(self) -> dict[str, str]:
        return alertstate.load(self._cursor())

    def save_alert_state(self, entries: dict[str, str], alerts: Sequence[dict[str, Any]]) -> None:
        """Upsert state entries and append alert transitions, in one transaction."""
        with self._write_lock:
            cur = self._cursor()
            try:
                cur.execute("BEGIN TRANSACTION")
                alertstate.save(cur, entries, alerts)
                cur.execute("COMMIT")
            except duckdb.Error as exc:
                error = self._roll_back(cur, exc)  # a failed checkpoint invalidates the database: reopened
                if isinstance(error, StoreUnavailable):
                    raise error from None
                raise StoreUnavailable(f"DuckDB alert state write failed: {exc}") from None

    # ------------------------------------------------------------------ reading
    @mapped
    def runs(self, refs: Sequence[tuple[str, str]] | None = None) -> list[RunRecord]:
        cur = self._cursor()
        return apply_edits(runrecords.runs(cur, refs), lifecycle.edits(cur))

    def metrics(self, project: str, run: str) -> list[MetricRecord]:
        return self.metrics_many([(project, run)])[0]

    @mapped
    def metrics_many(self, runs: Sequence[tuple[str, str]]) -> list[list[MetricRecord]]:
        """Each run's :meth:`metrics`, in one statement over the series table."""
        return seriesstats.metrics(self._cursor(), runs)

    @mapped
    def series(self, q: SeriesQuery) -> SeriesResult:
        cur = self._cursor()
        sid = self._sids.get((q.project, q.run, q.key, "scalar"))
        if sid is None:
            return empty_result(q)
        with _snapshot(cur, self.rollup_cache) as cache:  # one snapshot for the several reads of a query
            run = (q.project, q.run)
            origin = seriesstats.run_starts_ns(cur, {run}).get(run, 0) if q.x == "relative" else 0
            return series_query(cur, q, sid, self._points.plan(sid, rollup_axis(q.x)), origin, cache)

    def series_many(self, queries: Sequence[SeriesQuery]) -> list[SeriesResult]:
        """Each query's :meth:`series` answer, read together (see :mod:`.many`),
        in up to ``read_threads`` parts side by side (:mod:`.split`)."""
        return split_read(self._series_many, queries, self._readers, self.read_threads)

    @mapped
    def _series_many(self, queries: Sequence[SeriesQuery]) -> list[SeriesResult]:
        cur = self._cursor()
        with _snapshot(cur, self.rollup_cache) as cache:  # one snapshot for all of them
            origins = seriesstats.run_starts_ns(cur, {(q.project, q.run) for q in queries if q.x == "relative"})
            items = []
            for q in queries:
                sid = self._sids.get((q.project, q.run, q.key, "scalar"))
                plan = self._points.plan(sid, rollup_axis(q.x)) if sid is not None else None
                items.append((q, sid, plan, origins.get((q.project, q.run), 0)))
            return series_many(cur, items, empty_result, cache)

    def points(self, project: str, run: str, key: str) -> Iterator[PointColumns]:
        """Every point of a series in wall-time order (:mod:`.allpoints`)."""
        sid = self._sids.get((project, run, key, "scalar"))
        if sid is None:
            return
        pages = all_points(self._cursor, sid)
        while (page := self._next_page(pages)) is not None:
            yield page

    @mapped
    def _next_page(self, pages: Iterator[PointColumns]) -> PointColumns | None:
        return next(pages, None)

    @mapped
    def histograms(self, project: str, run: str, key: str, limit: int = 500) -> list[dict[str, Any]]:
        sid = self._sids.get((project, run, key, "histogram"))
        if sid is None:
            return []
        rows = self._cursor().execute(
            """SELECT step, wall_ns, edges, counts, min, max, sum, count FROM histograms WHERE sid = ?
               ORDER BY wall_ns""", [sid]).fetchall()
        if len(rows) > limit:  # evenly spaced, first and last kept
            idx = np.unique(np.linspace(0, len(rows) - 1, limit).round().astype(int))
            rows = [rows[i] for i in idx]
        return [{"step": s, "time_ms": w / 1e6, "edges": e, "counts": c, "min": lo, "max": hi, "sum": sm, "count": n}
                for s, w, e, c, lo, hi, sm, n in rows]

    @mapped
    def texts(self, project: str, run: str, key: str | None, limit: int = 1000) -> list[dict[str, Any]]:
        cond, params = "s.project = ? AND s.run = ? AND s.kind = 'text'", [project, run]
        if key is not None:
            cond += " AND s.key = ?"
            params.append(key)
        rows = (
            self._cursor()
            .execute(
                f"""SELECT s.key, t.step, t.wall_ns, t.level, t.text FROM texts t JOIN series s USING (sid)
                WHERE {cond} ORDER BY t.wall_ns DESC LIMIT ?""",
                [*params, limit],
            )
            .fetchall()
        )
        return [{"key": k, "step": st, "time_ms": w / 1e6, "level": lv, "text": tx}
                for k, st, w, lv, tx in reversed(rows)]

    def ping(self) -> bool:
        return self._db.ping()

    def close(self) -> None:
        self.rollup_cache.stop()
        with self._write_lock:
            self._merge_partials()
            self._db.close()
            self.rollup_cache.clear()
        if self._readers is not None:
            self._readers.shutdown(wait=False)

    def _merge_partials(self) -> None:
        """A clean shutdown merges the waiting partial rollup rows, so that the
        file holds one row per upper bucket (as before .upper existed). Best
        effort: rows left by a failure are merged by the next write."""
        if self._db.invalidated:
            return
        try:
            cur = self._cursor()
            cur.execute("BEGIN TRANSACTION")
            for axis in AXES:
                merge_partials(cur, axis)
            cur.execute("COMMIT")
        except (duckdb.Error, StoreUnavailable) as exc:
            log.warning("curvestream bridge: partial rollup rows not merged at close (the next write will): %s", exc)


@contextlib.contextmanager
def _snapshot(cur: duckdb.DuckDBPyConnection, cache: RollupCache | None = None) -> Iterator[Reader | None]:
    """A read transaction: committed when the block ends, rolled back when it
    raises; its statements are interrupted if the read's client goes away
    (:mod:`..cancel`). Gives what the read may take from ``cache`` (see
    :func:`.rollcache.begin_read`)."""
    with interrupting(cur.interrupt):
        with rolled_back_on_error(cur):
            yield begin_read(cur, cache)
            cur.execute("COMMIT")  # interrupted too, if the client goes away now: then rolled back
