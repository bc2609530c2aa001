"""How the store asks InfluxDB for query answers."""

from __future__ import annotations

import json

import httpx

from curvestream_bridge.store.influx.http import InfluxHTTP


def _recording(seen: list[httpx.Request]) -> InfluxHTTP:
    db = InfluxHTTP("influxdb://127.0.0.1:9/answers")
    db.http.close()
    body = json.dumps({"results": [{"statement_id": 0}, {"statement_id": 1}]})

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text=body)

    db.http = httpx.Client(base_url=db.base_url, transport=httpx.MockTransport(answer))
    db._connected = True
    return db


def test_query_answers_are_asked_for_uncompressed():
    seen: list[httpx.Request] = []
    db = _recording(seen)
    try:
        db.statements(['SELECT "m" FROM "a"', 'SELECT "m" FROM "b"'])
        db.query('SELECT "m" FROM "a"')
        assert [r.headers["accept-encoding"] for r in seen] == ["identity", "identity"]
    finally:
        db.close()
