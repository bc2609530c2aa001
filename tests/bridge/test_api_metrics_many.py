"""``GET /api/v1/metrics`` (several runs' metrics in one request, read from the
store together) answers each run exactly as ``GET /api/v1/runs/{p}/{r}/metrics``
does, on both engines: hostile names, NaN and ±Inf last values, missing runs,
a run listed twice, in the order asked."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from bridge_client import AppClient, q, served_engine

sys.path.insert(0, str(pathlib.Path(__file__).parent / "store"))
from test_store_support import batches, curve, write_all

# (project, run, keys): runs sharing a key, runs with keys of their own, hostile names
RUNS = [("vision", "long", ["loss", "acc"]),
        ("vision", "lr/0.01 %2F 100% 😀", ["loss", 'grad/norm "clipped", a=b ü']),
        ("nlp", "short", ["loss"]), ("a,b c=d", "'; DROP TABLE series; --\nline", ["loss", "x y"])]
MISSING = [("vision", "nowhere"), ("nowhere", "long")]


def _fill(store) -> None:
    rng = np.random.default_rng(5)
    for r, (project, run, keys) in enumerate(RUNS):
        for k, key in enumerate(keys):
            points = curve(rng, 300 + 100 * r)  # NaN and ±Inf among the values, maybe the last one
            write_all(store, batches(points, [100, 200], key=key, project=project, run=run,
                                     producer=f"m{r}-{k}".encode()))


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    with served_engine(request, tmp_path_factory, "metricsmany", _fill) as client:
        yield client


def _many(api: AppClient, runs: list[tuple[str, str]]) -> list[dict]:
    resp = api.get("/api/v1/metrics", params=[("run", f"{q(p)}/{q(r)}") for p, r in runs])
    assert resp.status_code == 200, resp.text
    return resp.json()["runs"]


def _single(api: AppClient, project: str, run: str) -> dict:
    resp = api.get(f"/api/v1/runs/{q(project)}/{q(run)}/metrics")
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_each_run_of_the_many_metrics_answer_is_the_single_run_answer(api):
    runs = [(p, r) for p, r, _ in RUNS] + MISSING
    many = _many(api, runs)
    assert [(m["project"], m["run"]) for m in many] == runs
    for got in many:
        # JSON text compared: a NaN last value is the string "NaN" in both
        assert got == _single(api, got["project"], got["run"]), (got["project"], got["run"])
    keys = {(m["project"], m["run"]): sorted(x["key"] for x in m["metrics"]) for m in many}
    for project, run, logged in RUNS:
        assert keys[(project, run)] == sorted(logged)
    assert all(keys[pair] == [] for pair in MISSING)


def test_a_run_listed_twice_is_answered_twice_in_the_order_asked(api):
    many = _many(api, [("nlp", "short"), ("vision", "long"), ("nlp", "short")])
    assert [m["run"] for m in many] == ["short", "long", "short"]
    assert many[0] == many[2] == _single(api, "nlp", "short")


def test_a_run_not_named_project_slash_run_or_no_run_at_all_is_refused(api):
    assert api.get("/api/v1/metrics", params={"run": "no-slash"}).status_code == 422
    assert api.get("/api/v1/metrics").status_code == 422
