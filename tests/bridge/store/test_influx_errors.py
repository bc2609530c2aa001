"""InfluxDB answers some errors inside a 200: a server shutting down or overloaded
makes a batch wait (and retry), never rejects it for good."""

from __future__ import annotations

import json

import httpx
import pytest

from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery, StoreRejected, StoreUnavailable


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


def test_a_write_with_one_failed_chunk_is_not_taken_for_stored_and_its_retry_stores_each_point_once(influxd):
    import gzip

    import numpy as np

    from curvestream_bridge.decode import DecodedBatch, ScalarColumn

    store = open_store(influxd.store_url("half_written"))
    real = httpx.HTTPTransport()
    failing = [True]
    marker = b"run=run step=15000i,"

    class OneChunkFails(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            sent = gzip.decompress(request.read()) if request.url.path == "/write" else b""
            if failing[0] and marker in sent:  # the chunk with raw points 15000..19999 (35000.. later)
                return httpx.Response(503, text='{"error":"overloaded"}')
            return real.handle_request(request)

    db = store._db
    db._write_deadline_s = 0.5
    db.http.close()
    db.http = httpx.Client(base_url=db.base_url, transport=OneChunkFails())
    steps = np.arange(20_000, dtype=np.int64)
    batch = DecodedBatch(b"p" * 16, 1, "proj", "run", [ScalarColumn("loss", steps, 10**18 + steps * 10**6,
                                                                    steps / 7.0)], [], [], None, None, 0)
    try:
        with pytest.raises(StoreUnavailable):
            store.write([batch])  # 20,000 points: four chunks, the other three stored
        assert store.stored_ranges(batch.producer_id) == []  # so the batch is written again, not skipped
        failing[0] = False
        store.write([batch])
        assert store.stored_ranges(batch.producer_id) == [(1, 1)]
        (series,) = db.series('SELECT count("value"), sum("step") FROM "cs_scalar"')
        assert series["values"][0][1:] == [20_000, int(steps.sum())]
        for x in ("step", "time"):  # and the rollup rows the first attempt left are not counted twice
            assert store.series(SeriesQuery("proj", "run", "loss", x, None, None, 100)).total == 20_000
        more = steps + 20_000  # the same on a series whose rollups exist
        second = DecodedBatch(b"p" * 16, 2, "proj", "run", [ScalarColumn("loss", more, 10**18 + more * 10**6,
                                                                         more / 7.0)], [], [], None, None, 0)
        failing[0], marker = True, b"run=run step=35000i,"
        with pytest.raises(StoreUnavailable):
            store.write([second])
        failing[0] = False
        store.write([second])
        for x in ("step", "time"):
            assert store.series(SeriesQuery("proj", "run", "loss", x, None, None, 100)).total == 40_000
    finally:
        store.close()
        real.close()
