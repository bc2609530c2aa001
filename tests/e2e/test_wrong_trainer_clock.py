"""A trainer whose clock is a year behind (an injected clock) streams through
real Mosquitto and the bridge into real InfluxDB: no point is lost, each lands
at the bridge's time (so no retention policy drops it), and the offset and the
correction are shown per run and in /metrics (docs/clock-skew.md)."""

from __future__ import annotations

import time

from curvestream.factory import start_run
from curvestream.settings import Settings
from helpers import get_json, metric_counts, prometheus_value, run_path

YEAR_NS = 365 * 24 * 3600 * 10**9
STEPS = 5_000


def test_a_trainer_with_its_clock_a_year_back_loses_no_point_and_its_points_land_at_the_bridges_time(
        influxd, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(influxd.store_url("skew"), mosquitto.url)
    settings = Settings.from_env(mqtt_url=mosquitto.url, bridge_url="", spool_dir=str(spool_dir),
                                 max_batch_points=1000)
    started_ns = time.time_ns()
    run = start_run("skew", "year-back", settings=settings, clock_ns=lambda: time.time_ns() - YEAR_NS)
    for step in range(STEPS):
        run.log({"loss": 1.0 / (step + 1), "acc": step / STEPS}, step=step)
    report = run.finish()
    finished_ns = time.time_ns()
    assert report.complete, report
    assert metric_counts(bridge.url, "skew", "year-back") == {"loss": STEPS, "acc": STEPS}

    ans = get_json(bridge.url, run_path("skew", "year-back") + "/series", key="loss", x="time", width=20_000)
    times_ms = ans["points"]["time_ms"]
    assert len(times_ms) == STEPS and times_ms == sorted(times_ms)
    assert started_ns / 1e6 - 60_000 < times_ms[0] and times_ms[-1] < finished_ns / 1e6 + 60_000  # now, not a year ago

    row = next(r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["run"] == "year-back")
    assert abs(row["clock_offset_s"] - YEAR_NS / 1e9) < 60 and abs(row["clock_correction_s"] - YEAR_NS / 1e9) < 60
    assert row["state"] == "finished"  # its statuses, dated by the same clock, are corrected alike
    assert abs(prometheus_value(bridge.url, "curvestream_clock_offset_seconds", project="skew", run="year-back")
               - YEAR_NS / 1e9) < 60
    assert prometheus_value(bridge.url, "curvestream_points_time_corrected_total") >= 2 * STEPS
