"""A run deleted in InfluxDB is gone from Grafana: every InfluxQL query of the
dashboards (variables, curves, non-finite counts, system metrics, alert
annotations) and of the provisioned alert rules, run on the real InfluxDB
1.6.7 as Grafana runs them, answers nothing of it, and the same of the run
kept beside it."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import yaml

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.alerts.engine import AlertEngine
from curvestream_bridge.alerts.rules import parse_rules
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.influx.lineproto import decode_tag
from curvestream_bridge.store.influx.store import InfluxStore
from grafana_kit import ALL, PROVISIONING_DIR, influxql_macros, influxql_series, interpolate_variables, query_library

DELETED, KEPT = "typo run", "kept run"
KEYS = ["train/loss", "system/cpu_percent"]
SELECTION = {"project": "mnist", "group": ALL, "run": ALL, "metric": ALL, "system_metric": KEYS[1:]}


@pytest.fixture(scope="module")
def influx(influxd: Any) -> dict[str, Any]:
    """Two runs with a NaN each (an alert each), written and evaluated; then one deleted."""
    database = "deleted_run"
    store = InfluxStore(influxd.store_url(database))
    now_ms = int(time.time() * 1000)
    steps = np.arange(200, dtype=np.int64)
    wall = (now_ms - 120_000 + steps * 100) * 1_000_000
    engine = AlertEngine(parse_rules("rules: [{name: nonfinite, kind: nonfinite}]"))
    entries: dict[str, list[str]] = {}  # the alert engine's state entries about each run
    try:
        for seq, run in enumerate((DELETED, KEPT), start=1):
            values = np.where(steps == 150, np.nan, 1.0 / (steps + 1))
            meta = run_pb2.RunMeta(version=1, project="mnist", run=run, group="sweep")  # the group variable's row
            batch = DecodedBatch(b"d" * 16, seq, "mnist", run, [ScalarColumn(k, steps, wall, values) for k in KEYS],
                                 [], [], meta, None, 0)
            store.write([batch])
            changes = engine.evaluate([batch])
            store.save_alert_state(changes.entries, [a.to_json() for a in changes.alerts])
            entries[run] = list(changes.entries)
        before = answers({"url": influxd.url, "db": database, "now_ms": now_ms})
        assert store.delete_run("mnist", DELETED, entries[DELETED])
    finally:
        store.close()
    return {"url": influxd.url, "db": database, "now_ms": now_ms, "before": before}


def _influxql(influx: dict[str, Any], text: str, from_ms: int, to_ms: int) -> list[dict[str, Any]]:
    return influxql_series(influx["url"], influx["db"], influxql_macros(text, from_ms, to_ms, 1000))


def _runs_in(series: list[dict[str, Any]]) -> set[str]:
    """The runs an answer holds: in its tags, or as values of a run variable's query."""
    runs = {decode_tag(s["tags"]["run"]) for s in series if "run" in s.get("tags", {})}
    return runs | {decode_tag(v[1]) for s in series if s["columns"] == ["key", "value"] for v in s["values"]
                   if v[0] == "run"}


def answers(influx: dict[str, Any]) -> dict[str, set[str]]:
    """The runs each dashboard and alert rule query answers about, over the last hour."""
    now = influx["now_ms"]
    out = {}
    for name, flavours in query_library().items():
        text = interpolate_variables(flavours["influxql"], SELECTION, {"group": ".*", "run": ".*", "metric": ".*"})
        if name == "alert_annotations":  # rows without tags: GROUP BY * shows each row's run
            text = text.replace("AND $timeFilter", "AND $timeFilter GROUP BY *")
        out[name] = _runs_in(_influxql(influx, text, now - 3_600_000, now + 1000))
    rules = yaml.safe_load((PROVISIONING_DIR / "alerting" / "curvestream.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            source = next(q for q in rule["data"] if q["datasourceUid"] != "__expr__")
            seconds = source["relativeTimeRange"]["from"]
            out["rule " + rule["uid"]] = _runs_in(_influxql(influx, source["model"]["query"], now - seconds * 1000,
                                                            now + 1000))
    return out


def test_every_grafana_query_answers_nothing_of_a_deleted_run(influx) -> None:
    before = influx["before"]
    assert {name for name, runs in before.items() if runs == {DELETED, KEPT}} >= \
        {"run_values", "curves_m4", "nonfinite_count", "system_m4", "alert_annotations",
         "rule curvestream-alert-firing"}
    after = answers(influx)
    assert set(after) == set(before)
    for name, runs in before.items():
        assert after[name] == runs - {DELETED}, name
