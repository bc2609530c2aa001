"""The v1 HTTP API of InfluxDB, as the store uses it: ``/ping``, InfluxQL on
``/query`` and gzip'd line protocol on ``/write`` (1.x, 2.x OSS through its DBRP
mappings, 3.x Core).

What a failure means for a batch: a server that is down, overloaded or
stopping (a connection error, 5xx, 429, or one of the errors InfluxDB answers
inside a 200 about its own state), or one that refuses our credentials or
database (401, 403, 404: a setting to fix, not a batch to drop) raises
:class:`StoreUnavailable`, so the batch waits and is written later; lines
InfluxDB refuses (400, 413) raise :class:`StoreRejected`; an error of a
statement, or any other answer, raises ``RuntimeError`` (unexpected: the bridge
parks the batch rather than rejecting it).

Retention: points older than the retention policy they are written to are
dropped by InfluxDB on purpose (the operator's choice), and the rest of the
request is stored; such a "partial write" is a success, and the dropped points
are counted (:attr:`InfluxHTTP.expired_points`). What must outlive any
retention (which batches are stored, run metadata and status, rollup plans,
the alert engine's state: rows at time 0) is written to a retention policy of
its own, ``curvestream_meta`` (``DURATION INF``), created on 1.x at connect;
see :meth:`InfluxHTTP.meta`.
"""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import logging
import re
import threading
import time
import urllib.parse
from typing import Any

import httpx

from curvestream_wire.backoff import Backoff, parse_retry_after

from curvestream_bridge.store.base import StoreRejected, StoreUnavailable

__all__ = [
    "InfluxHTTP",
    "go_duration_ns",
    "LINES_PER_REQUEST",
    "STATEMENTS_PER_REQUEST",
    "QUERY_HEADERS",
    "META_RP",
    "META_MEASUREMENTS",
]

log = logging.getLogger("curvestream.bridge.influx")

LINES_PER_REQUEST = 5000
STATEMENTS_PER_REQUEST = 4000

_TRANSIENT = re.compile(r"shutdown|shutting down|interrupted|timeout|timed out|max-concurrent|too many|closed",
                        re.IGNORECASE)
"""InfluxQL errors of the server's state, not of the statement (InfluxDB answers them inside a 200)."""

_EXPIRED = re.compile(r'partial write: points beyond retention policy dropped=(\d+)"\}\s*$')
"""The end of the answer to a write some of whose points are older than the
retention policy, and nothing else wrong (the others are stored): 400 on 1.x,
422 on 2.x."""

META_RP = "curvestream_meta"
META_MEASUREMENTS = ("cs_run", "cs_group", "cs_batch", "cs_alert_state", "cs_alert_now", "cs_rollup_plan",
                     "cs_rollup_step")
"""The measurements that live in the meta retention policy (see the module docstring)."""

QUERY_HEADERS = {"Accept-Encoding": "identity"}
"""Query answers are asked for uncompressed: InfluxDB gzips an answer whenever the
client accepts it, and compressing a view's rows (megabytes of base64) costs it
more CPU than sending them over a LAN takes (bench/README.md)."""


