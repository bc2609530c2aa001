"""The bridge's HTTP API on a real DuckDB store, through starlette's TestClient:
runs and their filters, metrics, series, histograms, texts, ingest, tokens and
the operational endpoints."""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Iterator

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from bridge_client import AppClient, served_bridge
from curvestream_bridge.metrics import REJECTED
from curvestream_bridge.service import Bridge
from curvestream_bridge.settings import BridgeSettings

READ, WRITE = "read-secret", "write-secret"
R = {"Authorization": f"Bearer {READ}"}
W = {"Authorization": f"Bearer {WRITE}", "Content-Type": "application/x-protobuf"}
MAX_PAYLOAD = 1_000_000
N = 5000
T0 = 1_700_000_000_000_000_000
HOSTILE = "lr/0.01 %2F 100% ü"  # a slash, an encoded-looking slash and a percent sign inside a run name


def _path(project: str, run: str, leaf: str) -> str:
    def q(s):
        return urllib.parse.quote(s, safe="")  # encodeURIComponent
    return f"/api/v1/runs/{q(project)}/{q(run)}/{leaf}"


def _value(step: int) -> float:
    return {2345: 100.0, 3456: -100.0, 10: math.nan, 11: math.inf, 12: -math.inf}.get(step, math.sin(step / 50))


_seqs = iter(range(1, 1_000_000))


def _batch(project: str, run: str, *, meta: dict | None = None, state: int = 0, steps: range = range(0),
           pid: bytes = b"\x05" * 16) -> batch_pb2.Batch:
    b = batch_pb2.Batch(version=1, producer_id=pid, seq=next(_seqs), project=project, run=run, sealed_ns=T0)
    if steps:
        b.scalars.add(key="train/loss", steps=steps, wall_ns=[T0 + s * 1_000_000 for s in steps],
                      values=[_value(s) for s in steps])
    if meta is not None:
        b.meta.CopyFrom(run_pb2.RunMeta(version=1, project=project, run=run, config_json=json.dumps(meta["config"]),
                                        tags=meta.get("tags", []), group=meta.get("group", ""), started_ns=T0))
    if state:
        b.status.CopyFrom(run_pb2.RunStatus(version=1, project=project, run=run, state=state, updated_ns=T0,
                                            reason="ValueError: boom" if state == run_pb2.RUN_STATE_FAILED else ""))
    return b


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    tmp = tmp_path_factory.mktemp("api")
    with served_bridge(store=f"duckdb:///{tmp}/store.duckdb", read_token=READ, write_token=WRITE,
                       dead_letter_path=f"{tmp}/dead.bin", max_payload_bytes=MAX_PAYLOAD) as (bridge, client):
        client.bridge = bridge  # type: ignore[attr-defined]
        baseline = _batch("vision", "baseline", steps=range(N), state=run_pb2.RUN_STATE_FINISHED,
                          meta={"config": {"lr": 0.1, "opt": {"name": "adam"}}, "tags": ["baseline", "a"],
                                "group": "sweep-1"})
        baseline.histograms.add(key="weights/w1", step=7, wall_ns=T0 + 7, bucket_edges=[0.0, 1.0, 2.0],
                                counts=[3.0, 4.0], min=0.0, max=2.0, sum=7.0, count=7)
        for i, line in enumerate(["first line", "second line", "third line"]):
            baseline.texts.add(key="log", step=i, wall_ns=T0 + 1_000_000 * i, text=line, level=20)
        for b in (baseline,
                  _batch("vision", HOSTILE, steps=range(3), state=run_pb2.RUN_STATE_RUNNING,
                         meta={"config": {"lr": 0.01}, "tags": ["b"], "group": "sweep-1"}),
                  _batch("nlp", "r1", steps=range(2), state=run_pb2.RUN_STATE_FAILED,
                         meta={"config": {"lr": 0.1, "name": "bert", "amp": True}, "group": "sweep-2"})):
            assert client.post("/api/v1/ingest", content=b.SerializeToString(), headers=W).status_code == 200
        yield client


def _runs(api: AppClient, **params: str) -> set[tuple[str, str]]:
    resp = api.get("/api/v1/runs", params=params, headers=R)
    assert resp.status_code == 200, resp.text
    return {(r["project"], r["run"]) for r in resp.json()["runs"]}


