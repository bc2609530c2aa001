"""The direct-write fallback: the same protobuf batch, POSTed to the bridge's
``/api/v1/ingest``, which answers with a ``Commit`` once the batch is stored.

Errors are mapped here, at the boundary, to two kinds:

- :class:`Retryable` (network down, 5xx, 429; may carry ``retry_after_s``)
- :class:`Permanent` (4xx other than 401/403/408/429: this batch can never be
  stored; it is counted and dropped, not retried for ever)

A wrong or missing token (401/403) is retryable: fixing the configuration of a
long run must not lose its points.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse

from curvestream_wire.backoff import parse_retry_after
from curvestream_wire.v1 import run_pb2

__all__ = ["BridgeHttp", "Retryable", "Permanent"]


class Retryable(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Permanent(Exception):
    pass


class BridgeHttp:
    """A keep-alive HTTP client for one bridge (stdlib only)."""

    def __init__(self, base_url: str, token: str = "", timeout_s: float = 10.0) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or (443 if self._https else 80)
        self._prefix = parsed.path.rstrip("/")
        self._token = token
        self._timeout = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                                         context=ssl.create_default_context())
            else:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def ingest(self, payload: bytes) -> run_pb2.Commit:
        status, headers, body = self._request("POST", "/api/v1/ingest", payload, "application/x-protobuf")
        if status == 200:
            commit = run_pb2.Commit()
            try:
                commit.ParseFromString(body)
            except Exception as exc:
                raise Retryable(f"bridge answered 200 with an unreadable commit: {exc}") from None
            return commit
        reason = _reason(body)
        if status in (401, 403):
            raise Retryable(f"bridge refused the write token ({status}): {reason}")
        if status in (408, 429) or status >= 500:
            raise Retryable(f"bridge answered {status}: {reason}", parse_retry_after(headers.get("retry-after")))
        raise Permanent(f"bridge rejected the batch ({status}): {reason}")

    def get_json(self, path: str, read_token: str = "") -> object:
        status, _, body = self._request("GET", path, None, None, token=read_token or self._token)
        if status != 200:
            raise Retryable(f"GET {path}: {status} {_reason(body)}")
        return json.loads(body)

    def _request(self, method: str, path: str, body: bytes | None, content_type: str | None,
                 token: str | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = {}
        if content_type:
            headers["Content-Type"] = content_type
        token = self._token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        for attempt in (1, 2):  # a kept-alive connection the server closed: one fresh retry
            conn = self._connection()
            try:
                conn.request(method, self._prefix + path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
            except (TimeoutError, http.client.HTTPException, OSError) as exc:
                self.close()
                if attempt == 2:
                    raise Retryable(f"bridge at {self._host}:{self._port} unreachable: {exc}") from None
        raise AssertionError("unreachable")


def _reason(body: bytes) -> str:
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            return str(data.get("detail") or data.get("error") or data)
    except (ValueError, UnicodeDecodeError):
        pass
    return body[:200].decode("utf-8", "replace")