class InfluxHTTP:
    """One database of one server (``influxdb://[user:pass@]host:port/db``; a
    password alone, or a user alone, is sent as a token)."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, write_deadline_s: float = 30.0,
                 meta_rp: str | None = None) -> None:
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
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)
        self._writers = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="curvestream-influx-write")
        self._write_deadline_s = write_deadline_s
        self._closing = threading.Event()  # wakes a write waiting to retry
        self.version = ""
        self._connected = False
        self._wanted_meta_rp = meta_rp  # None: curvestream_meta on 1.x, the default policy elsewhere
        self.meta_rp = ""  # where the meta measurements are written: set at connect ("": the default policy)
        self.expired_points = 0  # points InfluxDB dropped as older than their retention policy
        self._expired_lock = threading.Lock()
        self.retention_ns = 0  # the default retention policy's duration (1.x; 0: forever)
        self.shard_ns = 0  # and its shard group duration (0: unknown)
        self._policy_read_at = 0.0

    def connect(self) -> None:
        """Learn the server's version from ``/ping``; on 1.x, create the database.

        A server that is down raises StoreUnavailable here and again on each
        query or write until it answers: a bridge may start before its store."""
        try:
            resp = self.http.get("/ping")
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"InfluxDB at {self.base_url} unreachable: {exc}") from None
        self.version = resp.headers.get("X-Influxdb-Version", "")
        if self.version.startswith("1."):
            self._query("CREATE DATABASE " + _ident(self.database), method="POST")
            self.meta_rp = self._meta_policy()
            self._read_default_policy()
        else:  # 2.x and 3.x map a policy name to a bucket (DBRP): one the user mapped, or the default
            self.meta_rp = self._wanted_meta_rp or ""
        self._connected = True

    def _meta_policy(self) -> str:
        """The retention policy of the meta measurements (1.x): ``meta_rp`` as it is
        if it exists, else created ``DURATION INF``, and the meta rows a bridge
        kept in the default policy before copied into it. "" (the default
        policy) when none is wanted or the user may not create one."""
        name = META_RP if self._wanted_meta_rp is None else self._wanted_meta_rp
        if not name:
            return ""
        shown = self._query("SHOW RETENTION POLICIES ON " + _ident(self.database))
        if any(v[0] == name for r in shown for s in r.get("series", []) for v in s.get("values", [])):
            return name
        try:
            self._query(f"CREATE RETENTION POLICY {_ident(name)} ON {_ident(self.database)} DURATION INF "
                        "REPLICATION 1", method="POST")
        except (RuntimeError, StoreUnavailable) as exc:  # a user without admin rights: the default policy
            if isinstance(exc, StoreUnavailable) and "authoriz" not in str(exc):
                raise  # the server is away: decided when it answers
            log.warning("curvestream bridge: cannot create the retention policy %s (%s); run metadata and the "
                        "record of stored batches go to the default retention policy, which must then keep them "
                        "forever (or create %s yourself: CREATE RETENTION POLICY %s ON %s DURATION INF "
                        "REPLICATION 1)", name, exc, name, _ident(name), _ident(self.database))
            return ""
        measurements = "|".join(META_MEASUREMENTS)
        self._query(f"SELECT * INTO {_ident(self.database)}.{_ident(name)}.:MEASUREMENT FROM /^({measurements})$/ "
                    "GROUP BY *", method="POST")
        return name

    def _read_default_policy(self) -> None:
        """The default retention policy's duration and shard group duration (1.x)."""
        shown = self._query("SHOW RETENTION POLICIES ON " + _ident(self.database))
        for r in shown:
            for series in r.get("series", []):
                for row in series.get("values", []):
                    policy = dict(zip(series["columns"], row))
                    if policy.get("default"):
                        self.retention_ns = go_duration_ns(policy.get("duration") or "0s")
                        self.shard_ns = go_duration_ns(policy.get("shardGroupDuration") or "0s")
        self._policy_read_at = time.monotonic()

    def retention(self) -> tuple[int, int]:
        """(duration, shard group duration) of the default retention policy in ns (0: forever,
        unknown), read again every 10 minutes (an operator may change it)."""
        if self.version.startswith("1.") and time.monotonic() - self._policy_read_at > 600:
            try:
                self._read_default_policy()
            except (RuntimeError, StoreUnavailable) as exc:
                log.warning("curvestream bridge: cannot read the retention policies of %s: %s", self.database, exc)
                self._policy_read_at = time.monotonic()
        return self.retention_ns, self.shard_ns

    def meta(self, measurement: str) -> str:
        """``measurement`` as a FROM clause names it: in the meta policy when there is one."""
        self._ensure_connected()
        return f"{_ident(self.meta_rp)}.{_ident(measurement)}" if self.meta_rp else _ident(measurement)

    def _ensure_connected(self) -> None:
        if not self._connected:
            self.connect()

    def ping(self) -> bool:
        try:
            return self.http.get("/ping").status_code == 204
        except httpx.HTTPError:
            return False

    # ------------------------------------------------------------------ /query
    def query(self, q: str, method: str = "GET", chunked: bool = False) -> list[dict[str, Any]]:
        """The results of a query (one or several statements joined by ``;``)."""
        self._ensure_connected()
        return self._query(q, method, chunked)

    def _query(self, q: str, method: str = "GET", chunked: bool = False) -> list[dict[str, Any]]:
        params = {"db": self.database, "q": q, "epoch": "ns", **self._auth_params}
        if chunked:
            params.update(chunked="true", chunk_size="100000")
        try:
            if method == "GET" and len(q) > 2000:  # long names: a URL has a length limit, a body has not
                resp = self.http.post("/query", data=params, headers=QUERY_HEADERS)
            else:
                resp = self.http.request(method, "/query", params=params, headers=QUERY_HEADERS)
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"InfluxDB query failed: {exc}") from None
        lines = resp.text.splitlines() if chunked else [resp.text]
        return [r for line in lines if line.strip() for r in _results(resp, line, lambda _: q)]

    def series(self, q: str, chunked: bool = False) -> list[dict[str, Any]]:
        """The result series of a query."""
        return [s for r in self.query(q, chunked=chunked) for s in r.get("series", [])]

    def statements(self, statements: list[str]) -> list[list[dict[str, Any]]]:
        """Run statements (POSTed, many per request); the result series of each.

        One request at a time: each statement scans its series' points still in
        the write cache under a lock, so parallel requests wait on each other
        there (figures in bench/README.md, ``query_m4.py``)."""
        self._ensure_connected()
        out: list[list[dict[str, Any]]] = []
        for i in range(0, len(statements), STATEMENTS_PER_REQUEST):
            part = statements[i:i + STATEMENTS_PER_REQUEST]
            try:
                resp = self.http.post("/query", data={"db": self.database, "q": ";".join(part), "epoch": "ns",
                                                      **self._auth_params}, headers=QUERY_HEADERS)
            except httpx.HTTPError as exc:
                raise StoreUnavailable(f"InfluxDB query failed: {exc}") from None
            results: list[list[dict[str, Any]]] = [[] for _ in part]
            for r in _results(resp, resp.text, lambda r, part=part: part[r.get("statement_id", 0)]):
                results[r.get("statement_id", 0)] = r.get("series", [])
            out.extend(results)
        return out

    # ------------------------------------------------------------------ /write
    def write(self, lines: list[str], meta: bool = False) -> None:
        """POST lines in gzip'd chunks of ~5,000, two requests in flight (compression and
        InfluxDB's parsing overlap), each retried with jittered backoff (honouring
        Retry-After) until the write deadline. Points are idempotent, so order does not matter.
        ``meta``: lines of the meta measurements (written to the meta policy)."""
        writing = self.writing(meta)
        writing.add(lines)
        writing.wait()

    def writing(self, meta: bool = False) -> Writing:
        """A write whose chunks are sent while the caller makes more lines:
        ``add(lines)`` as they come, then ``wait()`` (which raises what a chunk raised)."""
        self._ensure_connected()
        return Writing(self, time.monotonic() + self._write_deadline_s, meta)

    def _write_chunk(self, chunk: list[str], deadline: float, meta: bool = False) -> None:
        rp = self.meta_rp if meta else ""
        params = {"db": self.database, "precision": "ns", **self._auth_params}
        if rp:
            params["rp"] = rp
        body = gzip.compress("\n".join(chunk).encode(), compresslevel=1)
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        while True:
            try:
                resp = self.http.post("/write", params=params, content=body,
                                      headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"})
                if resp.status_code == 204:
                    return
                expired = _EXPIRED.search(resp.text) if resp.status_code in (400, 422) else None
                if expired and meta:  # what must be kept was not: never take the batch for stored
                    raise RuntimeError(f"InfluxDB dropped curvestream's own records as older than the retention "
                                       f"policy {rp or 'by default'} of database {self.database}: give them one "
                                       f"that keeps them (the store URL's ?meta_rp=): {resp.text[:200]}")
                if expired:  # the rest of the chunk is stored
                    self._count_expired(int(expired.group(1)))
                    return
                if resp.status_code in (400, 413):
                    raise StoreRejected(f"InfluxDB rejected lines ({resp.status_code}): {resp.text[:300]}")
                if resp.status_code in (401, 403, 404):
                    raise StoreUnavailable(f"InfluxDB refused the write ({resp.status_code}; check the store URL's "
                                           f"credentials and database): {resp.text[:300]}", 5.0)
                if resp.status_code < 500 and resp.status_code not in (429, 408):
                    raise RuntimeError(f"InfluxDB write failed ({resp.status_code}): {resp.text[:300]}")
                retry_after = parse_retry_after(resp.headers.get("Retry-After"))
                problem = f"InfluxDB answered {resp.status_code}: {resp.text[:200]}"
            except httpx.HTTPError as exc:
                retry_after = None
                problem = f"InfluxDB unreachable: {exc}"
            delay = backoff.next_delay(retry_after)
            if time.monotonic() + delay > deadline or self._closing.wait(delay):
                raise StoreUnavailable(problem, retry_after)

    def count_expired(self, n: int) -> None:
        """Points older than the retention policy that the bridge took out of a write itself."""
        if n:
            self._count_expired(n)

    def _count_expired(self, n: int) -> None:
        with self._expired_lock:
            first = self.expired_points == 0
            self.expired_points += n
        if first:
            log.warning("curvestream bridge: %d point(s) older than the retention policy of database %s were not "
                        "stored (counted in curvestream_store_expired_points_total from now on, and named to their "
                        "trainers in the commits)", n, self.database)

    def close(self) -> None:
        self._closing.set()
        self._writers.shutdown(wait=True)
        self.http.close()


def _results(resp: httpx.Response, text: str, statement_of: Any) -> list[dict[str, Any]]:
    """The results of one /query answer (or one chunk of it); a failure raised as what it means."""
    if resp.status_code >= 500 or resp.status_code == 429:
        raise StoreUnavailable(f"InfluxDB answered {resp.status_code}: {resp.text[:200]}")
    doc = json.loads(text)
    if "error" in doc:
        raise StoreUnavailable(f"InfluxDB query error: {doc['error']}")
    results = doc.get("results", [])
    for r in results:
        if "error" in r:
            problem = f"InfluxQL error: {r['error']} in {statement_of(r)[:200]}"
            if _TRANSIENT.search(r["error"]):  # a server stopping or overloaded: the batch waits
                raise StoreUnavailable(problem)
            raise RuntimeError(problem)
    return results


_GO_UNITS = {"h": 3_600_000_000_000, "m": 60_000_000_000, "s": 1_000_000_000, "ms": 1_000_000, "us": 1_000,
             "µs": 1_000, "ns": 1}


def go_duration_ns(text: str) -> int:
    """A Go duration as InfluxDB 1.x shows a policy's (``1h0m0s``, ``168h0m0s``, ``0s``) in ns.

    >>> go_duration_ns("1h0m0s"), go_duration_ns("30m0s"), go_duration_ns("0s")
    (3600000000000, 1800000000000, 0)
    """
    return sum(int(n) * _GO_UNITS[u] for n, u in re.findall(r"(\d+)(h|ms|us|µs|ns|m|s)", text))


def _ident(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Writing:
    """One write in progress (see :meth:`InfluxHTTP.writing`)."""

    def __init__(self, db: InfluxHTTP, deadline: float, meta: bool = False) -> None:
        self._db, self._deadline, self._meta = db, deadline, meta
        self._pending: list[str] = []
        self._futures: list[concurrent.futures.Future[None]] = []

    def add(self, lines: list[str]) -> None:
        self._pending.extend(lines)
        while len(self._pending) >= LINES_PER_REQUEST:
            self._send(self._pending[:LINES_PER_REQUEST])
            del self._pending[:LINES_PER_REQUEST]

    def _send(self, chunk: list[str]) -> None:
        self._futures.append(self._db._writers.submit(self._db._write_chunk, chunk, self._deadline, self._meta))

    def abandon(self) -> None:
        """Waits for the chunks in flight, whatever they answer (the caller raises its own error)."""
        concurrent.futures.wait(self._futures)
        self._pending = []

    def wait(self) -> None:
        """Sends what is left and waits for every chunk; raises StoreUnavailable
        first (the write may succeed later), else the first other error."""
        if self._pending:
            if not self._futures:  # one small write: no thread hop
                chunk, self._pending = self._pending, []
                self._db._write_chunk(chunk, self._deadline, self._meta)
                return
            self._send(self._pending)
            self._pending = []
        errors = [f.exception() for f in self._futures]
        for exc in errors:
            if isinstance(exc, StoreUnavailable):
                raise exc
        for exc in errors:
            if exc is not None:
                raise exc
