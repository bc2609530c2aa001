"""``GET /api/v1/runs/table``: the page's filters, sort and paging evaluated on the
bridge, on both engines: each page holds exactly the runs the page's own rules
(``page/runFilter.ts``) pick from the whole list, in the order asked; counts
per value and the filters' choices come with it; ``GET /api/v1/runs`` still
answers every run as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from curvestream_wire.v1 import run_pb2

from bridge_client import AppClient, engine_store_url, q, served_bridge
from curvestream_bridge.api.models import ApiRunsTable
from curvestream_bridge.decode import DecodedBatch, ScalarColumn

T0 = 1_700_000_000_000_000_000
LRS = [0.1, 1e-05, 1.0, 0.001]  # 1e-05 and 1.0: texts JavaScript writes as 0.00001 and 1
N = 40


def _meta(i: int) -> run_pb2.RunMeta:
    return run_pb2.RunMeta(project=("vision", "nlp")[i % 2], run=f"run {i:02d} ü" if i != 7 else "lr/0.1 %2F 50%",
                           config_json=json.dumps({"lr": LRS[i % 4], "seed": i % 3, "opt": ["adam", "sgd"][i % 2]}),
                           tags=[f"t{i % 5}"] + (["baseline"] if i % 7 == 0 else []),
                           group=f"sweep-{i % 6}" if i % 10 else "", started_ns=T0 + (i * 37 % N) * 10**9,
                           host=f"gpu-{i % 4}")


def _fill(store) -> None:
    items = []
    for i in range(N):
        meta = _meta(i)
        steps = np.arange(i + 1, dtype=np.int64)
        col = ScalarColumn("loss", steps, T0 + steps * 10**6, np.ones(i + 1))
        items.append(DecodedBatch(f"t{i}".encode(), 1, meta.project, meta.run, [col], [], [], meta, None, 0))
    store.write(items)
    status = run_pb2.RunStatus(project="vision", run="run 02 ü", state=run_pb2.RUN_STATE_FAILED, reason="oom",
                               updated_ns=T0)
    store.apply_status(status)


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, AppClient]]:
    with served_bridge(store=engine_store_url(request, tmp_path_factory, "runstable")) as (bridge, client):
        _fill(bridge.store)
        yield bridge, client


@pytest.fixture(scope="module")
def api(served: tuple[Any, AppClient]) -> AppClient:
    return served[1]


def test_the_store_reads_the_runs_asked_alone_as_it_reads_them_among_all(served):
    store = served[0].store
    everything = [r.to_json() for r in store.runs()]
    asked = [("nlp", "run 05 ü"), ("vision", "run 02 ü"), ("nlp", "lr/0.1 %2F 50%"), ("nope", "run 05 ü")]
    assert [r.to_json() for r in store.runs(asked)] == [r for r in everything if (r["project"], r["run"]) in asked]
    assert [r.state for r in store.runs([("vision", "run 02 ü")])] == ["failed"]
    assert store.runs([]) == []


def _table(api: AppClient, **params: Any) -> dict[str, Any]:
    resp = api.get("/api/v1/runs/table", params=params)
    assert resp.status_code == 200, resp.text
    ApiRunsTable.model_validate(resp.json())  # the answer is its model (extra fields forbidden)
    return resp.json()


def _text(v: Any) -> str:
    """The page's configValueText for the values of this test."""
    if isinstance(v, str):
        return v
    return {1e-05: "0.00001", 1.0: "1"}.get(v, json.dumps(v))


def _page_rule(runs: list[dict], search: str = "", tag: str = "", group: str = "", cfg: str = "", value: str = "",
               state: str = "") -> list[dict]:
    """What runFilter.ts's matchesRun keeps, newest first (sortRunsNewestFirst)."""
    def keep(r: dict) -> bool:
        cfgs = {k: _text(v) for k, v in r["config"].items()}
        text = "\n".join([r["project"], r["run"], r["state"], r["group"], r["host"], r["git_commit"], *r["tags"],
                          *(f"{k}={v}" for k, v in cfgs.items())]).lower()
        return ((not tag or tag in r["tags"]) and (not group or r["group"] == group)
                and (not state or r["state"] == state)
                and (not cfg or (cfg in cfgs and (not value or cfgs[cfg] == value)))
                and all(w in text for w in search.lower().split()))

    return sorted((r for r in runs if keep(r)), key=lambda r: (-(r["started_ms"] or 0), r["project"], r["run"]))


def _names(rows: list[dict]) -> list[tuple[str, str]]:
    return [(r["project"], r["run"]) for r in rows]


@pytest.mark.parametrize("filters", [{}, {"q": "GPU-1 sweep"}, {"tag": "baseline"}, {"group": "sweep-3"},
                                     {"config_key": "lr", "config_value": "0.00001"}, {"config_key": "lr"},
                                     {"config_key": "lr", "config_value": "1"}, {"state": "failed"},
                                     {"q": "lr=0.1 ü", "tag": "t1"}])