def _series(api: AppClient, run: str = "baseline", **params: object) -> dict:
    resp = api.get(_path("vision", run, "series"), params={"key": "train/loss", **params}, headers=R)
    assert resp.status_code == 200, resp.text
    return resp.json()


# ---------------------------------------------------------------- runs


def test_the_runs_list_describes_each_run(api):
    runs = {(r["project"], r["run"]): r for r in api.get("/api/v1/runs", headers=R).json()["runs"]}
    assert set(runs) == {("vision", "baseline"), ("vision", HOSTILE), ("nlp", "r1")}
    base = runs[("vision", "baseline")]
    assert (base["state"], base["tags"], base["group"], base["points"]) == ("finished", ["baseline", "a"], "sweep-1", N)
    assert base["config"] == {"lr": 0.1, "opt": {"name": "adam"}} and base["started_ms"] == T0 / 1e6
    assert (runs[("nlp", "r1")]["state"], runs[("nlp", "r1")]["reason"]) == ("failed", "ValueError: boom")


@pytest.mark.parametrize("params, expected", [
    ({"project": "vision"}, {("vision", "baseline"), ("vision", HOSTILE)}),
    ({"tag": "baseline"}, {("vision", "baseline")}),
    ({"group": "sweep-1"}, {("vision", "baseline"), ("vision", HOSTILE)}),
    ({"state": "failed"}, {("nlp", "r1")}),
    ({"state": "running"}, {("vision", HOSTILE)}),
    ({"config.lr": "0.1"}, {("vision", "baseline"), ("nlp", "r1")}),
    ({"config.opt.name": "adam"}, {("vision", "baseline")}),
    ({"config.name": "bert"}, {("nlp", "r1")}),
    ({"config.amp": "true"}, {("nlp", "r1")}),  # compared as JSON text
    ({"config.lr": "0.1", "project": "vision"}, {("vision", "baseline")}),
    ({"config.missing": "1"}, set()),
    ({"project": "nowhere"}, set()),
])
def test_run_filters_combine_with_and(api, params, expected):
    assert _runs(api, **params) == expected


# ---------------------------------------------------------------- metrics, histograms, texts


def test_the_metrics_of_a_run_name_each_key_with_its_kind_and_extent(api):
    resp = api.get(_path("vision", "baseline", "metrics"), headers=R).json()
    by_key = {m["key"]: m for m in resp["metrics"]}
    assert (resp["project"], resp["run"]) == ("vision", "baseline")
    assert {k: m["kind"] for k, m in by_key.items()} == {"train/loss": "scalar", "weights/w1": "histogram",
                                                         "log": "text"}
    loss = by_key["train/loss"]
    assert (loss["count"], loss["first_step"], loss["last_step"]) == (N, 0, N - 1)
    assert loss["last_value"] == pytest.approx(math.sin((N - 1) / 50))


def test_a_run_name_holding_slashes_and_percent_signs_is_addressed_by_its_encoded_path(api):
    resp = api.get(_path("vision", HOSTILE, "metrics"), headers=R)
    assert resp.status_code == 200, resp.text
    assert resp.json()["run"] == HOSTILE
    assert [(m["key"], m["count"]) for m in resp.json()["metrics"]] == [("train/loss", 3)]
    assert _series(api, HOSTILE)["points"]["step"] == [0, 1, 2]


def test_a_run_that_does_not_exist_has_no_metrics(api):
    assert api.get(_path("vision", "baseline/extra", "metrics"), headers=R).json()["metrics"] == []


def test_histograms_come_with_their_buckets(api):
    resp = api.get(_path("vision", "baseline", "histograms"), params={"key": "weights/w1"}, headers=R).json()
    (h,) = resp["histograms"]
    assert (h["step"], h["edges"], h["counts"], h["count"]) == (7, [0.0, 1.0, 2.0], [3.0, 4.0], 7)


