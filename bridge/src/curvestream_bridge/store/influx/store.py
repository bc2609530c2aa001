"""The InfluxDB store, through the v1 HTTP API (:mod:`.http`): ``/write``
(line protocol) and ``/query`` (InfluxQL). These endpoints exist on 1.x, on
2.x OSS (through its DBRP mappings) and on 3.x Core.

Measurements (all tag values percent-encoded, see :mod:`.lineproto`)::

    cs_scalar,metric=<key>,project=<p>,run=<r>   step=<int>,value=<float>  <wall ns>
                                                 step=<int>,nonfinite=1|2|3 (NaN, +Inf, -Inf)
    cs_histogram,metric,project,run              step,edges,counts (JSON),min,max,sum,count
    cs_text,metric,project,run                   step,level,text (JSON string)
    cs_run,project,run                           meta (JSON), state, reason, status_ns   at time 0 (*)
    cs_group,group,project,run                   seen=true   at time 0: a run's group (``-``: none), from its meta (*)
    cs_batch,producer=<hex>                      seq=<int>     at time <seq> ns (*)
    cs_alert,project,run,metric,rule,kind,severity,state
                                                 id,message,step,from_step,to_step,version,firing (1|0),value
                                                 at the alert's time (Grafana annotations and alert rules)
    cs_alert_state,name=<entry>                  body (JSON)   at time 0: the alert engine's state (*)
    cs_alert_now,project,run,metric,rule         firing (1|0), state, kind, severity, step, version, since, message
                                                 at time 0: each alert's current state, for Grafana's alert rule (*)
    cs_run_edit, cs_deleted_run (*)              a run's name, tags, notes set since; deletions, see .lifecycle
    cs_rollup_step, cs_rollup_time, cs_rollup_plan (*)   M4 rollups, see .rollup

(*) in the retention policy ``curvestream_meta`` (``DURATION INF``; see
:mod:`.http`), so that a database whose default policy keeps points for a
limited time still knows its runs, its stored batches and its rollup plans.

The lines of points, histograms, texts, run metadata and alerts are made by
:mod:`.lines`. The timestamp of a point is its wall time, so a replayed point lands on itself.
A batch whose (producer, seq) is in ``cs_batch`` is not written again.

URL parameters: ``rollups=off`` (raw points only; queries read every point),
``meta_rp=<name>`` (the meta measurements' retention policy; empty: the
database's default policy),
``writer=<id>`` (this bridge's rollup rows; default the ``writer_id`` the
bridge passes, its MQTT client id, else the host name),
``rollup_cache_mb=<N>`` (memory for the rollup rows snapped views read, default
512, 0: none kept; see :mod:`.rowcache`).
"""

from __future__ import annotations

import json
import logging
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.store.base import (
    AlertStateStore,
    MetricRecord,
    MetricsOneByOne,
    PointColumns,
    RunRecord,
    SeriesOneByOne,
    SeriesQuery,
    SeriesResult,
    StoreReader,
    StoreUnavailable,
    StoreWriter,
    record_from_meta,
    state_name,
)
from curvestream_bridge.store.influx.allpoints import all_points
from curvestream_bridge.store.influx.http import InfluxHTTP
from curvestream_bridge.store.influx.ladder import top_for_shards
from curvestream_bridge.store.influx.lifecycle import InfluxLifecycle
from curvestream_bridge.store.influx.lineproto import decode_tag, encode_tag, string_field
from curvestream_bridge.store.influx.lines import alert_line, alert_now_line, batch_lines, group_line, meta_line
from curvestream_bridge.store.influx.retention import cutoff, reason, without_expired
from curvestream_bridge.store.influx.rollup import RollupWriter
from curvestream_bridge.store.influx.rowcache import RowCache
from curvestream_bridge.store.influx.rows import SeriesKey, series_where, tag_literal
from curvestream_bridge.store.influx.series import NONFINITE, Points, points_of, series_query
from curvestream_bridge.store.lifecycle import apply_edits
from curvestream_bridge.store.m4.query import empty_result, frame, points_result, rollup_axis

__all__ = ["InfluxStore"]

log = logging.getLogger("curvestream.bridge.influx")


