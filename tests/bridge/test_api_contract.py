"""Every answer of the HTTP API and every message of the live WebSocket is
exactly its model in ``curvestream_bridge.api.models`` (no field missing, none
extra, each of its type), on both engines; and the OpenAPI document names a
model for every JSON answer and carries the WebSocket's messages."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from curvestream_wire.v1 import batch_pb2, run_pb2

from bridge_client import AppClient, engine_store_url, q, served_bridge
from curvestream_bridge import series_binary
from curvestream_bridge.api import models

READ, WRITE = "read-secret", "write-secret"
R = {"Authorization": f"Bearer {READ}"}
W = {"Authorization": f"Bearer {WRITE}", "Content-Type": "application/x-protobuf"}
T0 = 1_700_000_000_000_000_000
PID = b"\x07" * 16
RUN = ("vision", "lr/0.1 ü")
LIVE_MESSAGE = TypeAdapter(models.LiveMessage)


_seqs = itertools.count(1)


def _batch(project: str, run: str, steps: range = range(0), *, meta: bool = False, state: int = 0,
           extras: bool = False, values: Any = None) -> batch_pb2.Batch:
    b = batch_pb2.Batch(version=1, producer_id=PID, seq=next(_seqs), project=project, run=run, sealed_ns=T0)
    if steps:
        ys = values if values is not None else [math.nan if s == 5 else math.sin(s / 7) for s in steps]
        b.scalars.add(key="loss", steps=steps, wall_ns=[T0 + s * 1_000_000 for s in steps], values=ys)
    if meta:
        b.meta.CopyFrom(run_pb2.RunMeta(version=1, project=project, run=run, config_json='{"lr": 0.1}',
                                        tags=["a"], group="g", started_ns=T0, host="h", pid=7,
                                        python_version="3.11", client_version="0.1.0"))
    if state:
        b.status.CopyFrom(run_pb2.RunStatus(version=1, project=project, run=run, state=state, updated_ns=T0))
    if extras:
        b.histograms.add(key="weights", step=3, wall_ns=T0 + 3, bucket_edges=[0.0, 1.0, math.inf], counts=[3.0, 4.0],
                         min=0.0, max=2.0, sum=7.0, count=7)
        b.texts.add(key="log", step=4, wall_ns=T0 + 4_000_000, text="hello ü", level=20)
    return b


def _ingest(client: AppClient, b: batch_pb2.Batch) -> None:
    resp = client.post("/api/v1/ingest", content=b.SerializeToString(), headers=W)
    assert resp.status_code == 200, resp.text


def _exactly(model: type[BaseModel], resp: Any, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    model.model_validate_json(resp.content)
    return resp.json()


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, AppClient]]:
    parked = tmp_path_factory.mktemp("parked")
    with served_bridge(store=engine_store_url(request, tmp_path_factory, "contract"), read_token=READ,
                       write_token=WRITE, parked_dir=str(parked)) as (bridge, client):
        _ingest(client, _batch(*RUN, range(300), meta=True, extras=True, state=run_pb2.RUN_STATE_FINISHED))
        _ingest(client, _batch("vision", "status only", state=run_pb2.RUN_STATE_RUNNING))
        yield bridge, client


def test_runs_and_metrics_answer_their_models(api):
    _, client = api
    runs = _exactly(models.ApiRunsResponse, client.get("/api/v1/runs", headers=R))["runs"]
    assert {r["run"] for r in runs} == {RUN[1], "status only"}, "a run with meta and one without"
    path = f"/api/v1/runs/{q(RUN[0])}/{q(RUN[1])}"
    metrics = _exactly(models.ApiMetricsResponse, client.get(path + "/metrics", headers=R))["metrics"]
    assert {m["kind"] for m in metrics} == {"scalar", "histogram", "text"}
    many = client.get("/api/v1/metrics", params={"run": [f"{q(RUN[0])}/{q(RUN[1])}", "vision/nowhere"]}, headers=R)
    assert [len(r["metrics"]) for r in _exactly(models.ApiMetricsManyResponse, many)["runs"]] == [3, 0]
    stored = client.get(f"/api/v1/producers/{PID.hex()}/batches", headers=R)
    batches = _exactly(models.ApiProducerBatches, stored)
    assert batches["producer"] == PID.hex() and [b - a for a, b in batches["stored"]] == [1]  # the two ingested
    _exactly(models.ApiError, client.get("/api/v1/runs/vision/nowhere/export", headers=R), 404)


def test_series_histograms_and_texts_answer_their_models(api):
    _, client = api
    path = f"/api/v1/runs/{q(RUN[0])}/{q(RUN[1])}"
    whole = _exactly(models.ApiSeriesResponse, client.get(path + "/series", params={"key": "loss"}, headers=R))
    assert "NaN" in whole["points"]["y"]
    zoom = {"key": "loss", "start": 100, "end": 120, "width": 4}
    zoomed = _exactly(models.ApiSeriesResponse, client.get(path + "/series", params=zoom, headers=R))
    assert zoomed["before"] is not None and zoomed["after"] is not None
    pairs = {"run": [f"{q(RUN[0])}/{q(RUN[1])}", "vision/nowhere"], "key": ["loss"], "width": 50}
    many = _exactly(models.ApiSeriesManyResponse, client.get("/api/v1/series", params=pairs, headers=R))
    assert [s["total"] for s in many["series"]] == [300, 0]
    for url, params, header_model in ((path + "/series", zoom, models.ApiSeriesColumnsHeader),
                                      ("/api/v1/series", pairs, models.ApiSeriesManyColumnsHeader)):
        resp = client.get(url, params=params, headers={**R, "Accept": series_binary.MEDIA_TYPE})
        header, _ = series_binary.decode(resp.content)
        header_model.model_validate(header)
    hist = client.get(path + "/histograms", params={"key": "weights"}, headers=R)
    assert [h["edges"] for h in _exactly(models.ApiHistogramsResponse, hist)["histograms"]] == [[0.0, 1.0, None]]
    texts = client.get(path + "/texts", headers=R)
    assert [t["text"] for t in _exactly(models.ApiTextsResponse, texts)["texts"]] == ["hello ü"]


def test_alerts_parked_batches_and_operations_answer_their_models(api):
    bridge, client = api
    alerts = _exactly(models.ApiAlertsResponse, client.get("/api/v1/alerts", headers=R))["alerts"]
    assert [a["kind"] for a in alerts] == ["nonfinite"]
    payload = _batch("vision", "parked", range(3)).SerializeToString()
    bridge.ingest.parked.park(payload, PID, 10_000, "ValueError: a store that failed", "mqtt")
    parked = _exactly(models.ApiParkedResponse, client.get("/api/v1/parked", headers=R))["parked"]
    assert [p["seq"] for p in parked] == [10_000]
    replay = client.post("/api/v1/parked/replay", headers={"Authorization": f"Bearer {WRITE}"})
    assert _exactly(models.ApiReplayResponse, replay)["replayed"] == 1
    assert _exactly(models.ApiHealth, client.get("/healthz")) == {"ok": True}
    _exactly(models.ApiReadiness, client.get("/readyz"))
    _exactly(models.ApiError, client.get("/api/v1/runs"), 401)
    _exactly(models.ApiError, client.get("/api/v1/runs", headers=W), 403)
    _exactly(models.ApiRefusal, client.post("/api/v1/ingest", content=b"\x00garbage", headers=W), 400)


@pytest.mark.timeout(120)
def test_every_live_message_is_its_model(tmp_path):
    """A subscription's acknowledgement, points, a gap (a frame over 20,000 points of a key), texts, a
    histogram, an alert, a status, a new run and an error, each read as the bridge sends it."""
    wanted = {"subscribed", "points", "gap", "texts", "histogram", "alert", "status", "run", "error"}
    with served_bridge(store=f"duckdb:///{tmp_path}/live.duckdb", read_token=READ, write_token=WRITE) as (_, client):
        with client.websocket_connect("/api/v1/live?token=" + READ) as ws:
            models.LiveSubscribe.model_validate(subscribe := {"subscribe": [{"project": RUN[0], "run": RUN[1]}]})
            ws.send_json(subscribe)
            seen = {LIVE_MESSAGE.validate_json(ws.receive_text()).type}
            assert seen == {"subscribed"}, "the subscription is in place once acknowledged"
            ws.send_text("not json")
            seen.add(LIVE_MESSAGE.validate_json(ws.receive_text()).type)
            assert seen == {"subscribed", "error"}
            _ingest(client, _batch(*RUN, range(20_001), values=[math.nan] + [1.0] * 20_000, extras=True,
                                   state=run_pb2.RUN_STATE_FINISHED))
            while seen != wanted:
                seen.add(LIVE_MESSAGE.validate_json(ws.receive_text()).type)


def test_the_openapi_document_names_a_model_for_every_json_answer(tmp_path):
    with served_bridge(store=f"duckdb:///{tmp_path}/doc.duckdb") as (_, client):
        doc = client.get("/openapi.json").json()
    untyped = [f"{method.upper()} {path} {status}"
               for path, ops in doc["paths"].items() for method, op in ops.items()
               for status, answer in op["responses"].items()
               if "application/json" in answer.get("content", {})
               and "$ref" not in answer["content"]["application/json"]["schema"]]
    assert untyped == []
    schemas = doc["components"]["schemas"]
    assert {"LiveMessage", "LiveSubscribe", "ApiSeriesColumnsHeader", "ApiSeriesManyColumnsHeader"} <= schemas.keys()
    assert {m.__name__ for m in (*models.HTTP_MODELS, *models.LIVE_MODELS)} <= schemas.keys()


def test_the_runs_table_keys_and_groups_answer_their_models(api):
    _, client = api
    table = _exactly(models.ApiRunsTable, client.get("/api/v1/runs/table", params={
        "config_key": "lr", "run": f"{q(RUN[0])}/{q(RUN[1])}"}, headers=R))
    assert [r["run"] for r in table["selected"]] == [RUN[1]]
    keys = _exactly(models.ApiKeys, client.get("/api/v1/keys", params={"run": f"{q(RUN[0])}/{q(RUN[1])}"}, headers=R))
    assert [k["key"] for k in keys["keys"]] == ["loss"]
    asked = {"key": "loss", "group_by": "config:lr", "run": f"{q(RUN[0])}/{q(RUN[1])}", "width": 50}
    groups = _exactly(models.ApiGroups, client.get("/api/v1/groups/series", params=asked, headers=R))
    assert [g["label"] for g in groups["groups"]] == ["lr=0.1"]
    rows = _exactly(models.ApiGroupsTable, client.get("/api/v1/groups/table", params=asked, headers=R))["rows"]
    assert {r["group"] for r in rows} == {"lr=0.1"}