def test_texts_come_oldest_first_and_after_ms_keeps_only_newer_lines(api):
    path = _path("vision", "baseline", "texts")
    lines = api.get(path, params={"key": "log"}, headers=R).json()["texts"]
    assert [t["text"] for t in lines] == ["first line", "second line", "third line"]
    assert lines[0]["level"] == 20 and lines[0]["step"] == 0
    newer = api.get(path, params={"key": "log", "after_ms": lines[0]["time_ms"]}, headers=R).json()["texts"]
    assert [t["text"] for t in newer] == ["second line", "third line"]
    assert [t["text"] for t in api.get(path, params={"limit": 1}, headers=R).json()["texts"]] == ["third line"]


# ---------------------------------------------------------------- series


def test_a_range_holding_fewer_points_than_four_per_pixel_comes_raw_with_its_neighbours(api):
    ans = _series(api, start=100, end=199, width=1000)
    assert ans["raw"] is True and ans["total"] == 100
    assert ans["points"]["step"] == list(range(100, 200))
    assert ans["points"]["y"][0] == pytest.approx(math.sin(100 / 50))
    assert (ans["before"]["step"], ans["after"]["step"]) == (99, 200)


def test_a_wide_range_is_reduced_to_at_most_four_points_per_pixel_keeping_the_extremes(api):
    ans = _series(api, width=100)
    assert ans["raw"] is False and ans["total"] == N
    assert len(ans["points"]["step"]) <= 400
    ys = dict(zip(ans["points"]["step"], ans["points"]["y"]))
    assert ys[2345] == 100.0 and ys[3456] == -100.0
    assert ans["points"]["step"][0] == 0 and ans["points"]["step"][-1] == N - 1
    assert _series(api, width=2000)["raw"] is True, "8000 points a view this wide can show: all of them"


def test_non_finite_values_arrive_as_strings(api):
    ys = _series(api, start=10, end=12)["points"]["y"]
    assert ys == ["NaN", "Infinity", "-Infinity"]


def test_x_time_ranges_are_in_milliseconds_since_the_epoch(api):
    start_ms = (T0 + 300 * 1_000_000) / 1e6
    ans = _series(api, x="time", start=start_ms, end=start_ms + 4)
    assert ans["points"]["step"] == [300, 301, 302, 303, 304]
    assert ans["points"]["x"][0] == start_ms


@pytest.mark.parametrize("params", [{"width": 0}, {"width": 20001}, {"start": 10, "end": 9}, {"x": "epoch"}])
def test_a_bad_series_query_is_refused_with_422(api, params):
    resp = api.get(_path("vision", "baseline", "series"), params={"key": "train/loss", **params}, headers=R)
    assert resp.status_code == 422


def test_the_widest_allowed_view_is_accepted(api):
    assert _series(api, width=20000)["width"] == 20000


def test_a_series_request_without_a_key_is_refused(api):
    assert api.get(_path("vision", "baseline", "series"), headers=R).status_code == 422


def test_several_runs_and_keys_come_in_one_overlay_request(api):
    def q(s):
        return urllib.parse.quote(s, safe="")
    resp = api.get("/api/v1/series", params=[("run", f"vision/{q(HOSTILE)}"), ("run", "nlp/r1"),
                                              ("key", "train/loss")], headers=R)
    assert resp.status_code == 200, resp.text
    assert [(s["run"], s["total"]) for s in resp.json()["series"]] == [(HOSTILE, 3), ("r1", 2)]


# ---------------------------------------------------------------- ingest


def test_an_ingested_batch_is_answered_with_its_commit_and_then_readable(api):
    b = _batch("ingest", "fresh", steps=range(5), pid=b"\x09" * 16)
    resp = api.post("/api/v1/ingest", content=b.SerializeToString(), headers=W)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/x-protobuf"
    commit = run_pb2.Commit.FromString(resp.content)
    assert commit.producer_id == b"\x09" * 16 and [(r.first, r.last) for r in commit.stored] == [(b.seq, b.seq)]
    assert api.get(_path("ingest", "fresh", "series"), params={"key": "train/loss"}, headers=R).json()["total"] == 5
    again = api.post("/api/v1/ingest", content=b.SerializeToString(), headers=W)
    assert run_pb2.Commit.FromString(again.content).stored[0].first == b.seq, "a re-send is committed again"
    assert api.get(_path("ingest", "fresh", "series"), params={"key": "train/loss"}, headers=R).json()["total"] == 5


