"""A run's name, tags and notes edited after the fact, and a run deleted, in
both engines (DuckDB in a file, real InfluxDB 1.6.7): edits stay over what the
trainer sends again; a deletion takes every point, rollup, histogram, text,
record and alert entry of the run and leaves the other run as it was, also
once the store is opened again."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.lifecycle import RunEdits

N = 20_000  # enough points for several rollup levels
A, B = "doomed run", "kept run"


def _batches(run: str, producer: bytes) -> list[DecodedBatch]:
    steps = np.arange(N, dtype=np.int64)
    wall = 1_767_225_600_000_000_000 + steps * 1_000_000
    values = np.sin(steps / 100.0)
    values[77] = math.nan
    hist = batch_pb2.Histogram(key="w", step=5, wall_ns=int(wall[5]), bucket_edges=[0, 1, 2], counts=[1, 2], min=0,
                               max=2, sum=3, count=3)
    text = batch_pb2.TextRecord(key="log", step=6, wall_ns=int(wall[6]), text="hello", level=0)
    meta = run_pb2.RunMeta(version=1, project="p", run=run, name=run.split()[0], tags=["t0"], config_json='{"lr": 1}',
                           notes="from the trainer")
    status = run_pb2.RunStatus(version=1, project="p", run=run, state=run_pb2.RUN_STATE_RUNNING, updated_ns=1)
    return [DecodedBatch(producer, 1, "p", run, [ScalarColumn("loss", steps[: N // 2], wall[: N // 2],
                                                              values[: N // 2])], [hist], [text], meta, status, 0),
            DecodedBatch(producer, 2, "p", run, [ScalarColumn("loss", steps[N // 2:], wall[N // 2:],
                                                              values[N // 2:])], [], [], None, None, 0)]


def _alert_entries(run: str) -> dict[str, str]:
    sep = "\x1f"
    return {sep.join(("s", "nonfinite", "p", run, "loss")): json.dumps({"last_step": 1}),
            sep.join(("r", "p", run)): json.dumps({"state": "running"}),
            sep.join(("a", f"id-{run}")): json.dumps({"id": f"id-{run}"})}


def _alert(run: str) -> dict[str, Any]:
    return {"id": f"id-{run}", "version": 1, "project": "p", "run": run, "key": "loss", "rule": "nonfinite",
            "kind": "nonfinite", "severity": "critical", "state": "firing", "step": 77, "time_ms": 1.0e12,
            "time_ns": 10**18, "value": "NaN", "message": "loss became NaN", "window": {"from_step": 77, "to_step": 77},
            "fired_step": 77, "started_ms": 1.0e12, "ended_ms": None}


@pytest.fixture(params=["duckdb", "influxdb"])
def store_url(request: Any, tmp_path: Any) -> Iterator[str]:
    if request.param == "duckdb":
        yield f"duckdb:///{tmp_path / 'store.duckdb'}"
    else:
        influxd = request.getfixturevalue("influxd")
        yield influxd.store_url(f"lifecycle_{abs(hash(str(tmp_path))) % 10**8}")


def _state(store: Any, run: str) -> dict[str, Any]:
    """Everything a reader can see of a run."""
    records = {r.run: r for r in store.runs()}
    series = store.series(SeriesQuery("p", run, "loss", "step", None, None, 200))
    return {"listed": run in records, "metrics": sorted(m.key for m in store.metrics("p", run)),
            "series": series.total, "histograms": len(store.histograms("p", run, "w", 10)),
            "texts": len(store.texts("p", run, None, 10)),
            "points": sum(len(c.step) for c in store.points("p", run, "loss"))}


def test_edits_stay_over_the_trainers_metadata_and_a_deleted_run_is_gone_from_every_read(store_url):
    store = open_store(store_url)
    try:
        store.write(_batches(A, b"a" * 16) + _batches(B, b"b" * 16))
        store.save_alert_state({**_alert_entries(A), **_alert_entries(B)}, [_alert(A), _alert(B)])
        kept_before = store.series(SeriesQuery("p", B, "loss", "time", None, None, 300))
        assert _state(store, A) == {"listed": True, "metrics": ["log", "loss", "w"], "series": N, "histograms": 1,
                                    "texts": 1, "points": N}

        assert store.edit_run("p", A, RunEdits(name="renamed", tags=("best", "v2")))
        assert store.edit_run("p", A, RunEdits(notes="diverged at step 77"))
        store.apply_meta(_batches(A, b"a" * 16)[0].meta)  # the trainer announces its metadata again
        (record,) = [r for r in store.runs() if r.run == A]
        assert (record.name, record.tags, record.notes) == ("renamed", ["best", "v2"], "diverged at step 77")
        assert record.config == {"lr": 1} and _state(store, A)["series"] == N  # identity and curves kept
        assert not store.edit_run("p", "no such run", RunEdits(name="x"))

        assert store.delete_run("p", A, list(_alert_entries(A)))
        gone = {"listed": False, "metrics": [], "series": 0, "histograms": 0, "texts": 0, "points": 0}
        assert _state(store, A) == gone
        assert set(store.load_alert_state()) == set(_alert_entries(B))
        assert store.deleted_runs() == {("p", A)}
        assert not store.delete_run("p", A, [])
        if store.name == "influxdb":  # no series of the run left in any measurement or retention policy
            from curvestream_bridge.store.influx.rows import tag_literal

            assert store._db.series(f'SHOW SERIES WHERE "run" = {tag_literal(A)}') == []
            assert store._db.series(f'SHOW SERIES WHERE "run" = {tag_literal(B)}') != []
    finally:
        store.close()

    store = open_store(store_url)  # opened again: the deletion is durable, the other run as it was
    try:
        assert _state(store, A) == gone and store.deleted_runs() == {("p", A)}
        kept = store.series(SeriesQuery("p", B, "loss", "time", None, None, 300))
        assert np.array_equal(kept.y, kept_before.y, equal_nan=True) and kept.total == N
        (record,) = [r for r in store.runs() if r.run == B]
        assert (record.name, record.tags, record.notes) == ("kept", ["t0"], "from the trainer")
        store.write(_batches(A, b"c" * 16)[:1])  # the store itself writes what it is given: the bridge gates
        assert _state(store, A)["listed"]
    finally:
        store.close()
