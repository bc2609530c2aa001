"""InfluxDB databases whose default retention policy keeps points for a limited
time (what operators set up): everything the bridge must remember for good
(stored batches, runs, rollup plans, step rollups, alert state) lives in its
own ``curvestream_meta`` policy, and points older than the policy are dropped
by InfluxDB, counted, and never make a batch fail."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest
from test_store_support import T0, assert_same, batches, curve, influx_store, reference, write_all

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.store.base import SeriesQuery


def _influxql(influxd, q: str, db: str | None = None) -> list[dict]:
    params = {"q": q, **({"db": db} if db else {})}
    resp = httpx.post(f"{influxd.url}/query", params=params)
    resp.raise_for_status()
    return resp.json()["results"]


def _recent(points, hours_ago: float = 0.5):
    """The points moved so that they end ``hours_ago`` before now."""
    points.walls = points.walls - points.walls.max() + time.time_ns() - int(hours_ago * 3600e9)
    return points


def _database(influxd, name: str, duration: str) -> str:
    """A database whose default retention policy keeps points for ``duration``."""
    _influxql(influxd, f'CREATE DATABASE "{name}" WITH DURATION {duration}')
    return name


def _policies(influxd, db: str) -> dict[str, str]:
    (result,) = _influxql(influxd, f'SHOW RETENTION POLICIES ON "{db}"')
    return {v[0]: v[1] for v in result["series"][0]["values"]}


def _assert_exact(store, points, zoom: tuple[float, float]) -> None:
    """The run's curves (whole, zoomed, x = step and time) are the M4 of its raw points."""
    for q in (SeriesQuery("proj", "run", "loss", "step", None, None, 120),
              SeriesQuery("proj", "run", "loss", "step", *zoom, 64),
              SeriesQuery("proj", "run", "loss", "time", None, None, 90)):
        assert_same(store.series(q), reference(q, points), str(q))


def test_a_database_that_expires_points_keeps_its_runs_batches_rollups_and_alert_state(influxd):
    db = _database(influxd, "expiring_2d", "2d")
    points = _recent(curve(np.random.default_rng(7), 3000))
    items = batches(points, np.arange(300, 3000, 300))
    store = influx_store(influxd, db)
    try:
        write_all(store, items)
        assert store.stored_ranges(b"producer-1") == [(1, len(items))]
        store.apply_status(run_pb2.RunStatus(project="proj", run="run", state=run_pb2.RUN_STATE_FINISHED,
                                             updated_ns=time.time_ns()))
        store.save_alert_state({"engine": '{"v": 1}'}, [])
        assert store.expired_points == 0
    finally:
        store.close()
    assert _policies(influxd, db)["curvestream_meta"] == "0s"  # INF
    store = influx_store(influxd, db)  # a restarted bridge finds all of it
    try:
        write_all(store, items)  # delivered again: stored once
        (run,) = store.runs()
        assert (run.run, run.points, run.state) == ("run", len(points), "finished")
        assert store.load_alert_state() == {"engine": '{"v": 1}'}
        _assert_exact(store, points, zoom=(float(points.steps[500]), float(points.steps[2500])))
    finally:
        store.close()


def test_points_older_than_the_retention_policy_are_dropped_by_influxdb_and_counted_not_refused(influxd):
    db = _database(influxd, "expiring_1h", "1h")
    points = _recent(curve(np.random.default_rng(8), 400, hostile_values=False), hours_ago=0.1)
    old = np.arange(len(points)) < 150
    points.walls[old] -= 3 * 3600 * 10**9  # three hours older: beyond the policy
    store = influx_store(influxd, db, rollups="off")
    try:
        store.write(batches(points, [200]))  # neither batch is refused
        assert store.stored_ranges(b"producer-1") == [(1, 2)]
        assert store.expired_points == 150
        (run,) = store.runs()
        assert run.points == 250
    finally:
        store.close()


def test_meta_rows_a_bridge_kept_in_the_default_policy_move_to_their_own_at_its_next_start(influxd):
    db = "upgraded"
    points = curve(np.random.default_rng(9), 2000)
    items = batches(points, np.arange(250, 2000, 250))
    store = influx_store(influxd, db, meta_rp="")  # the layout of a bridge without a meta policy
    try:
        write_all(store, items)
    finally:
        store.close()
    assert "curvestream_meta" not in _policies(influxd, db)
    store = influx_store(influxd, db)
    try:
        assert "curvestream_meta" in _policies(influxd, db)
        assert store.stored_ranges(b"producer-1") == [(1, len(items))]
        write_all(store, items)  # still known as stored: not rolled up twice
        more = curve(np.random.default_rng(10), 500)
        more.steps += int(points.steps.max())
        more.walls += int(points.walls.max()) - T0
        write_all(store, batches(more, [250], first_seq=len(items) + 1))
        both = type(points)(np.concatenate([points.steps, more.steps]), np.concatenate([points.walls, more.walls]),
                            np.concatenate([points.values, more.values]))
        _assert_exact(store, both, zoom=(float(more.steps[10]), float(more.steps[400])))
    finally:
        store.close()


def test_records_the_default_policy_would_drop_make_the_write_fail_never_pass_for_stored(influxd):
    db = _database(influxd, "expiring_no_meta", "1h")
    points = _recent(curve(np.random.default_rng(11), 300, hostile_values=False), hours_ago=0.1)
    store = influx_store(influxd, db, meta_rp="")  # told to keep its records in the default policy
    try:
        with pytest.raises(RuntimeError, match="retention policy"):  # unexpected: the bridge parks the batch
            store.write(batches(points, [150]))
        assert store.stored_ranges(b"producer-1") == []
    finally:
        store.close()
