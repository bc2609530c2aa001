"""Renaming, tagging and deleting runs through the HTTP API, on both engines: a
renamed run keeps its identity and its curves; a deleted run is gone from the
runs list, every series endpoint, the export and the alerts list, its later
batches are refused, and the other run is untouched. Writes need the write token."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from bridge_client import AppClient, engine_store_url, q, served_bridge
from curvestream_bridge.api import models
from servers import wait_until

READ, WRITE = "read-secret", "write-secret"
R = {"Authorization": f"Bearer {READ}"}
W = {"Authorization": f"Bearer {WRITE}"}
T0 = 1_700_000_000_000_000_000
DOOMED, KEPT = ("vision", "typo run/1 ü"), ("vision", "kept")
_seqs = itertools.count(1)


def _batch(project: str, run: str, steps: range, state: int = 0) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=run.encode()[:16].ljust(16, b"-"), seq=next(_seqs), project=project,
                        run=run, sealed_ns=T0)
    b.scalars.add(key="loss", steps=steps, wall_ns=[T0 + s * 1_000_000 for s in steps],
                  values=[math.nan if s == 5 else 1.0 / (s + 1) for s in steps])
    b.histograms.add(key="weights", step=3, wall_ns=T0 + 3, bucket_edges=[0.0, 1.0], counts=[2.0], min=0.0, max=1.0,
                     sum=1.0, count=2)
    b.texts.add(key="log", step=4, wall_ns=T0 + 4_000_000, text="hello", level=20)
    b.meta.CopyFrom(run_pb2.RunMeta(version=1, project=project, run=run, name="typo", tags=["a", "b"], notes="n0"))
    if state:
        b.status.CopyFrom(run_pb2.RunStatus(version=1, project=project, run=run, state=state, updated_ns=T0))
    return b.SerializeToString()


@pytest.fixture(params=["duckdb", "influxdb"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    with served_bridge(store=engine_store_url(request, tmp_path_factory, "lifecycle"), read_token=READ,
                       write_token=WRITE) as (_, c):
        for run in (DOOMED, KEPT):
            resp = c.post("/api/v1/ingest", content=_batch(*run, range(2000), run_pb2.RUN_STATE_RUNNING),
                          headers={**W, "Content-Type": "application/x-protobuf"})
            assert resp.status_code == 200, resp.text
        yield c


def _runs(c: AppClient) -> dict[str, dict[str, Any]]:
    return {r["run"]: r for r in c.get("/api/v1/runs", headers=R).json()["runs"]}


def _table(c: AppClient, project: str) -> dict[str, dict[str, Any]]:
    """The page's runs table (its snapshot of the runs is kept between requests)."""
    return {r["run"]: r for r in c.get("/api/v1/runs/table", params={"project": project}, headers=R).json()["runs"]}


def _reads(c: AppClient, run: tuple[str, str]) -> dict[str, Any]:
    """What every read endpoint has of a run."""
    path = f"/api/v1/runs/{q(run[0])}/{q(run[1])}"
    series = c.get(path + "/series", params={"key": "loss", "width": 100}, headers=R).json()
    many = c.get("/api/v1/series", params={"run": f"{q(run[0])}/{q(run[1])}", "key": "loss", "width": 100},
                 headers=R).json()
    export = c.get(path + "/export", params={"format": "binary"}, headers=R)
    return {"listed": run[1] in _runs(c), "table": run[1] in _table(c, run[0]),
            "metrics": len(c.get(path + "/metrics", headers=R).json()["metrics"]),
            "keys": c.get("/api/v1/keys", params={"run": f"{q(run[0])}/{q(run[1])}"}, headers=R).json()["total"],
            "series": series["total"], "series_many": many["series"][0]["total"],
            "histograms": len(c.get(path + "/histograms", params={"key": "weights"}, headers=R).json()["histograms"]),
            "texts": len(c.get(path + "/texts", headers=R).json()["texts"]),
            "export": export.status_code,
            "alerts": len(c.get("/api/v1/alerts", params={"project": run[0], "run": run[1]}, headers=R)
                          .json()["alerts"])}


def test_a_renamed_and_retagged_run_keeps_its_identity_and_curves(client):
    path = f"/api/v1/runs/{q(DOOMED[0])}/{q(DOOMED[1])}"
    before = client.get(path + "/series", params={"key": "loss", "width": 100}, headers=R).json()
    assert _table(client, DOOMED[0])[DOOMED[1]]["name"] == "typo"
    assert client.patch(path, json={"name": "fixed"}, headers=R).status_code == 403  # the write token
    resp = client.patch(path, json={"name": "fixed", "add_tags": ["best"], "remove_tags": ["a"],
                                    "notes": "the typo is gone"}, headers=W)
    edited = models.ApiRunEdited.model_validate_json(resp.content)
    assert (edited.run, edited.name, edited.tags, edited.notes) == (DOOMED[1], "fixed", ["b", "best"],
                                                                     "the typo is gone")
    resp = client.patch(path, json={"tags": ["x"]}, headers=W)  # the other fields stay as edited
    assert resp.json() == {"project": DOOMED[0], "run": DOOMED[1], "name": "fixed", "tags": ["x"],
                           "notes": "the typo is gone"}
    record = _runs(client)[DOOMED[1]]
    assert (record["name"], record["tags"], record["notes"]) == ("fixed", ["x"], "the typo is gone")
    assert (_table(client, DOOMED[0])[DOOMED[1]]["name"], _table(client, DOOMED[0])[DOOMED[1]]["tags"]) == \
        ("fixed", ["x"])
    assert [r["run"] for r in client.get("/api/v1/runs", params={"name": "fixed"}, headers=R).json()["runs"]] == \
        [DOOMED[1]]
    assert client.get(path + "/series", params={"key": "loss", "width": 100}, headers=R).json() == before
    assert client.patch("/api/v1/runs/vision/nowhere", json={"name": "x"}, headers=W).status_code == 404
    assert client.patch(path, json={"name": ""}, headers=W).status_code == 422


def test_a_deleted_run_is_gone_from_every_read_and_stays_gone(client):
    wait_until(lambda: _reads(client, DOOMED)["alerts"] and _reads(client, KEPT)["alerts"], 30, "the NaN alerts")
    kept = _reads(client, KEPT)
    assert _reads(client, DOOMED) == kept == {"listed": True, "table": True, "metrics": 3, "keys": 1, "series": 2000,
                                             "series_many": 2000, "histograms": 1, "texts": 1, "export": 200,
                                             "alerts": kept["alerts"]}
    path = f"/api/v1/runs/{q(DOOMED[0])}/{q(DOOMED[1])}"
    assert client.delete(path, headers=R).status_code == 403
    resp = client.delete(path, headers=W)
    assert models.ApiRunDeleted.model_validate_json(resp.content).deleted
    gone = {"listed": False, "table": False, "metrics": 0, "keys": 0, "series": 0, "series_many": 0, "histograms": 0,
            "texts": 0, "export": 404, "alerts": 0}
    assert _reads(client, DOOMED) == gone
    assert _reads(client, KEPT) == kept
    assert client.delete(path, headers=W).status_code == 404

    # a batch the trainer still sends (or sends again) is refused, and the run does not come back
    late = client.post("/api/v1/ingest", content=_batch(*DOOMED, range(2000, 2100), run_pb2.RUN_STATE_FINISHED),
                       headers={**W, "Content-Type": "application/x-protobuf"})
    assert late.status_code == 400 and "deleted" in late.text
    assert _reads(client, DOOMED) == gone
    assert 'curvestream_rejected_total{reason="run_deleted"} 1' in client.get("/metrics").text
