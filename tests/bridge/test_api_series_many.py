"""``GET /api/v1/series`` (several runs × keys, read from the store together)
answers each run × key exactly as ``GET /api/v1/runs/{p}/{r}/series`` does,
on both engines: the same points, raw flag, totals and neighbours, for hostile
names, NaN and ±Inf, missing runs and keys, every x axis, zoomed and not. And
the binary answer (``Accept: application/vnd.curvestream.series``) of both
endpoints decodes to exactly the JSON answer's numbers."""

from __future__ import annotations

import math
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from bridge_client import AppClient, q, served_engine
from curvestream_bridge import series_binary

sys.path.insert(0, str(pathlib.Path(__file__).parent / "store"))
from test_store_support import batches, curve, write_all

KEYS = ["loss", 'grad/norm "clipped", a=b ü']
# (project, run, points per key): two long runs (rollups, M4), one too short for rollups, one with hostile names
RUNS = [("vision", "long", 12_000), ("vision", "lr/0.01 %2F 100% 😀", 6_000), ("nlp", "short", 40),
        ("a,b c=d", "'; DROP TABLE series; --\nline", 3_000)]
MISSING = [("vision", "nowhere"), ("nowhere", "long")]
BINARY = {"Accept": series_binary.MEDIA_TYPE}


def _fill(store) -> None:
    rng = np.random.default_rng(11)
    for r, (project, run, n) in enumerate(RUNS):
        for k, key in enumerate(KEYS):
            points = curve(rng, n)
            write_all(store, batches(points, np.arange(2_000, n, 2_000), key=key, project=project, run=run,
                                     producer=f"p{r}-{k}".encode()))