@pytest.mark.parametrize("body, reason", [
    (b"\xff\xfe not protobuf", "undecodable"),
    (batch_pb2.Batch(version=9, producer_id=b"p", seq=1, project="p", run="r").SerializeToString(), "unknown_version"),
    (batch_pb2.Batch(version=1, producer_id=b"p", seq=1, project="", run="r").SerializeToString(), "bad_name"),
])
def test_a_malformed_batch_is_refused_with_400_and_its_reason(api, body, reason):
    resp = api.post("/api/v1/ingest", content=body, headers=W)
    assert resp.status_code == 400
    assert resp.json()["reason"] == reason and resp.json()["detail"]


def test_a_body_over_the_payload_limit_is_refused_with_413_and_counted(api):
    before = api.bridge.metrics.get(REJECTED, reason="oversized")
    resp = api.post("/api/v1/ingest", content=b"\x00" * (MAX_PAYLOAD + 1), headers=W)
    assert resp.status_code == 413
    assert api.bridge.metrics.get(REJECTED, reason="oversized") == before + 1


# ---------------------------------------------------------------- tokens


@pytest.mark.parametrize("method, path", [("GET", "/api/v1/runs"), ("GET", _path("vision", "baseline", "metrics")),
                                          ("POST", "/api/v1/ingest")])
def test_a_request_without_a_token_gets_401_and_with_a_wrong_one_403(api, method, path):
    missing = api.request(method, path)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert api.request(method, path, headers={"Authorization": "Bearer nope"}).status_code == 403


def test_the_read_token_does_not_allow_writes_nor_the_write_token_reads(api):
    assert api.post("/api/v1/ingest", content=b"x", headers=R).status_code == 403
    assert api.get("/api/v1/runs", headers={"Authorization": f"Bearer {WRITE}"}).status_code == 403


def test_the_token_may_travel_in_the_query_string(api):
    assert api.get("/api/v1/runs", params={"token": READ}).status_code == 200
    assert api.get("/api/v1/runs", params={"token": "nope"}).status_code == 403


def test_an_open_bridge_needs_no_token(tmp_path):
    with served_bridge(store=f"duckdb:///{tmp_path}/open.duckdb") as (_, client):
        assert client.get("/api/v1/runs").json() == {"runs": []}


# ---------------------------------------------------------------- operations


def test_healthz_answers_while_the_process_lives(api):
    assert api.get("/healthz").json() == {"ok": True}


def test_readyz_is_ready_with_a_reachable_store_and_no_broker_to_wait_for(api):
    resp = api.get("/readyz")
    assert resp.status_code == 200
    assert (resp.json()["store"], resp.json()["mqtt"], resp.json()["ingest_healthy"]) == (True, True, True)


def test_readyz_is_503_while_the_broker_is_not_connected(tmp_path):
    bridge = Bridge(BridgeSettings(store=f"duckdb:///{tmp_path}/b.duckdb", mqtt_url="mqtt://127.0.0.1:1",
                                   mqtt_client_id="api-test-unready"))
    try:
        with AppClient(bridge.app) as client:
            resp = client.get("/readyz")
        assert resp.status_code == 503 and resp.json()["mqtt"] is False and resp.json()["store"] is True
    finally:
        bridge.stop()


def test_readyz_is_503_when_the_store_is_gone(tmp_path):
    bridge = Bridge(BridgeSettings(store=f"duckdb:///{tmp_path}/gone.duckdb", mqtt_url=""))
    with AppClient(bridge.app) as client:
        bridge.store.close()
        resp = client.get("/readyz")
    assert resp.status_code == 503 and resp.json()["store"] is False


def test_metrics_are_prometheus_text_with_the_ingest_counters(api):
    api.post("/api/v1/ingest", content=b"\xff junk", headers=W)
    resp = api.get("/metrics")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = resp.text.splitlines()
    assert "# TYPE curvestream_points_ingested_total counter" in lines
    values = {line.rpartition(" ")[0]: float(line.rpartition(" ")[2]) for line in lines if not line.startswith("#")}
    assert values["curvestream_points_ingested_total"] >= (N + 1 + 3) + 3 + 2  # what the fixture posted
    assert values['curvestream_rejected_total{reason="undecodable"}'] >= 1
    assert values["curvestream_ingest_queue_depth"] == 0
