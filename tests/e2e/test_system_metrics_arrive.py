"""System metrics end to end: two runs of one process, sampled by its one
sampler thread with the real psutil, through real Mosquitto into a bridge
process on DuckDB; the first run's samples stop at its ``finish()`` while the
second's go on."""

from __future__ import annotations

import os
import threading

import psutil

import curvestream
from curvestream import system_metrics
from helpers import get_json, metric_counts, run_path
from servers import wait_until

KEYS = {"system/cpu_percent", "system/memory_percent", "system/memory_used_bytes", "system/process_cpu_percent",
        "system/process_rss_bytes", "system/disk_read_bytes_per_s", "system/disk_write_bytes_per_s",
        "system/network_recv_bytes_per_s", "system/network_sent_bytes_per_s"}


def _count(bridge_url: str, run: str) -> int:
    return metric_counts(bridge_url, "sysmetrics", run).get("system/cpu_percent", 0)


def test_psutil_metrics_arrive_for_a_run_at_its_step_and_stop_at_finish(mosquitto, bridge_factory, spool_dir,
                                                                        tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    common = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir),
              "system_metrics": True, "system_metrics_interval_ms": 100}
    first = curvestream.init("sysmetrics", id="first", **common)
    second = curvestream.init("sysmetrics", id="second", **common)
    for step in range(10):
        first.log({"loss": 1.0 / (step + 1)}, step=step)
    wait_until(lambda: _count(bridge.url, "first") >= 3 and _count(bridge.url, "second") >= 3, 60,
               "system metrics of both runs")
    assert len([t for t in threading.enumerate() if t.name == "curvestream-system"]) == 1

    metrics = {m["key"]: m for m in get_json(bridge.url, run_path("sysmetrics", "first") + "/metrics")["metrics"]}
    assert KEYS <= set(metrics) and not any(k.startswith("system/gpu") for k in metrics)  # no GPU here
    rss = psutil.Process(os.getpid()).memory_info().rss
    assert 0.5 * rss <= metrics["system/process_rss_bytes"]["last_value"] <= 2 * rss
    assert metrics["system/cpu_percent"]["last_step"] == 9  # the step the run is at

    report = first.finish()
    assert report.complete
    stored = _count(bridge.url, "first")  # every batch of the run is committed: this is all it will have
    (record,) = [r for r in get_json(bridge.url, "/api/v1/runs", project="sysmetrics")["runs"] if r["run"] == "first"]
    assert record["state"] == "finished"
    series = get_json(bridge.url, run_path("sysmetrics", "first") + "/series", key="system/cpu_percent", x="time",
                      width=10_000)
    assert series["raw"] and len(series["points"]["x"]) == stored
    assert max(series["points"]["x"]) <= record["updated_ms"]  # none after the final status

    going_on = _count(bridge.url, "second")
    wait_until(lambda: _count(bridge.url, "second") >= going_on + 5, 60, "the second run's samples going on")
    assert _count(bridge.url, "first") == stored
    assert second.finish().complete
    system_metrics.sampler().join(30)
    assert not system_metrics.sampler().running
