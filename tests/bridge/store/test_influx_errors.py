"""InfluxDB answers some errors inside a 200: a server shutting down or overloaded
makes a batch wait (and retry), never rejects it for good."""

from __future__ import annotations

import json

import httpx
import pytest

from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import StoreRejected, StoreUnavailable


def _answering(store, error: str) -> None:
    db = store._db
    db.http.close()
    body = json.dumps({"results": [{"statement_id": 0, "error": error}]})
    db.http = httpx.Client(base_url=db.base_url,
                           transport=httpx.MockTransport(lambda request: httpx.Response(200, text=body)))


@pytest.mark.parametrize("error", ["query engine shutdown", "query interrupted", "timeout",
                                   "max-concurrent-queries limit exceeded(20, 20)"])
def test_a_server_side_error_makes_the_write_wait(influxd, error):
    store = open_store(influxd.store_url("errors"))
    try:
        _answering(store, error)
        with pytest.raises(StoreUnavailable):
            store._db.statements(['SELECT "bs" FROM "cs_rollup_plan"'])
        with pytest.raises(StoreUnavailable):  # the lookup of stored batches (dedupe) waits too
            store.stored_ranges(b"producer")
    finally:
        store.close()


def test_an_error_of_the_statement_is_not_retried(influxd):
    store = open_store(influxd.store_url("errors"))
    try:
        _answering(store, "error parsing query: found EOF, expected FROM at line 1, char 9")
        with pytest.raises(RuntimeError) as err:
            store._db.statements(["SELECT x"])
        assert not isinstance(err.value, StoreUnavailable)
    finally:
        store.close()


def _writer_answering(status: int, text: str):
    from curvestream_bridge.store.influx.http import InfluxHTTP

    db = InfluxHTTP("influxdb://127.0.0.1:9/errors", write_deadline_s=0.5)
    db.http.close()
    db.http = httpx.Client(base_url=db.base_url,
                           transport=httpx.MockTransport(lambda request: httpx.Response(status, text=text)))
    return db


@pytest.mark.parametrize("status, text", [
    (400, '{"error":"partial write: field type conflict: input field \\"v\\" is type integer"}'),
    (400, '{"error":"unable to parse \'m v=\': missing field value"}'),
    (413, '{"error":"Request Entity Too Large"}'),
])
def test_lines_influxdb_refuses_are_rejected_for_good(status, text):
    db = _writer_answering(status, text)
    try:
        with pytest.raises(StoreRejected):
            db.write(["m v=1 1"])
    finally:
        db.close()


@pytest.mark.parametrize("status", [401, 403, 404, 429, 500, 503])
def test_wrong_credentials_a_missing_database_or_an_overloaded_server_make_the_write_wait(status):
    db = _writer_answering(status, '{"error":"nope"}')
    try:
        with pytest.raises(StoreUnavailable):
            db.write(["m v=1 1"])
    finally:
        db.close()


def test_an_answer_nobody_foresaw_is_neither_retried_nor_a_rejection():
    db = _writer_answering(418, "I'm a teapot")
    try:
        with pytest.raises(RuntimeError):
            db.write(["m v=1 1"])
    finally:
        db.close()
