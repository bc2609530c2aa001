"""InfluxDB through the v1 HTTP API: ``/write`` (line protocol, gzip, ~5,000
lines a request) and ``/query`` (InfluxQL). These endpoints exist on 1.x, on
2.x OSS (through its DBRP mappings) and on 3.x Core.

Measurements (all tag values percent-encoded, see :mod:`.lineproto`)::

    cs_scalar,metric=<key>,project=<p>,run=<r>   step=<int>,value=<float>  <wall ns>
                                                 step=<int>,nonfinite=1|2|3 (NaN, +Inf, -Inf)
    cs_histogram,metric,project,run              step,edges,counts (JSON),min,max,sum,count
    cs_text,metric,project,run                   step,level,text (JSON string)
    cs_run,project,run                           meta (JSON), state, reason, status_ns   at time 0
    cs_batch,producer=<hex>                      seq=<int>     at time <seq> ns
    cs_m4_step, cs_m4_time, cs_m4_meta           M4 rollups, see .influx_rollup

The timestamp of a point is its wall time, so a replayed point lands on itself.
A batch whose (producer, seq) is in ``cs_batch`` is not written again.

URL parameters: ``rollups=off`` (raw points only; queries read every point),
``writer=<id>`` (this bridge's rollup rows; default the ``writer_id`` the
bridge passes, its MQTT client id, else the host name).
"""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import logging
import math
import random
import re
import socket
import threading
import time
import urllib.parse
from typing import Any, Sequence

import httpx
import numpy as np

from curvestream.v1 import run_pb2

from curvestream_bridge.decode import DecodedBatch
from curvestream_bridge.store.base import (
    MetricRecord,
    RunRecord,
    SeriesQuery,
    SeriesResult,
    StoreUnavailable,
    meta_fields,
    record_from_meta,
    state_name,
)
from curvestream_bridge.store.influx_rollup import RollupWriter
from curvestream_bridge.store.influx_rows import SeriesKey, tag_literal
from curvestream_bridge.store.influx_series import NONFINITE, points_of, series_query
from curvestream_bridge.store.lineproto import decode_tag, encode_tag, string_field
from curvestream_bridge.store.m4 import m4_indices
from curvestream_bridge.store.m4query import rollup_axis

__all__ = ["InfluxStore"]

log = logging.getLogger("curvestream.bridge.influx")

_TRANSIENT = re.compile(r"shutdown|shutting down|interrupted|timeout|timed out|max-concurrent|too many|closed",
                        re.IGNORECASE)
"""InfluxQL errors of the server's state, not of the statement (InfluxDB answers them inside a 200)."""

LINES_PER_REQUEST = 5000
STATEMENTS_PER_REQUEST = 4000


def _nonfinite_code(v: float) -> int:
    return 1 if math.isnan(v) else (2 if v > 0 else 3)


