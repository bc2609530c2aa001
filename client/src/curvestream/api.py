"""Read runs back from a bridge: configs, summaries, alerts and every point.

    >>> import curvestream
    >>> api = curvestream.Api("http://127.0.0.1:8080")                      # doctest: +SKIP
    >>> runs = api.runs(project="mnist", filters={"config.lr": 0.1})       # doctest: +SKIP
    >>> run = api.run("mnist", "lr=0.1-k3x9q2")                              # doctest: +SKIP
    >>> run.config["lr"], run.summary["train/loss"], run.alerts()          # doctest: +SKIP
    >>> df = run.history(["train/loss", "val/loss"], x="step")              # doctest: +SKIP

Renaming, tagging and deleting runs (``ApiRun.rename``, ``update``, ``delete``) need
the bridge's write token (``write_token=``, default ``CURVESTREAM_WRITE_TOKEN``).

``history()`` holds every stored point (never a downsampled view), NaN and
±Inf included, read from the bridge's export endpoint as binary frames
(:mod:`curvestream_wire.pointstream`) while the bridge reads its store. It
returns a pandas DataFrame, or a polars one (``library="polars"``, or when
pandas is not installed): ``pip install 'curvestream[pandas]'`` or
``'curvestream[polars]'``; the rest of this module needs only the standard
library, and :meth:`ApiRun.export` writes Parquet or CSV files without either.

URL and token default to ``CURVESTREAM_BRIDGE_URL`` and ``CURVESTREAM_READ_TOKEN``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import ssl
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO, Literal

__all__ = ["Api", "ApiRun", "ApiError"]


class ApiError(Exception):
    """The bridge answered an error (``status``: the HTTP status, 0 when unreachable)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Api:
    """A bridge's runs, read over its HTTP API."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout_s: float = 60.0,
                 write_token: str | None = None) -> None:
        self.url = (url or os.environ.get("CURVESTREAM_BRIDGE_URL") or "http://127.0.0.1:8080").rstrip("/")
        self.token = os.environ.get("CURVESTREAM_READ_TOKEN", "") if token is None else token
        self.write_token = os.environ.get("CURVESTREAM_WRITE_TOKEN", "") if write_token is None else write_token
        self.timeout_s = timeout_s
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"curvestream.Api: expected an http(s)://host[:port] URL, got {self.url!r}")
        self._parsed = parsed

    def __repr__(self) -> str:
        return f"Api({self.url!r})"

    # ------------------------------------------------------------------ runs
    def runs(self, project: str | None = None, filters: Mapping[str, Any] | None = None) -> list[ApiRun]:
        """Runs, newest first. ``filters``: ``tag``, ``group``, ``state`` and
        ``config.<key>`` (dotted into nested configs), all of which must match."""
        params: list[tuple[str, str]] = [("project", project)] if project is not None else []
        for name, value in (filters or {}).items():
            name = "tag" if name == "tags" else name
            if name not in ("tag", "group", "state", "project") and not name.startswith("config."):
                raise ValueError(f"curvestream.Api.runs: unknown filter {name!r} "
                                 "(tag, group, state, project, config.<key>)")
            params.append((name, value if isinstance(value, str) else json.dumps(value)))
        answer = self._json("/api/v1/runs", params)
        return [ApiRun(self, r) for r in answer["runs"]]

    def run(self, project: str, run: str | None = None) -> ApiRun:
        """``run("mnist", "r1")``, or ``run("mnist/r1")`` (split at the first ``/``)."""
        if run is None:
            project, sep, run = project.partition("/")
            if not sep:
                raise ValueError("curvestream.Api.run: give the project and the run, or 'project/run'")
        for found in self.runs(project=project):
            if found.run == run:
                return found
        raise LookupError(f"curvestream.Api: no run {project}/{run} at {self.url}")

    def alerts(self, project: str | None = None, run: str | None = None,
               state: Literal["firing", "resolved"] | None = None) -> list[dict[str, Any]]:
        params = [(k, v) for k, v in (("project", project), ("run", run), ("state", state)) if v is not None]
        return list(self._json("/api/v1/alerts", params)["alerts"])

    # ------------------------------------------------------------------ HTTP
    def _json(self, path: str, params: Iterable[tuple[str, str]] = ()) -> Any:
        with self._request(path, params, "application/json") as resp:
            return json.loads(resp.read())

    def _write(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """A write (PATCH, DELETE) with the write token; its JSON answer."""
        data = json.dumps(body).encode() if body is not None else None
        with self._request(path, (), "application/json", method=method, body=data, token=self.write_token) as resp:
            return json.loads(resp.read())

    @contextlib.contextmanager
    def _request(self, path: str, params: Iterable[tuple[str, str]], accept: str, method: str = "GET",
                 body: bytes | None = None, token: str | None = None) -> Iterator[http.client.HTTPResponse]:
        """The answer to a request (a GET unless said), whose status was 200 (else
        :class:`ApiError`); its connection closes after."""
        query = urllib.parse.urlencode(list(params), quote_via=urllib.parse.quote)
        host, port = self._parsed.hostname or "127.0.0.1", self._parsed.port
        if self._parsed.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=self.timeout_s, context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout_s)
        headers = {"Accept": accept}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        target = self._parsed.path.rstrip("/") + path + (f"?{query}" if query else "")
        try:
            try:
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                raise ApiError(f"curvestream.Api: the bridge at {self.url} is unreachable: {exc}") from None
            if resp.status != 200:
                body = resp.read()
                try:
                    detail = json.loads(body).get("detail", body.decode(errors="replace"))
                except (ValueError, AttributeError):
                    detail = body[:300].decode(errors="replace")
                raise ApiError(f"curvestream.Api: {method} {path}: {resp.status} {detail}", resp.status)
            try:
                yield resp
            finally:
                resp.close()
        finally:
            conn.close()


def _path(project: str, run: str) -> str:
    return f"/api/v1/runs/{urllib.parse.quote(project, safe='')}/{urllib.parse.quote(run, safe='')}"


class ApiRun:
    """One run as the runs list gives it, and reads of its points and alerts."""

    def __init__(self, api: Api, record: dict[str, Any]) -> None:
        self._api = api
        self.record = record
        self.project: str = record["project"]
        self.run: str = record["run"]
        self.id = self.run
        self.name: str = record.get("name") or self.run
        self.state: str = record.get("state", "unknown")
        self.config: dict[str, Any] = record.get("config") or {}
        self.tags: list[str] = record.get("tags") or []
        self.group: str = record.get("group", "")
        self.notes: str = record.get("notes", "")
        self._metrics: list[dict[str, Any]] | None = None

    def __repr__(self) -> str:
        return f"ApiRun({self.project!r}, {self.run!r}, state={self.state!r})"

    @property
    def path(self) -> str:
        return _path(self.project, self.run)

    def metrics(self) -> list[dict[str, Any]]:
        """The run's keys with their kind, count, first and last steps and last value."""
        if self._metrics is None:
            self._metrics = list(self._api._json(self.path + "/metrics")["metrics"])
        return self._metrics

    @property
    def keys(self) -> list[str]:
        """The run's scalar keys."""
        return [m["key"] for m in self.metrics() if m["kind"] == "scalar"]

    @property
    def summary(self) -> dict[str, Any]:
        """Each scalar key's last value, with the summary the run stored over it."""
        last = {m["key"]: _number(m["last_value"]) for m in self.metrics() if m["kind"] == "scalar"}
        return {**last, **(self.record.get("summary") or {})}

    def alerts(self, state: Literal["firing", "resolved"] | None = None) -> list[dict[str, Any]]:
        return self._api.alerts(self.project, self.run, state)

    # ------------------------------------------------------------------ after the fact (write token)
    def rename(self, name: str) -> None:
        """Show the run under ``name`` (its identity, ``run``, and its curves stay)."""
        self.update(name=name)

    def update(self, *, name: str | None = None, tags: Iterable[str] | None = None, add_tags: Iterable[str] = (),
               remove_tags: Iterable[str] = (), notes: str | None = None) -> None:
        """Set the run's name, tags (all of them, or some added and removed) or notes."""
        body: dict[str, Any] = {"add_tags": list(add_tags), "remove_tags": list(remove_tags)}
        for key, value in (("name", name), ("tags", list(tags) if tags is not None else None), ("notes", notes)):
            if value is not None:
                body[key] = value
        edited = self._api._write("PATCH", self.path, body)
        self.name, self.tags, self.notes = edited["name"], edited["tags"], edited["notes"]
        self.record.update(name=self.name, tags=self.tags, notes=self.notes)

    def delete(self) -> None:
        """Delete the run and everything of it, for good (whatever arrives for it later is dropped)."""
        self._api._write("DELETE", self.path)

    def points(self, keys: Iterable[str] | None = None) -> dict[str, tuple[Any, Any, Any]]:
        """Every point of the keys (default: all scalar keys): key -> ``(step, time_ns,
        value)`` numpy arrays in wall-time order."""
        from curvestream.dataframes import read_points

        with self._api._request(self.path + "/export", self._export_params("binary", keys),
                            "application/vnd.curvestream.points") as resp:
            return read_points(resp)

    def history(self, keys: Iterable[str] | str | None = None, x: Literal["step", "time"] = "step",
                library: Literal["pandas", "polars"] | None = None) -> Any:
        """Every point of the keys (default: all scalar keys) as a DataFrame: columns
        ``_step``, ``_time`` (UTC, nanoseconds) and one per key; one row per logged
        row (the keys one ``log()`` call logged together share it), sorted by ``x``.
        A key absent from a row is null (pandas: ``<NA>`` in a ``Float64`` column),
        never confused with a logged NaN."""
        from curvestream.dataframes import history_frame

        if x not in ("step", "time"):
            raise ValueError(f"curvestream history: x must be 'step' or 'time', got {x!r}")
        if isinstance(keys, str):
            keys = [keys]
        return history_frame(self.points(keys), x, library)

    def export(self, target: str | os.PathLike[str] | BinaryIO, format: Literal["parquet", "csv"] = "parquet",
               keys: Iterable[str] | None = None) -> int:
        """Write every point of the keys as a Parquet or CSV file (columns key, step,
        time_ns, value), as the bridge streams it; the bytes written."""
        with self._api._request(self.path + "/export", self._export_params(format, keys), "*/*") as resp:
            if hasattr(target, "write"):
                return _copy(resp, target)  # type: ignore[arg-type]
            part = f"{os.fspath(target)}.part"  # a cut export never passes for a whole file
            try:
                with open(part, "wb") as out:
                    written = _copy(resp, out)
                os.replace(part, target)
            finally:
                if os.path.exists(part):
                    os.unlink(part)
            return written

    @staticmethod
    def _export_params(fmt: str, keys: Iterable[str] | None) -> list[tuple[str, str]]:
        return [("format", fmt), *(("key", k) for k in (keys or ()))]


def _copy(resp: http.client.HTTPResponse, out: BinaryIO) -> int:
    written = 0
    try:
        while piece := resp.read(1 << 20):
            out.write(piece)
            written += len(piece)
    except (OSError, http.client.HTTPException) as exc:
        raise ApiError(f"curvestream.Api: the export was cut short after {written:,} bytes: {exc}") from None
    return written


def _number(value: Any) -> Any:
    """The API's JSON spelling of NaN and ±Inf, as floats."""
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(value, value) \
        if isinstance(value, str) else value
