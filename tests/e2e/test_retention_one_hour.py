"""A bridge on an InfluxDB database whose default retention policy keeps points
for one hour (real Mosquitto, bridge process, InfluxDB 1.6.7, the client):
nothing is refused, every point the policy keeps is stored and drawn (its
rollups included), and the points of a trainer whose clock is three hours
behind (kept at its times, docs/clock-skew.md: older than the policy) are
counted in /metrics and named to that trainer with the reason."""

from __future__ import annotations

import time

import httpx
import numpy as np

from curvestream.factory import start_run
from curvestream.settings import Settings
from helpers import get_json, metric_counts, prometheus_value, run_path

HOUR_NS = 3600 * 10**9
STEPS = 3_000


def test_a_bridge_on_a_database_keeping_points_an_hour_refuses_nothing_and_names_the_points_it_cannot_keep(
        influxd, mosquitto, bridge_factory, spool_dir):
    resp = httpx.post(f"{influxd.url}/query", params={"q": 'CREATE DATABASE "one_hour" WITH DURATION 1h'})
    resp.raise_for_status()
    bridge = bridge_factory(influxd.store_url("one_hour"), mosquitto.url)
    settings = Settings.from_env(mqtt_url=mosquitto.url, bridge_url="", spool_dir=str(spool_dir),
                                 max_batch_points=500)
    fresh = start_run("retention", "now", settings=settings)
    late = start_run("retention", "three-hours-late", settings=settings, clock_ns=lambda: time.time_ns() - 3 * HOUR_NS)
    values = np.cos(np.arange(STEPS) / 300.0)
    values[1234] = 50.0
    for step in range(STEPS):
        fresh.log({"loss": float(values[step])}, step=step)
        late.log({"loss": float(values[step])}, step=step)
    assert fresh.finish().complete and late.finish().complete  # every batch committed: none refused

    assert metric_counts(bridge.url, "retention", "now") == {"loss": STEPS}
    ans = get_json(bridge.url, run_path("retention", "now") + "/series", key="loss", width=20_000)
    assert ans["raw"] and ans["points"]["step"] == list(range(STEPS)) and ans["points"]["y"] == values.tolist()
    # the time rollups' levels stop at the policy's shard groups (an hour): their rows are kept too
    drawn = get_json(bridge.url, run_path("retention", "now") + "/series", key="loss", x="time", width=200)
    assert not drawn["raw"] and drawn["total"] == STEPS and max(drawn["points"]["y"]) == 50.0

    assert prometheus_value(bridge.url, "curvestream_store_expired_points_total") == STEPS
    assert prometheus_value(bridge.url, "curvestream_rejected_total") == 0
    stats = late.uploader.stats
    assert stats.batches_rejected == 0 and stats.points_dropped == STEPS
    (why,) = stats.dropped_reasons
    assert "retention policy" in why and "one_hour" in why and "1 h" in why, why
    runs = {r["run"]: r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["project"] == "retention"}
    assert {name: (r["state"], r["points"]) for name, r in runs.items()} == {
        "now": ("finished", STEPS), "three-hours-late": ("finished", 0)}  # its record is kept, not its points
