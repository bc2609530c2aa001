"""The dashboards' System row on the real InfluxDB 1.6.7: the runs' system
metrics (keys under ``system/``, written by the bridge's InfluxStore) are the
options of ``$system_metric`` and no longer of ``$metric``, and the row's query
draws each window's first, last, minimum and maximum of the 10 s samples, so a
GPU's one hot sample shows."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.influx.lineproto import decode_tag
from curvestream_bridge.store.influx.store import InfluxStore
from grafana_kit import (
    ALL,
    PROVISIONING_DIR,
    influxql_macros,
    influxql_series,
    interpolate_variables,
    panel_interval_ms,
    query_library,
)

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SAMPLES = 2_000  # 10 s apart: 5.5 hours
HOT = 1_234  # the sample where GPU 0 ran hot
TRAINING = ["train/loss", "val/acc"]
SYSTEM = ["system/cpu_percent", "system/gpu0/temperature_c", "system/process_rss_bytes"]


@pytest.fixture(scope="module")
def influx(influxd: Any) -> dict[str, Any]:
    store = InfluxStore(influxd.store_url("system_row"))
    steps = np.arange(SAMPLES, dtype=np.int64)
    wall = (BASE_MS + steps * 10_000) * 1_000_000
    temperature = 60 + np.sin(steps / 50.0)
    temperature[HOT] = 95.0
    try:
        for seq, run in enumerate(("a", "b"), start=1):
            columns = [ScalarColumn(k, steps, wall, np.linspace(1, 0, SAMPLES)) for k in TRAINING]
            columns += [ScalarColumn(k, steps, wall + 1, temperature if "gpu" in k else np.full(SAMPLES, 50.0))
                        for k in SYSTEM]
            store.write([DecodedBatch(b"s" * 16, seq, "mnist", run, columns, [], [], None, None, 0)])
    finally:
        store.close()
    return {"url": influxd.url, "db": "system_row", "from_ms": BASE_MS, "to_ms": BASE_MS + (SAMPLES - 1) * 10_000}


def _query(influx: dict[str, Any], name: str, selection: dict[str, Any]) -> list[dict[str, Any]]:
    interval_ms = panel_interval_ms(influx["from_ms"], influx["to_ms"], 200)
    text = interpolate_variables(query_library()[name]["influxql"], selection, {"run": ".*", "metric": ".*"})
    return influxql_series(influx["url"], influx["db"], influxql_macros(text, influx["from_ms"], influx["to_ms"],
                                                                       interval_ms))


def _variables() -> dict[str, dict[str, Any]]:
    path = PROVISIONING_DIR / "dashboards" / "curvestream" / "curvestream-influxql.json"
    return {v["name"]: v for v in json.loads(path.read_text())["templating"]["list"]}


def _options(influx: dict[str, Any], variable: dict[str, Any]) -> list[str]:
    """A variable's options as Grafana lists them: its query's answer, kept by its regex."""
    series = _query(influx, "metric_values", {"project": "mnist", "run": ALL})
    pattern = re.compile(variable["regex"][1:-1])  # /.../: the same in JavaScript and Python here
    return sorted(decode_tag(v[1]) for s in series for v in s["values"] if pattern.search(v[1]))


def test_system_metrics_are_the_system_rows_options_and_no_longer_the_training_metrics(influx) -> None:
    variables = _variables()
    assert _options(influx, variables["metric"]) == TRAINING
    assert _options(influx, variables["system_metric"]) == SYSTEM


def test_the_system_row_draws_each_windows_first_last_min_and_max_so_a_hot_sample_shows(influx) -> None:
    series = _query(influx, "system_m4", {"project": "mnist", "run": ["a"], "system_metric": SYSTEM})
    got = {decode_tag(s["tags"]["metric"]): np.array(s["values"], dtype=np.float64) for s in series}
    assert sorted(got) == SYSTEM and {decode_tag(s["tags"]["run"]) for s in series} == {"a"}
    temperature = got["system/gpu0/temperature_c"]
    interval_ms = panel_interval_ms(influx["from_ms"], influx["to_ms"], 200)
    assert interval_ms >= 100_000 and len(temperature) <= 4 * (SAMPLES * 10_000 // interval_ms + 1)  # reduced
    assert temperature[:, 1].max() == 95.0  # one sample among ten or more per window
    assert set(got["system/cpu_percent"][:, 1]) == {50.0}
    both = _query(influx, "system_m4", {"project": "mnist", "run": ALL, "system_metric": ["system/cpu_percent"]})
    assert sorted(decode_tag(s["tags"]["run"]) for s in both) == ["a", "b"]