class InfluxStore:
    name = "influxdb"

    def __init__(self, url: str, *, writer_id: str = "", write_deadline_s: float = 30.0,
                 timeout_s: float = 30.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        scheme = "https" if parsed.scheme == "influxdbs" else "http"
        self.database = parsed.path.strip("/") or "curvestream"
        self.base_url = f"{scheme}://{parsed.hostname or '127.0.0.1'}:{parsed.port or 8086}"
        headers: dict[str, str] = {}
        self._auth_params: dict[str, str] = {}
        user = urllib.parse.unquote(parsed.username or "")
        password = urllib.parse.unquote(parsed.password or "")
        if user and password:
            self._auth_params = {"u": user, "p": password}
        elif password or user:
            headers["Authorization"] = f"Token {password or user}"
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)
        self._writers = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="curvestream-influx-write")
        self._write_deadline_s = write_deadline_s
        self._lock = threading.Lock()
        self._runs_seen: set[tuple[str, str]] = set()
        params = dict(urllib.parse.parse_qsl(parsed.query))
        self.rollups = params.get("rollups", "on").lower() not in ("off", "false", "0", "no")
        self._rollup = RollupWriter(params.get("writer") or writer_id or socket.gethostname())
        self.version = ""
        self._connect()

    # ------------------------------------------------------------------ plumbing
    def _connect(self) -> None:
        try:
            resp = self._http.get("/ping")
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"InfluxDB at {self.base_url} unreachable: {exc}") from None
        self.version = resp.headers.get("X-Influxdb-Version", "")
        if self.version.startswith("1."):
            self._query("CREATE DATABASE " + _ident(self.database), method="POST")

    def _query(self, q: str, method: str = "GET", chunked: bool = False) -> list[dict[str, Any]]:
        params = {"db": self.database, "q": q, "epoch": "ns", **self._auth_params}
        if chunked:
            params.update(chunked="true", chunk_size="100000")
        try:
            if method == "GET" and len(q) > 2000:  # long names: a URL has a length limit, a body has not
                resp = self._http.post("/query", data=params)
            else:
                resp = self._http.request(method, "/query", params=params)
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"InfluxDB query failed: {exc}") from None
        if resp.status_code >= 500 or resp.status_code == 429:
            raise StoreUnavailable(f"InfluxDB answered {resp.status_code}: {resp.text[:200]}")
        results: list[dict[str, Any]] = []
        for line in resp.text.splitlines() if chunked else [resp.text]:
            if not line.strip():
                continue
            doc = json.loads(line)
            if "error" in doc:
                raise StoreUnavailable(f"InfluxDB query error: {doc['error']}")
            for r in doc.get("results", []):
                if "error" in r:
                    raise RuntimeError(f"InfluxQL error: {r['error']} in {q[:200]}")
                results.append(r)
        return results

    def _statements(self, statements: list[str]) -> list[list[dict[str, Any]]]:
        """Run statements (POSTed, many per request); the result series of each.

        One request at a time: parallel requests were 20% faster on data in
        TSM files but 10× slower on data still in the write cache (each
        statement scans the series' cached points under a lock)."""
        out: list[list[dict[str, Any]]] = []
        for i in range(0, len(statements), STATEMENTS_PER_REQUEST):
            out.extend(self._request_statements(statements[i:i + STATEMENTS_PER_REQUEST]))
        return out

    def _request_statements(self, part: list[str]) -> list[list[dict[str, Any]]]:
        try:
            resp = self._http.post("/query", data={"db": self.database, "q": ";".join(part), "epoch": "ns",
                                                   **self._auth_params})
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"InfluxDB query failed: {exc}") from None
        if resp.status_code >= 500 or resp.status_code == 429:
            raise StoreUnavailable(f"InfluxDB answered {resp.status_code}: {resp.text[:200]}")
        doc = json.loads(resp.text)
        if "error" in doc:
            raise StoreUnavailable(f"InfluxDB query error: {doc['error']}")
        results: list[list[dict[str, Any]]] = [[] for _ in part]
        for r in doc.get("results", []):
            if "error" in r:
                text = f"InfluxQL error: {r['error']} in {part[r.get('statement_id', 0)][:200]}"
                if _TRANSIENT.search(r["error"]):  # a server stopping or overloaded: the batch waits
                    raise StoreUnavailable(text)
                raise RuntimeError(text)
            results[r.get("statement_id", 0)] = r.get("series", [])
        return results

    def _series(self, q: str, chunked: bool = False) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in self._query(q, chunked=chunked):
            out.extend(r.get("series", []))
        return out

    def _post_lines(self, lines: list[str]) -> None:
        """POST lines in gzip'd chunks of ~5,000, two requests in flight (compression and
        InfluxDB's parsing overlap), each retried with jittered backoff (honouring
        Retry-After) until the write deadline. Points are idempotent, so order does not matter."""
        deadline = time.monotonic() + self._write_deadline_s
        chunks = [lines[i : i + LINES_PER_REQUEST] for i in range(0, len(lines), LINES_PER_REQUEST)]
        if len(chunks) <= 1:
            for chunk in chunks:
                self._post_chunk(chunk, deadline)
            return
        futures = [self._writers.submit(self._post_chunk, chunk, deadline) for chunk in chunks]
        errors = [f.exception() for f in futures]
        for exc in errors:
            if isinstance(exc, StoreUnavailable):
                raise exc
        for exc in errors:
            if exc is not None:
                raise exc

    def _post_chunk(self, chunk: list[str], deadline: float) -> None:
        params = {"db": self.database, "precision": "ns", **self._auth_params}
        body = gzip.compress("\n".join(chunk).encode(), compresslevel=1)
        backoff = 0.2
        while True:
            try:
                resp = self._http.post("/write", params=params, content=body,
                                       headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"})
                if resp.status_code == 204:
                    return
                if resp.status_code == 400 and "partial write" not in resp.text:
                    raise RuntimeError(f"InfluxDB rejected lines: {resp.text[:300]}")
                if resp.status_code < 500 and resp.status_code not in (429, 408):
                    raise RuntimeError(f"InfluxDB write failed ({resp.status_code}): {resp.text[:300]}")
                retry_after = _retry_after(resp.headers.get("Retry-After"))
                problem = f"InfluxDB answered {resp.status_code}: {resp.text[:200]}"
            except httpx.HTTPError as exc:
                retry_after = None
                problem = f"InfluxDB unreachable: {exc}"
            delay = retry_after if retry_after is not None else backoff * (0.5 + random.random())
            if time.monotonic() + delay > deadline:
                raise StoreUnavailable(problem, retry_after)
            time.sleep(delay)
            backoff = min(backoff * 2, 5.0)

    # ------------------------------------------------------------------ writing
    def write(self, batches: Sequence[DecodedBatch]) -> None:
        with self._lock:
            batches = self._fresh(batches)
            lines: list[str] = []
            columns: dict[SeriesKey, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
            for b in batches:
                lines.extend(self._batch_lines(b))
                for col in b.scalars:
                    columns.setdefault((b.project, b.run, col.key), []).append((col.steps, col.wall_ns, col.values))
            if self.rollups and columns:
                lines.extend(self._rollup.lines(columns, self._statements, self._all_points, self._post_lines))
            for b in batches:
                lines.append(f"cs_batch,producer={b.producer_id.hex()} seq={b.seq}i {b.seq}")
            self._post_lines(lines)
            self._rollup.commit()
            for b in batches:
                self._runs_seen.add((b.project, b.run))
                if b.status is not None:
                    self._apply_status_locked(b.status)

    def _fresh(self, batches: Sequence[DecodedBatch]) -> list[DecodedBatch]:
        """The batches not stored yet (and each once)."""
        by_producer: dict[bytes, list[int]] = {}
        for b in batches:
            by_producer.setdefault(b.producer_id, []).append(b.seq)
        producers = list(by_producer)
        stmts = [f'SELECT "seq" FROM "cs_batch" WHERE "producer" = {tag_literal(p.hex())} AND time >= {min(by_producer[p])} '
                 f'AND time <= {max(by_producer[p])}' for p in producers]
        stored = set()
        for p, result in zip(producers, self._statements(stmts) if stmts else []):
            for s in result:
                stored.update((p, int(v[1])) for v in s["values"])
        out = []
        for b in batches:
            if (b.producer_id, b.seq) not in stored:
                stored.add((b.producer_id, b.seq))
                out.append(b)
        return out

    def _batch_lines(self, b: DecodedBatch) -> list[str]:
        lines: list[str] = []
        run_tags = f"project={encode_tag(b.project)},run={encode_tag(b.run)}"
        if (b.project, b.run) not in self._runs_seen:
            lines.append(f"cs_run,{run_tags} seen=true 0")
        for col in b.scalars:
            prefix = f"cs_scalar,metric={encode_tag(col.key)},{run_tags} step="
            values = col.values
            finite = np.isfinite(values)
            steps = col.steps.tolist()
            walls = col.wall_ns.tolist()
            vals = values.tolist()
            if finite.all():
                lines.extend([f"{prefix}{s}i,value={v!r} {t}" for s, v, t in zip(steps, vals, walls)])
            else:
                for s, v, t, ok in zip(steps, vals, walls, finite.tolist()):
                    if ok:
                        lines.append(f"{prefix}{s}i,value={v!r} {t}")
                    else:
                        lines.append(f"{prefix}{s}i,nonfinite={_nonfinite_code(v)}i {t}")
        for h in b.histograms:
            lines.append(
                f"cs_histogram,metric={encode_tag(h.key)},{run_tags} step={h.step}i,"
                f"edges={string_field(json.dumps(list(h.bucket_edges)))},"
                f"counts={string_field(json.dumps(list(h.counts)))},min={_num(h.min)},max={_num(h.max)},"
                f"sum={_num(h.sum)},count={h.count}i {h.wall_ns}"
            )
        for t in b.texts:
            lines.append(f"cs_text,metric={encode_tag(t.key)},{run_tags} step={t.step}i,level={t.level}i,"
                         f"text={string_field(t.text)} {t.wall_ns}")
        if b.meta is not None:
            lines.append(self._meta_line(b.meta))
        return lines

    def _all_points(self, key: SeriesKey) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every stored point of a series (when its rollups start)."""
        wall, step, value = self._raw(_where(key), None, None)
        return step, wall, value

    @staticmethod
    def _meta_line(meta: run_pb2.RunMeta) -> str:
        fields = json.dumps(meta_fields(meta), ensure_ascii=False)
        return (f"cs_run,project={encode_tag(meta.project)},run={encode_tag(meta.run)} "
                f"meta={string_field(fields)},seen=true 0")

    def apply_meta(self, meta: run_pb2.RunMeta) -> None:
        with self._lock:
            self._post_lines([self._meta_line(meta)])

    def apply_status(self, status: run_pb2.RunStatus) -> bool:
        with self._lock:
            return self._apply_status_locked(status)

    def _apply_status_locked(self, status: run_pb2.RunStatus) -> bool:
        where = f'"project" = {tag_literal(status.project)} AND "run" = {tag_literal(status.run)}'
        rows = self._series(f'SELECT "status_ns" FROM "cs_run" WHERE {where}')
        if rows and rows[0]["values"] and rows[0]["values"][0][1] is not None \
                and rows[0]["values"][0][1] > status.updated_ns:
            return False
        self._post_lines([
            f"cs_run,project={encode_tag(status.project)},run={encode_tag(status.run)} "
            f"state={string_field(state_name(status.state))},reason={string_field(status.reason)},"
            f"status_ns={status.updated_ns}i,seen=true 0"
        ])
        return True

    def stored_ranges(self, producer_id: bytes) -> list[tuple[int, int]]:
        seqs: list[int] = []
        for s in self._series(f'SELECT "seq" FROM "cs_batch" WHERE "producer" = {tag_literal(producer_id.hex())}',
                              chunked=True):
            seqs.extend(int(v[1]) for v in s["values"])
        seqs.sort()
        ranges: list[tuple[int, int]] = []
        for seq in seqs:
            if ranges and seq <= ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], max(seq, ranges[-1][1]))
            else:
                ranges.append((seq, seq))
        return ranges

    # ------------------------------------------------------------------ reading
    def runs(self) -> list[RunRecord]:
        points = {}
        for s in self._series('SELECT count("step") FROM "cs_scalar" GROUP BY "project", "run"'):
            tags = s.get("tags", {})
            points[(decode_tag(tags.get("project", "")), decode_tag(tags.get("run", "")))] = s["values"][0][1]
        out = []
        for s in self._series('SELECT * FROM "cs_run" GROUP BY "project", "run"'):
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
        return out

    def metrics(self, project: str, run: str) -> list[MetricRecord]:
        where = f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)}'
        statements = ";".join([
            f'SELECT count("step") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT first("step") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT last("step") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT last("value") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
            f'SELECT last("nonfinite") FROM "cs_scalar" WHERE {where} GROUP BY "metric"',
        ])
        results = self._query(statements)
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
            for s in self._series(f'SELECT count("step") FROM "{measurement}" WHERE {where} GROUP BY "metric"'):
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
            self._series(f'SELECT "step", "value", "nonfinite" FROM "cs_scalar" WHERE {cond} {extra}', chunked=True))
        return wall, step, value

    def series(self, q: SeriesQuery) -> SeriesResult:
        key = (q.project, q.run, q.key)
        where = _where(key)
        origin = 0
        if q.x == "relative":
            starts = self._series(f'SELECT first("step") FROM "cs_scalar" WHERE "project" = {tag_literal(q.project)} '
                                  f'AND "run" = {tag_literal(q.run)}')
            origin = int(starts[0]["values"][0][0]) if starts else 0
        plans = self._rollup.plan(key, self._statements)
        if plans is not None:
            return series_query(self._statements, key, q, plans[rollup_axis(q.x)], origin)
        wall, step, y = self._raw(where, None, None)
        if q.x == "step":
            order = np.argsort(step, kind="stable")
            wall, step, y = wall[order], step[order], y[order]
            xs = step.astype(np.float64)
        elif q.x == "time":
            xs = wall / 1e6
        else:
            xs = (wall - origin) / 1e9
        lo = q.start if q.start is not None else (float(xs[0]) if len(xs) else 0.0)
        hi = q.end if q.end is not None else (float(xs[-1]) if len(xs) else 0.0)
        i0 = int(np.searchsorted(xs, lo, side="left"))
        i1 = int(np.searchsorted(xs, hi, side="right"))
        total = i1 - i0
        width = max(1, int(q.width))
        if total <= 4 * width:
            idx = np.arange(i0, i1)
            raw = True
        else:
            idx = i0 + m4_indices(xs[i0:i1], y[i0:i1], lo, hi, width)
            raw = False
        before = after = None
        if i0 > 0:
            idx = np.concatenate(([i0 - 1], idx))
            before = 0
        if i1 < len(xs):
            idx = np.concatenate((idx, [i1]))
            after = len(idx) - 1
        return SeriesResult(raw, total, xs[idx], step[idx], wall[idx], y[idx], lo, hi, before, after)

    def histograms(self, project: str, run: str, key: str, limit: int = 500) -> list[dict[str, Any]]:
        where = f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)} AND "metric" = {tag_literal(key)}'
        rows = []
        for s in self._series(f'SELECT "step", "edges", "counts", "min", "max", "sum", "count" FROM "cs_histogram" '
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
        for s in self._series(f'SELECT "step", "level", "text" FROM "cs_text" WHERE {where} GROUP BY "metric" '
                              f'ORDER BY time DESC LIMIT {int(limit)}'):
            k = decode_tag(s["tags"]["metric"])
            for t, step, level, text in s["values"]:
                out.append({"key": k, "step": step, "time_ms": t / 1e6, "level": level, "text": _unjson(text)})
        out.sort(key=lambda r: r["time_ms"])
        return out[-limit:]

    def ping(self) -> bool:
        try:
            return self._http.get("/ping").status_code == 204
        except httpx.HTTPError:
            return False

    def close(self) -> None:
        self._writers.shutdown(wait=True)
        self._http.close()




def _where(key: SeriesKey) -> str:
    project, run, metric = key
    return f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)} AND "metric" = {tag_literal(metric)}'


def _ident(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unjson(value: Any) -> Any:
    """String fields are stored as JSON text (see lineproto.string_field)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else "0.0"


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
