"""``GET /api/v1/keys``: the scalar keys of some runs in sections by prefix, in
natural order, searched (words, glob, regular expression) and paged on the
bridge, on both engines; the pages put together are the whole list, and each
key names the runs that logged it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import numpy as np
import pytest

from curvestream_wire.v1 import batch_pb2

from bridge_client import AppClient, q, served_bridge, served_engine
from curvestream_bridge.api.models import ApiKeys
from curvestream_bridge.decode import DecodedBatch, ScalarColumn

T0 = 1_700_000_000_000_000_000
LAYERS = 12
STATS = ["w/mean", "w/std", 'grad "norm", ü']
# run -> its keys: a run with sections, a second sharing some of them, a third with none in common
KEYS = {
    "big": ["loss", "lr"] + [f"layer.{i}/{s}" for i in range(LAYERS) for s in STATS],
    "half": ["loss"] + [f"layer.{i}/{s}" for i in range(0, LAYERS, 2) for s in STATS] + ["eval/acc"],
    "other ü": ["/leading slash", "z", "zeta/x", "system/cpu_percent"],
}
FIRST_MS = {"big": 1_000.0, "half": 2_000.0, "other ü": 3_000.0}


def _fill(store) -> None:
    items = []
    for r, (run, keys) in enumerate(KEYS.items()):
        steps = np.arange(3, dtype=np.int64)
        walls = T0 + int(FIRST_MS[run] * 1e6) + steps * 10**6
        columns = [ScalarColumn(k, steps, walls, np.ones(3)) for k in keys]
        text = batch_pb2.TextRecord(key="layer.0/notes", step=1, wall_ns=int(walls[1]), text="not a chart")
        items.append(DecodedBatch(f"k{r}".encode(), 1, "keys", run, columns, [], [text], None, None, 0))
    store.write(items)


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    with served_engine(request, tmp_path_factory, "keys", _fill) as client:
        yield client


def _keys(api: AppClient, runs: list[str], **params: Any) -> dict[str, Any]:
    resp = api.get("/api/v1/keys", params={"run": [f"keys/{q(r)}" for r in runs], **params})
    assert resp.status_code == 200, resp.text
    ApiKeys.model_validate(resp.json())  # the answer is its model (extra fields forbidden)
    return resp.json()


def _natural(text: str) -> tuple:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in re.split(r"(\d+)", text) if p)


def _page_order(keys: set[str]) -> list[str]:
    def section(k):
        return k.split("/", 1)[0] if "/" in k else ""
    return sorted(keys, key=lambda k: (section(k) != "", section(k) == "system", _natural(section(k)), _natural(k), k))


def test_the_pages_put_together_are_every_key_in_sections_each_naming_its_runs(api):
    runs = ["big", "half", "other ü"]
    union = set().union(*KEYS.values())
    order = _page_order(union)
    assert order[:4] == ["/leading slash", "loss", "lr", "z"], "keys without a prefix first (a leading / too)"
    assert order[4:8] == ["eval/acc"] + [f"layer.0/{s}" for s in sorted(STATS, key=_natural)]
    assert order.index("layer.2/w/mean") < order.index("layer.10/w/mean"), "natural order"
    assert order[-2:] == ["zeta/x", "system/cpu_percent"], "system metrics after the run's own keys"
    got: list[dict] = []
    for offset in range(0, len(order), 17):
        page = _keys(api, runs, offset=offset, limit=17)
        assert (page["total"], page["matched"]) == (len(union), len(union))
        got += page["keys"]
    assert [k["key"] for k in got] == order
    for k in got:
        assert k["runs"] == [i for i, r in enumerate(runs) if k["key"] in KEYS[r]], k
    sections = page["sections"]
    assert [s["name"] for s in sections] == ["", "eval"] + [f"layer.{i}" for i in range(LAYERS)] + ["zeta", "system"]
    assert [s["keys"] for s in sections] == [4, 1] + [len(STATS)] * LAYERS + [1, 1]
    assert [s["offset"] for s in sections] == [0, 4, 5] + [5 + len(STATS) * i for i in range(1, LAYERS + 1)] + [
        5 + len(STATS) * LAYERS + 1]
    assert [(r["run"], r["first_ms"]) for r in page["runs"]] == [(r, T0 / 1e6 + ms) for r, ms in FIRST_MS.items()]


@pytest.mark.parametrize("match,query,rule", [
    ("words", "LAYER.1 w", lambda k: "layer.1" in k.lower() and "w" in k.lower()),
    ("glob", "layer.1?/*", lambda k: fnmatchcase(k, "layer.1?/*")),
    ("glob", "*norm*", lambda k: fnmatchcase(k, "*norm*")),
    ("regex", r"^layer\.(3|11)/w/", lambda k: re.search(r"^layer\.(3|11)/w/", k) is not None),
])
def test_a_search_keeps_the_keys_it_matches_and_their_sections(api, match, query, rule):
    page = _keys(api, ["big"], q=query, match=match, limit=1000)
    expected = _page_order({k for k in KEYS["big"] if rule(k)})
    assert expected and [k["key"] for k in page["keys"]] == expected
    assert (page["total"], page["matched"]) == (len(KEYS["big"]), len(expected))
    assert sum(s["keys"] for s in page["sections"]) == len(expected)


def test_a_bad_pattern_or_run_is_refused_with_the_reason(api):
    resp = api.get("/api/v1/keys", params={"run": "keys/big", "q": "layer.(", "match": "regex"})
    assert resp.status_code == 422 and "regular expression" in resp.text
    assert api.get("/api/v1/keys", params={"run": "no-slash"}).status_code == 422
    assert api.get("/api/v1/keys", params={"run": "keys/big", "match": "fuzzy"}).status_code == 422
    nowhere = _keys(api, ["nowhere"])
    assert (nowhere["total"], nowhere["keys"], nowhere["runs"][0]["first_ms"]) == (0, [], None)


def test_keys_are_kept_a_few_seconds_and_read_again_when_asked_fresh(tmp_path):
    with served_bridge(store=f"duckdb:///{tmp_path}/keys.duckdb") as (bridge, client):
        _fill(bridge.store)
        first = client.get("/api/v1/keys", params={"run": "keys/big"}).json()
        steps = np.arange(2, dtype=np.int64)
        bridge.store.write(
            [
                DecodedBatch(
                    b"later",
                    1,
                    "keys",
                    "big",
                    [ScalarColumn("a new key", steps, T0 + steps, np.ones(2))],
                    [],
                    [],
                    None,
                    None,
                    0,
                )
            ]
        )
        kept = client.get("/api/v1/keys", params={"run": "keys/big"}).json()
        fresh = client.get("/api/v1/keys", params={"run": "keys/big", "fresh": "true"}).json()
    assert kept == first, "one read serves a page's requests in a row"
    assert fresh["total"] == first["total"] + 1 and fresh["keys"][0]["key"] == "a new key"
