"""Runs that share a name, as the API serves them (``name`` beside the identity
``run``, the resumes, filters by either), and what the bridge tells a trainer
about its producer (``GET /api/v1/producers/{id}/batches``). A real bridge on DuckDB
and on real InfluxDB 1.6.7, through starlette's TestClient."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from bridge_client import AppClient, engine_store_url, served_bridge

READ = "read-secret"
R = {"Authorization": f"Bearer {READ}"}
T0 = 1_700_000_000_000_000_000
ONE, TWO = b"\x01" * 16, b"\x02" * 16


def _batch(run: str, seq: int, producer: bytes, meta: run_pb2.RunMeta | None = None) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=producer, seq=seq, project="names", run=run, sealed_ns=T0)
    b.scalars.add(key="x", steps=[seq], wall_ns=[T0 + seq], values=[float(seq)])
    if meta is not None:
        b.meta.CopyFrom(meta)
    return b.SerializeToString()


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    with served_bridge(store=engine_store_url(request, tmp_path_factory, "names"), read_token=READ) as (_, client):
        resumed = run_pb2.RunMeta(version=1, project="names", run="exp-aaaaaa", name="exp", started_ns=T0, resumes=[
            run_pb2.Resume(started_ns=T0 + 2_000_000, after_step=99, after_step_known=True),
            run_pb2.Resume(started_ns=T0 + 5_000_000, after_step=149, after_step_known=True, went_back=True,
                           back_to_step=120),
            run_pb2.Resume(started_ns=T0 + 9_000_000)])
        for body in (_batch("exp-aaaaaa", 1, ONE, resumed), _batch("exp-aaaaaa", 2, ONE),
                     _batch("exp-bbbbbb", 1, TWO, run_pb2.RunMeta(version=1, project="names", run="exp-bbbbbb",
                                                                   name="exp", started_ns=T0 + 1)),
                     _batch("old", 5, b"\x03" * 16, run_pb2.RunMeta(version=1, project="names", run="old"))):
            assert client.post("/api/v1/ingest", content=body,
                               headers={"Content-Type": "application/x-protobuf"}).status_code == 200
        yield client


def _runs(api: AppClient, **params: str) -> list[dict]:
    resp = api.get("/api/v1/runs", params={"project": "names", **params}, headers=R)
    assert resp.status_code == 200, resp.text
    return resp.json()["runs"]


def test_runs_of_one_name_are_listed_apart_with_their_name_and_resumes(api):
    assert sorted((r["run"], r["name"]) for r in _runs(api)) == [
        ("exp-aaaaaa", "exp"), ("exp-bbbbbb", "exp"), ("old", "old")]  # a run named by its identity: that name
    assert sorted(r["run"] for r in _runs(api, name="exp")) == ["exp-aaaaaa", "exp-bbbbbb"]
    (one,) = _runs(api, run="exp-aaaaaa")
    assert one["resumes"] == [
        {"started_ms": (T0 + 2_000_000) / 1e6, "after_step": 99, "back_to_step": None},
        {"started_ms": (T0 + 5_000_000) / 1e6, "after_step": 149, "back_to_step": 120},
        {"started_ms": (T0 + 9_000_000) / 1e6, "after_step": None, "back_to_step": None}]  # resumed offline
    assert _runs(api, name="old")[0]["resumes"] == [] and _runs(api, name="nobody") == []


def test_a_producer_is_answered_with_what_is_stored_and_received_and_whether_the_writer_stores(api):
    resp = api.get(f"/api/v1/producers/{ONE.hex()}/batches", headers=R)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["producer"], body["stored"], body["received_last_seq"], body["writing"]) == (ONE.hex(), [[1, 2]],
                                                                                            2, True)
    assert body["received_s_ago"] >= 0
    unknown = api.get(f"/api/v1/producers/{'ab' * 16}/batches", headers=R).json()
    assert (unknown["stored"], unknown["received_last_seq"], unknown["received_s_ago"]) == ([], None, None)
    assert api.get("/api/v1/producers/not-hex/batches", headers=R).status_code == 422
    assert api.get(f"/api/v1/producers/{ONE.hex()}/batches").status_code == 401
