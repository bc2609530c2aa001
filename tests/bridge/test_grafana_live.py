"""Grafana Live output, through an injected HTTP transport (no Grafana server runs here)."""

from __future__ import annotations

import math
import threading

import httpx
import numpy as np

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.grafana_live import GrafanaLivePusher
from curvestream_bridge.settings import BridgeSettings


def _batch(values: list[float]) -> DecodedBatch:
    n = len(values)
    col = ScalarColumn("val/loss, top-1", np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64) + 10**18,
                       np.array(values))
    return DecodedBatch(b"p" * 16, 1, "proj", "run 1", [col], [], [], None, None, 0)


def test_new_points_are_pushed_as_line_protocol_to_the_stream_with_the_token():
    seen: list[httpx.Request] = []
    done = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        done.set()
        return httpx.Response(200)

    settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb", grafana_live_url="http://grafana:3000/",
                              grafana_live_token="glsa_x", grafana_live_stream="training")
    pusher = GrafanaLivePusher(settings, transport=httpx.MockTransport(handler))
    pusher.push([_batch([0.5, math.nan, 1.5])])
    assert done.wait(10)
    pusher.close()
    request = seen[0]
    assert str(request.url) == "http://grafana:3000/api/live/push/training"
    assert request.headers["Authorization"] == "Bearer glsa_x"
    lines = request.content.decode().splitlines()
    assert lines == [
        "curvestream,metric=val/loss\\,\\ top-1,project=proj,run=run\\ 1 value=0.5,step=0i 1000000000000000000",
        "curvestream,metric=val/loss\\,\\ top-1,project=proj,run=run\\ 1 value=1.5,step=2i 1000000000000000002",
    ], "NaN has no line-protocol spelling: left out of live frames, kept in the store"


def test_a_grafana_that_fails_costs_a_counter_not_the_ingest():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb", grafana_live_url="http://127.0.0.1:9")
    pusher = GrafanaLivePusher(settings, transport=httpx.MockTransport(handler))
    for _ in range(200):
        pusher.push([_batch([1.0])])
    pusher.close()
    assert pusher.errors + pusher.dropped >= 1