@pytest.fixture(scope="module", params=["duckdb", "influxdb"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppClient]:
    with served_engine(request, tmp_path_factory, "many", _fill) as client:
        yield client


def _ranges(api: AppClient, x: str) -> list[tuple[float | None, float | None, int]]:
    """(start, end, width): the whole run at two widths, a zoom answered raw, one that looks raw
    from the series' count but is not, one deep inside a bottom bucket, one past the end."""
    whole = api.get("/api/v1/runs/vision/long/series", params={"key": "loss", "x": x, "width": 1}).json()
    lo, hi = whole["start"], whole["end"]
    span = hi - lo
    return [(None, None, 300), (None, None, 2000), (lo + span * 0.4, lo + span * 0.42, 300),
            (lo + span * 0.3, lo + span * 0.45, 300), (lo + span * 0.5, lo + span * 0.5001, 50),
            (lo, None, 700), (hi + span, hi + 2 * span, 100)]  # the last: past every run's end


def _params(start: float | None, end: float | None, width: int, x: str) -> dict[str, Any]:
    return {k: v for k, v in {"x": x, "start": start, "end": end, "width": width}.items() if v is not None}


def _single(api: AppClient, project: str, run: str, key: str, params: dict, headers: dict | None = None) -> Any:
    resp = api.get(f"/api/v1/runs/{q(project)}/{q(run)}/series", params={"key": key, **params}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp


@pytest.mark.parametrize("x", ["step", "time", "relative"])
def test_each_run_and_key_of_the_many_series_answer_is_the_single_series_answer(api, x):
    runs = [(p, r) for p, r, _ in RUNS] + MISSING
    ranges = _ranges(api, x)
    for start, end, width in ranges:
        params = _params(start, end, width, x)
        resp = api.get("/api/v1/series", params=[("run", f"{q(p)}/{q(r)}") for p, r in runs]
                       + [("key", k) for k in KEYS + ["missing"]] + list(params.items()))
        assert resp.status_code == 200, resp.text
        many = resp.json()["series"]
        assert [(s["project"], s["run"], s["key"]) for s in many] == [
            (p, r, k) for p, r in runs for k in KEYS + ["missing"]]
        for got in many:
            single = _single(api, got["project"], got["run"], got["key"], params).json()
            assert got == single, (got["project"], got["run"], got["key"], params)
        drawn = [s for s in many if s["total"] > 0]
        assert bool(drawn) == ((start, end, width) != ranges[-1]), params
        if start is None:  # the whole runs: M4 for the long ones, raw for the short one
            raw = {(s["run"], s["key"]): s["raw"] for s in drawn}
            assert raw[("long", "loss")] is False and raw[("short", "loss")] is True


def test_a_run_listed_twice_is_answered_twice_and_a_bad_range_is_refused_as_by_the_single_endpoint(api):
    resp = api.get("/api/v1/series", params=[("run", "vision/long"), ("run", "vision/long"), ("key", "loss"),
                                             ("width", 200)])
    first, second = resp.json()["series"]
    assert first == second == _single(api, "vision", "long", "loss", {"width": 200}).json()
    bad = {"start": 10, "end": 5}
    assert api.get("/api/v1/series", params={"run": "vision/long", "key": "loss", **bad}).status_code == 422
    assert api.get("/api/v1/runs/vision/long/series", params={"key": "loss", **bad}).status_code == 422


def _same_numbers(cols: dict[str, np.ndarray], points: dict[str, list]) -> None:
    def as_float(v: Any) -> float:
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v) if isinstance(v, str) else v

    assert cols["x"].tolist() == points["x"]
    assert cols["step"].tolist() == points["step"]
    assert cols["time_ms"].tolist() == points["time_ms"]
    want = np.array([as_float(v) for v in points["y"]], dtype=np.float64)
    # bit for bit: NaN where JSON says "NaN", ±Inf where it says ±Infinity, -0.0 stays -0.0
    assert cols["y"].tobytes() == want.tobytes() or np.array_equal(cols["y"], want, equal_nan=True)
    assert np.array_equal(np.signbit(cols["y"]), np.signbit(want))


@pytest.mark.parametrize("x", ["step", "relative"])
def test_the_binary_answer_decodes_to_exactly_the_json_numbers_nan_and_infinities_included(api, x):
    runs = [(p, r) for p, r, _ in RUNS] + MISSING[:1]
    seen_nonfinite = set()
    for start, end, width in _ranges(api, x):
        params = _params(start, end, width, x)
        query = [("run", f"{q(p)}/{q(r)}") for p, r in runs] + [("key", k) for k in KEYS] + list(params.items())
        as_json = api.get("/api/v1/series", params=query).json()
        resp = api.get("/api/v1/series", params=query, headers=BINARY)
        assert resp.headers["content-type"] == series_binary.MEDIA_TYPE
        header, columns = series_binary.decode(resp.content)
        assert len(columns) == len(as_json["series"])
        for meta, cols, js in zip(header["series"], columns, as_json["series"]):
            assert {k: v for k, v in meta.items() if k != "points"} == {k: v for k, v in js.items() if k != "points"}
            _same_numbers(cols, js["points"])
            seen_nonfinite |= {v for v in js["points"]["y"] if isinstance(v, str)}
        for p, r in runs[:2]:  # the single-series endpoint too
            js = _single(api, p, r, KEYS[1], params).json()
            header, (cols,) = series_binary.decode(_single(api, p, r, KEYS[1], params, BINARY).content)
            assert {k: v for k, v in header.items() if k != "points"} == {k: v for k, v in js.items() if k != "points"}
            _same_numbers(cols, js["points"])
    assert seen_nonfinite == {"NaN", "Infinity", "-Infinity"}, "the data hold NaN and ±Inf in view"


def test_json_stays_the_answer_unless_the_binary_one_is_named(api):
    for accept in (None, "*/*", "application/json", "text/html,application/xhtml+xml,*/*;q=0.8"):
        resp = api.get("/api/v1/runs/vision/long/series", params={"key": "loss"},
                       headers={"Accept": accept} if accept else {})
        assert resp.headers["content-type"] == "application/json", accept
    resp = api.get("/api/v1/runs/vision/long/series", params={"key": "loss"},
                   headers={"Accept": f"application/json;q=0.5, {series_binary.MEDIA_TYPE}"})
    assert resp.headers["content-type"] == series_binary.MEDIA_TYPE