def test_each_page_holds_the_runs_the_pages_own_rules_pick_newest_first(api, filters):
    everything = api.get("/api/v1/runs").json()["runs"]
    assert len(everything) == N, "the runs list still answers every run"
    rename = {"q": "search", "config_key": "cfg", "config_value": "value"}
    expected = _names(_page_rule(everything, **{rename.get(k, k): v for k, v in filters.items()}))
    assert expected or filters == {"state": "failed"}
    got: list[tuple[str, str]] = []
    for offset in range(0, N, 7):
        page = _table(api, offset=offset, limit=7, **filters)
        assert (page["total"], page["matched"], page["offset"]) == (N, len(expected), offset)
        assert len(page["runs"]) <= 7
        got += _names(page["runs"])
    assert got == expected


def test_a_sort_orders_every_run_and_ties_go_by_project_and_run(api):
    everything = api.get("/api/v1/runs").json()["runs"]
    by_points = _table(api, sort="-points", limit=N)["runs"]
    assert _names(by_points) == _names(sorted(everything, key=lambda r: (-r["points"], r["project"], r["run"])))
    by_name = _table(api, sort="run", limit=N)["runs"]
    assert [r["run"] for r in by_name][:3] == ["lr/0.1 %2F 50%", "run 00 ü", "run 01 ü"]
    by_group = _names(_table(api, sort="group", limit=N)["runs"])
    assert by_group[:4] == sorted((r["project"], r["run"]) for r in everything if r["group"] == "")
    by_state = _names(_table(api, sort="-state", limit=N)["runs"])
    assert by_state[-1] == ("vision", "run 02 ü"), "unknown before failed, descending"
    assert by_state[:-1] == sorted(by_state[:-1], key=lambda pr: (pr[0], pr[1])), "ties by project and run"
    assert api.get("/api/v1/runs/table", params={"sort": "colour"}).status_code == 422


def test_rows_carry_what_the_runs_list_says_of_them_and_the_selected_runs_come_wherever_they_are(api):
    everything = {(r["project"], r["run"]): r for r in api.get("/api/v1/runs").json()["runs"]}
    page = _table(api, limit=3, run=[f"{q('nlp')}/{q('lr/0.1 %2F 50%')}", f"{q('nlp')}/{q('run 01 ü')}",
                                     "nlp/nowhere"])
    for row in page["runs"] + page["selected"]:
        assert row == everything[(row["project"], row["run"])]
    assert _names(page["selected"]) == [("nlp", "lr/0.1 %2F 50%"), ("nlp", "run 01 ü")]
    assert page["selected_hidden"] == 0, "a run on another page is not hidden by the filters"
    hiding = _table(api, q="run 01", run=[f"{q('nlp')}/{q('lr/0.1 %2F 50%')}", f"{q('nlp')}/{q('run 01 ü')}"])
    assert hiding["selected_hidden"] == 1
    failed = _table(api, state="failed")["runs"]
    assert [(r["run"], r["state"], r["reason"]) for r in failed] == [("run 02 ü", "failed", "oom")]


def test_counts_per_value_and_the_filters_choices_come_with_every_page(api):
    page = _table(api, limit=0, config_key="lr", count_by="config:lr")
    assert page["runs"] == [] and page["matched"] == N
    assert {c["value"]: c["runs"] for c in page["counts"]} == {"0.1": 10, "0.00001": 10, "1": 10, "0.001": 10}
    assert page["facets"]["config_values"] == ["0.00001", "0.001", "0.1", "1"]
    assert page["facets"]["config_keys"] == ["lr", "opt", "seed"]
    assert page["facets"]["tags"] == ["baseline", "t0", "t1", "t2", "t3", "t4"]
    assert page["facets"]["groups"] == [f"sweep-{i}" for i in range(6)]
    by_group = {c["value"]: c["runs"] for c in _table(api, limit=0, q="vision")["counts"]}
    everything = api.get("/api/v1/runs").json()["runs"]
    vision = _page_rule(everything, search="vision")
    assert by_group == {g or None: sum((r["group"] or None) == (g or None) for r in vision)
                        for g in {r["group"] for r in vision}}
    only_nlp = _table(api, project="nlp", limit=0)
    assert (only_nlp["total"], only_nlp["matched"]) == (N // 2, N // 2)


def test_bad_queries_are_refused_with_the_reason(api):
    assert api.get("/api/v1/runs/table", params={"count_by": "colour"}).status_code == 422
    assert api.get("/api/v1/runs/table", params={"run": "no-slash"}).status_code == 422
    assert api.get("/api/v1/runs/table", params={"limit": -1}).status_code == 422