class InfluxStore(SeriesOneByOne, MetricsOneByOne, StoreWriter, StoreReader, AlertStateStore, InfluxLifecycle):
    """The three roles of a store (:mod:`..base`) over one InfluxDB database, and a run's
    life after the fact (:mod:`..lifecycle`)."""

    name = "influxdb"

    def __init__(self, url: str, *, writer_id: str = "", write_deadline_s: float = 30.0,
                 timeout_s: float = 30.0) -> None:
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True))
        self._db = InfluxHTTP(url, timeout_s=timeout_s, write_deadline_s=write_deadline_s,
                              meta_rp=params.get("meta_rp"))
        self._lock = threading.Lock()
        self._runs_seen: set[tuple[str, str]] = set()
        self.rollups = params.get("rollups", "on").lower() not in ("off", "false", "0", "no")
        self._rolled_up: set[tuple[bytes, int]] = set()  # batches in the rollups whose markers are not stored
        self._rollup = RollupWriter(params.get("writer") or writer_id or socket.gethostname(), self._db.meta,
                                    lambda: top_for_shards(self._db.retention()[1]))
        self._dropped: dict[tuple[bytes, int], tuple[int, str]] = {}  # expired points of written batches
        self.rollup_cache = RowCache(int(float(params.get("rollup_cache_mb", "512")) * 1e6))
        try:
            self._db.connect()
        except StoreUnavailable as exc:  # the bridge starts anyway; each write waits until the server answers
            log.warning("curvestream bridge: %s; will retry", exc)

    @property
    def snaps_columns(self) -> bool:
        """Series queries snap their columns unless asked not to (the API's ``snap``): a
        snapped view is folded from rollup rows kept in memory, no edge read (:mod:`.series`)."""
        return self.rollups

    @property
    def version(self) -> str:
        return self._db.version

    @property
    def expired_points(self) -> int:
        """Points older than the default retention policy: taken out of their batches (the others are
        stored; :mod:`.retention`), or dropped by InfluxDB at the edge of the window."""
        return self._db.expired_points

    # ------------------------------------------------------------------ writing
    def write(self, batches: Sequence[DecodedBatch]) -> None:
        """Stores the batches not stored yet: their rollup rows first (their reads must
        not see this write's points), then their points, sent while the next are made;
        the batches' (producer, seq) markers only once all of that is stored, so a
        write that fails is never taken for stored. A write that fails is rolled up
        again from what the rows held before it (:mod:`.committed`); one that failed
        only at its markers is rolled up already, and is not again."""
        with self._lock:
            batches = self._fresh(batches)
            if not batches:
                return
            batches, expired = self._without_expired(batches)
            ids = [(b.producer_id, b.seq) for b in batches]
            writing, meta_writing = self._db.writing(), self._db.writing(meta=True)
            rolled = False
            tops: tuple[list[str], list[str]] = ([], [])
            try:
                columns = self._columns([b for b, i in zip(batches, ids) if i not in self._rolled_up])
                if columns:
                    rows, meta_rows, *last = self._rollup.lines(columns, self._db.statements, self._all_points,
                                                                lambda lines: self._db.write(lines, meta=True))
                    tops = (last[0], last[1])
                    rolled = True
                    writing.add(rows)
                    meta_writing.add(meta_rows)
                for b in batches:
                    writing.add(batch_lines(b))
            except BaseException:
                writing.abandon()
                meta_writing.abandon()
                raise
            try:
                writing.wait()
            except BaseException:
                meta_writing.abandon()
                raise
            meta_writing.wait()
            # the series' top rows only now: a reader that sees them sees every other row of this write
            self._db.write(tops[0])
            self._db.write(tops[1], meta=True)
            if rolled:  # the rows hold these batches now, whatever happens to their markers
                self._rollup.commit()
                self._rolled_up.update(ids)
            self._db.write([line for b in batches for line in self._run_lines(b)], meta=True)
            self._db.write([f"cs_batch,producer={b.producer_id.hex()} seq={b.seq}i {b.seq}" for b in batches],
                           meta=True)
            self._rolled_up.difference_update(ids)
            self._dropped.update(expired)
            self._db.count_expired(sum(n for n, _ in expired.values()))
            for b in batches:
                self._runs_seen.add((b.project, b.run))
                if b.status is not None:
                    self._apply_status_locked(b.status)

    def _without_expired(self, batches: list[DecodedBatch]
                         ) -> tuple[list[DecodedBatch], dict[tuple[bytes, int], tuple[int, str]]]:
        """The batches without their points older than the default retention policy
        (:mod:`.retention`), and per batch how many were taken out and why."""
        retention_ns, _ = self._db.retention()
        oldest = cutoff(time.time_ns(), retention_ns)
        if oldest is None:
            return batches, {}
        out, expired = [], {}
        for b in batches:
            kept, n = without_expired(b, oldest)
            out.append(kept)
            if n:
                expired[(b.producer_id, b.seq)] = (n, reason(self._db.database, retention_ns))
        return out, expired

    def take_dropped(self, ids: Sequence[tuple[bytes, int]]) -> dict[tuple[bytes, int], tuple[int, str]]:
        """For the stored batches ``ids`` (producer, seq): the points a write took out on
        purpose and why (once each: for the batches' commit to the trainer)."""
        return {i: self._dropped.pop(i) for i in ids if i in self._dropped}

    def _columns(self, batches: Sequence[DecodedBatch]) -> dict[SeriesKey, list[Points]]:
        """The scalar columns of the batches by series (none with rollups off): what their rollups take."""
        columns: dict[SeriesKey, list[Points]] = {}
        for b in batches if self.rollups else ():
            for col in b.scalars:
                columns.setdefault((b.project, b.run, col.key), []).append((col.steps, col.wall_ns, col.values))
        return columns

    def _fresh(self, batches: Sequence[DecodedBatch]) -> list[DecodedBatch]:
        """The batches not stored yet (and each once)."""
        by_producer: dict[bytes, list[int]] = {}
        for b in batches:
            by_producer.setdefault(b.producer_id, []).append(b.seq)
        producers = list(by_producer)
        stmts = [
            f'SELECT "seq" FROM {self._db.meta("cs_batch")} WHERE "producer" = {tag_literal(p.hex())} '
            f"AND time >= {min(by_producer[p])} AND time <= {max(by_producer[p])}"
            for p in producers
        ]
        stored: set[tuple[bytes, int]] = set()
        for p, result in zip(producers, self._db.statements(stmts) if stmts else []):
            for s in result:
                stored.update((p, int(v[1])) for v in s["values"])
        self._rolled_up -= stored  # markers stored, their answer lost
        out = []
        for b in batches:
            if (b.producer_id, b.seq) not in stored:
                stored.add((b.producer_id, b.seq))
                out.append(b)
        return out

    def _run_lines(self, b: DecodedBatch) -> list[str]:
        """The batch's lines of ``cs_run`` (meta measurements)."""
        lines: list[str] = []
        if (b.project, b.run) not in self._runs_seen:
            lines.append(f"cs_run,project={encode_tag(b.project)},run={encode_tag(b.run)} seen=true 0")
        if b.meta is not None:
            lines += [meta_line(b.meta), group_line(b.meta)]
        return lines

    def _all_points(self, key: SeriesKey) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every stored point of a series (when its rollups start)."""
        wall, step, value = self._raw(series_where(key), None, None)
        return step, wall, value

    def apply_meta(self, meta: run_pb2.RunMeta) -> None:
        with self._lock:
            self._db.write([meta_line(meta), group_line(meta)], meta=True)

    def apply_status(self, status: run_pb2.RunStatus) -> bool:
        with self._lock:
            return self._apply_status_locked(status)

    def _apply_status_locked(self, status: run_pb2.RunStatus) -> bool:
        where = f'"project" = {tag_literal(status.project)} AND "run" = {tag_literal(status.run)}'
        rows = self._db.series(f'SELECT "status_ns" FROM {self._db.meta("cs_run")} WHERE {where}')
        if rows and rows[0]["values"] and rows[0]["values"][0][1] is not None \
                and rows[0]["values"][0][1] > status.updated_ns:
            return False
        self._db.write([
            f"cs_run,project={encode_tag(status.project)},run={encode_tag(status.run)} "
            f"state={string_field(state_name(status.state))},reason={string_field(status.reason)},"
            f"status_ns={status.updated_ns}i,seen=true 0"
        ], meta=True)
        return True

    def stored_ranges(self, producer_id: bytes) -> list[tuple[int, int]]:
        seqs: list[int] = []
        query = f'SELECT "seq" FROM {self._db.meta("cs_batch")} WHERE "producer" = {tag_literal(producer_id.hex())}'
        for s in self._db.series(query, chunked=True):
            seqs.extend(int(v[1]) for v in s["values"])
        seqs.sort()
        ranges: list[tuple[int, int]] = []
        for seq in seqs:
            if ranges and seq <= ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], max(seq, ranges[-1][1]))
            else:
                ranges.append((seq, seq))
        return ranges

    def stored_ranges_many(self, producer_ids: Sequence[bytes]) -> dict[bytes, list[tuple[int, int]]]:
        return {pid: self.stored_ranges(pid) for pid in producer_ids}

    # ------------------------------------------------------------------ alert engine state
    def load_alert_state(self) -> dict[str, str]:
        out = {}
        for s in self._db.series(f'SELECT "body" FROM {self._db.meta("cs_alert_state")} GROUP BY "name"',
                                 chunked=True):
            name = decode_tag(s["tags"]["name"])
            for _, body in s["values"]:
                out[name] = json.loads(body)
        return out

    def save_alert_state(self, entries: dict[str, str], alerts: Sequence[dict[str, Any]]) -> None:
        state = [f"cs_alert_state,name={encode_tag(k)} body={string_field(v)} 0" for k, v in entries.items()]
        state += [alert_now_line(a) for a in alerts]  # in order: an alert's last transition is its state
        oldest = cutoff(time.time_ns(), self._db.retention()[0]) or 0
        # a transition older than the default policy would be dropped (its state row above keeps it)
        lines = [alert_line(a) for a in alerts if (a.get("time_ns") or round(a["time_ms"]) * 1_000_000) >= oldest]
        with self._lock:
            if lines:  # the transitions first: state saved means they are stored too
                self._db.write(lines)
            if state:
                self._db.write(state, meta=True)

    # ------------------------------------------------------------------ reading
    def runs(self, refs: Sequence[tuple[str, str]] | None = None) -> list[RunRecord]:
        where = ""
        if refs is not None:
            wanted = set(refs)
            if len(wanted) > 200:  # a statement of that many OR terms costs more than reading all
                return [r for r in self.runs() if (r.project, r.run) in wanted]
            if not wanted:
                return []
            where = " WHERE " + " OR ".join(f'("project" = {tag_literal(p)} AND "run" = {tag_literal(r)})'
                                            for p, r in dict.fromkeys(refs))
        points = {}
        for s in self._db.series(f'SELECT count("step") FROM "cs_scalar"{where} GROUP BY "project", "run"'):
            tags = s.get("tags", {})
            points[(decode_tag(tags.get("project", "")), decode_tag(tags.get("run", "")))] = s["values"][0][1]
        out = []
        for s in self._db.series(f'SELECT * FROM {self._db.meta("cs_run")}{where} GROUP BY "project", "run"'):
            tags = s.get("tags", {})
            project, run = decode_tag(tags.get("project", "")), decode_tag(tags.get("run", ""))
            row = dict(zip(s["columns"], s["values"][-1]))
            meta = json.loads(_unjson(row.get("meta"))) if row.get("meta") else None
            rec = record_from_meta(project, run, meta)
            rec.state = _unjson(row.get("state")) or "unknown"
            rec.reason = _unjson(row.get("reason")) or ""
            rec.updated_ns = int(row.get("status_ns") or 0)
            rec.points = int(points.get((project, run), 0))
            out.append(rec)
        out.sort(key=lambda r: (-(r.started_ns or 0), r.project, r.run))
        return apply_edits(out, self.run_edits())

    def metrics(self, project: str, run: str) -> list[MetricRecord]:
        where = f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)}'
        statements = ";".join([
            f'SELECT count("step") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT first("step") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT last("step") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT last("value") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT last("nonfinite") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
        ])
        results = self._db.query(statements)
        by_key: dict[str, dict[str, Any]] = {}
        names = ("count", "first", "last", "last_value", "last_nonfinite")
        for name, result in zip(names, results):
            for s in result.get("series", []):
                key = decode_tag(s["tags"]["metric"])
                t, v = s["values"][0][0], s["values"][0][1]
                by_key.setdefault(key, {})[name] = (t, v)
        out = []
        for key, d in sorted(by_key.items()):
            if "count" not in d:
                continue
            first_t, first_step = d.get("first", (0, 0))
            last_t, last_step = d.get("last", (0, 0))
            value_t, value = d.get("last_value", (-1, math.nan))
            nf_t, nf = d.get("last_nonfinite", (-1, None))
            last_value = NONFINITE.get(nf, math.nan) if nf_t > value_t else float(value)
            out.append(MetricRecord(key, "scalar", int(d["count"][1]), int(first_step), int(last_step),
                                    int(first_t), int(last_t), last_value))
        for kind, measurement in (("histogram", "cs_histogram"), ("text", "cs_text")):
            for s in self._db.series(f'SELECT count("step") FROM "{measurement}" WHERE {where} GROUP BY "metric"'):
                out.append(MetricRecord(decode_tag(s["tags"]["metric"]), kind, int(s["values"][0][1]), 0, 0, 0, 0,
                                        math.nan))
        return out

    def _raw(self, where: str, lo_ns: int | None, hi_ns: int | None, extra: str = "") -> tuple[np.ndarray, ...]:
        cond = where
        if lo_ns is not None:
            cond += f" AND time >= {lo_ns}"
        if hi_ns is not None:
            cond += f" AND time <= {hi_ns}"
        step, wall, value = points_of(
            self._db.series(f'SELECT "step", "value", "nonfinite" FROM "cs_scalar" WHERE {cond} {extra}', chunked=True))
        return wall, step, value

    def series(self, q: SeriesQuery) -> SeriesResult:
        key = (q.project, q.run, q.key)
        where = series_where(key)
        origin = 0
        if q.x == "relative":
            starts = self._db.series(f'SELECT first("step") FROM "cs_scalar" '
                                     f'WHERE "project" = {tag_literal(q.project)} AND "run" = {tag_literal(q.run)}')
            origin = int(starts[0]["values"][0][0]) if starts else 0
        plans = self._rollup.plan(key, self._db.statements)
        if plans is not None:
            return series_query(self._db.statements, key, q, plans[rollup_axis(q.x)], origin,
                                plans["time"].size(0), self._rollup.source, self.rollup_cache)
        wall, step, y = self._raw(where, None, None)
        if len(step) == 0:
            return empty_result(q)
        axis = rollup_axis(q.x)
        x = step if axis == "step" else wall
        f = frame(q, origin, (int(x.min()), int(x.max())), None)
        if f is None or f.lo > f.hi:
            return empty_result(q)
        return points_result(f, step, wall, y)

    def points(self, project: str, run: str, key: str) -> Iterator[PointColumns]:
        """Every point of a series in time order (:mod:`.allpoints`)."""
        return all_points(self._db.series, (project, run, key))

    def histograms(self, project: str, run: str, key: str, limit: int = 500) -> list[dict[str, Any]]:
        where = f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)} AND "metric" = {tag_literal(key)}'
        rows = []
        for s in self._db.series(f'SELECT "step", "edges", "counts", "min", "max", "sum", "count" FROM "cs_histogram" '
                              f'WHERE {where}', chunked=True):
            for t, step, edges, counts, lo, hi, sm, n in s["values"]:
                rows.append({"step": step, "time_ms": t / 1e6, "edges": json.loads(_unjson(edges)),
                             "counts": json.loads(_unjson(counts)), "min": lo, "max": hi, "sum": sm, "count": n})
        if len(rows) > limit:
            idx = np.unique(np.linspace(0, len(rows) - 1, limit).round().astype(int))
            rows = [rows[i] for i in idx]
        return rows

    def texts(self, project: str, run: str, key: str | None, limit: int = 1000) -> list[dict[str, Any]]:
        where = f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)}'
        if key is not None:
            where += f' AND "metric" = {tag_literal(key)}'
        out = []
        for s in self._db.series(f'SELECT "step", "level", "text" FROM "cs_text" WHERE {where} GROUP BY "metric" '
                              f'ORDER BY time DESC LIMIT {int(limit)}'):
            k = decode_tag(s["tags"]["metric"])
            for t, step, level, text in s["values"]:
                out.append({"key": k, "step": step, "time_ms": t / 1e6, "level": level, "text": _unjson(text)})
        out.sort(key=lambda r: r["time_ms"])
        return out[-limit:]

    def ping(self) -> bool:
        return self._db.ping()

    def close(self) -> None:
        self._db.close()


def _unjson(value: Any) -> Any:
    """String fields are stored as JSON text (see lineproto.string_field)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
