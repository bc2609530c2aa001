"""The bridge's alerts for Grafana, on the real InfluxDB 1.6.7: the
annotation query of the dashboards returns the alerts the bridge's
InfluxStore wrote, and the provisioned alert rules are well-formed Grafana
file provisioning whose queries, run as Grafana runs them, fire on a firing
alert and on NaN points and stay quiet otherwise."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from curvestream_bridge.alerts.engine import AlertEngine
from curvestream_bridge.alerts.rules import parse_rules
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store.influx.lineproto import decode_tag
from curvestream_bridge.store.influx.store import InfluxStore
from grafana_kit import PROVISIONING_DIR, influxql_macros, interpolate_variables, query_library

RULES_FILE = PROVISIONING_DIR / "alerting" / "curvestream.yaml"
DATASOURCES_FILE = PROVISIONING_DIR / "datasources" / "curvestream.yaml"
RUN, OTHER = "lr=0.1 (warm-up)", "quiet"


@pytest.fixture(scope="module")
def influx(influxd: Any) -> dict[str, Any]:
    """A NaN run evaluated by the engine and stored through InfluxStore, alerts included."""
    database = "alert_queries"
    store = InfluxStore(influxd.store_url(database))
    now_ms = int(time.time() * 1000)
    steps = np.arange(100, dtype=np.int64)
    wall = (now_ms - 60_000 + steps * 100) * 1_000_000
    values = np.where(steps == 60, np.nan, 1.0 / (steps + 1))
    engine = AlertEngine(parse_rules("rules: [{name: nonfinite, kind: nonfinite}]"))
    batches = [DecodedBatch(b"q" * 16, 1, "mnist", RUN, [ScalarColumn("train/loss", steps, wall, values)], [], [],
                            None, None, 0),
               DecodedBatch(b"q" * 16, 2, "mnist", OTHER, [ScalarColumn("train/loss", steps, wall, np.ones(100))], [],
                            [], None, None, 0)]
    try:
        store.write(batches)
        changes = engine.evaluate(batches)
        store.save_alert_state(changes.entries, [a.to_json() for a in changes.alerts])
        assert store.load_alert_state() == changes.entries  # the engine's state reads back exactly
    finally:
        store.close()
    return {"url": influxd.url, "db": database, "now_ms": now_ms, "alerts": [a.to_json() for a in changes.alerts]}


def influxql(influx: dict[str, Any], text: str, from_ms: int, to_ms: int) -> list[dict[str, Any]]:
    query = influxql_macros(text, from_ms, to_ms, 1000)
    resp = httpx.post(f"{influx['url']}/query", data={"db": influx["db"], "q": query, "epoch": "ms"}, timeout=60)
    resp.raise_for_status()
    (result,) = resp.json()["results"]
    assert "error" not in result, (result["error"], query)
    return result.get("series", [])


def test_the_annotation_query_returns_the_alerts_of_the_selected_runs_with_their_message(influx) -> None:
    text = interpolate_variables(query_library()["alert_annotations"]["influxql"],
                                 {"project": "mnist", "run": [RUN]}, {"run": ".*"})
    (series,) = influxql(influx, text, influx["now_ms"] - 3_600_000, influx["now_ms"])
    rows = [dict(zip(series["columns"], v)) for v in series["values"]]
    expected = influx["alerts"]
    assert [(r["state"], r["step"], r["message"], decode_tag(r["metric"])) for r in rows] == \
        [(a["state"], a["step"], a["message"], a["key"]) for a in expected]
    assert rows[0]["time"] == expected[0]["time_ns"] // 1_000_000  # at the point that raised it
    assert rows[0]["message"] == "train/loss became NaN at step 60 (last finite value 0.01667 at step 59)"
    quiet = interpolate_variables(query_library()["alert_annotations"]["influxql"],
                                  {"project": "mnist", "run": [OTHER]}, {"run": ".*"})
    assert influxql(influx, quiet, influx["now_ms"] - 3_600_000, influx["now_ms"]) == []


def provisioned_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES_FILE.read_text())
    assert doc["apiVersion"] == 1
    return [rule for group in doc["groups"] for rule in group["rules"]]


DURATION = re.compile(r"^\d+(ms|s|m|h|d)$")
EXPRESSIONS = {"reduce": {"expression", "reducer"}, "threshold": {"expression", "conditions"},
               "math": {"expression"}}


def test_the_alert_rules_file_is_grafana_file_provisioning_with_sound_rules() -> None:
    doc = yaml.safe_load(RULES_FILE.read_text())
    sources = {d["uid"]: d for d in yaml.safe_load(DATASOURCES_FILE.read_text())["datasources"]}
    uids = set()
    for group in doc["groups"]:
        assert set(group) == {"orgId", "name", "folder", "interval", "rules"} and DURATION.match(group["interval"])
        for rule in group["rules"]:
            assert set(rule) <= {"uid", "title", "condition", "data", "noDataState", "execErrState", "for", "labels",
                                 "annotations", "isPaused", "missing_series_evals_to_resolve"}
            # how a series that stops appearing resolves is said, never left to Grafana's default
            assert (
                isinstance(rule["missing_series_evals_to_resolve"], int) and rule["missing_series_evals_to_resolve"] > 0
            )
            assert rule["uid"] not in uids and len(rule["uid"]) <= 40
            uids.add(rule["uid"])
            assert rule["noDataState"] in ("Alerting", "NoData", "OK")
            assert rule["execErrState"] in ("OK", "Alerting", "Error")
            assert DURATION.match(rule["for"])
            refs = [q["refId"] for q in rule["data"]]
            assert len(set(refs)) == len(refs) and rule["condition"] in refs
            for q in rule["data"]:
                model = q["model"]
                assert model["refId"] == q["refId"]
                if q["datasourceUid"] == "__expr__":
                    assert model["datasource"] == {"type": "__expr__", "uid": "__expr__"}
                    assert EXPRESSIONS[model["type"]] <= set(model)
                    assert model["expression"] in refs[:refs.index(q["refId"])]  # refers back, never forward
                else:
                    source = sources[q["datasourceUid"]]
                    assert model["datasource"] == {"type": source["type"], "uid": source["uid"]}
                    assert source["jsonData"]["version"] == "InfluxQL" and model["rawQuery"] is True
                    assert q["relativeTimeRange"]["from"] > q["relativeTimeRange"]["to"] >= 0


def rule_query(uid: str) -> tuple[str, int]:
    rule = next(r for r in provisioned_rules() if r["uid"] == uid)
    source = next(q for q in rule["data"] if q["datasourceUid"] != "__expr__")
    return source["model"]["query"], source["relativeTimeRange"]["from"]


def evaluate(influx: dict[str, Any], uid: str, at_ms: int | None = None) -> dict[tuple[str, ...], float]:
    """The rule's query as Grafana runs it at ``at_ms`` (default: now), over its relative
    time range, then its reduce (last/sum) per series."""
    rule = next(r for r in provisioned_rules() if r["uid"] == uid)
    reducer = next(q["model"]["reducer"] for q in rule["data"] if q["model"].get("type") == "reduce")
    text, seconds = rule_query(uid)
    now = influx["now_ms"] if at_ms is None else at_ms
    out = {}
    for s in influxql(influx, text, now - seconds * 1000, now + 1000):
        values = [v[1] for v in s["values"] if v[1] is not None]
        tags = tuple(decode_tag(s["tags"][k]) for k in sorted(s["tags"]))
        out[tags] = values[-1] if reducer == "last" else sum(values)
    return out


def _evaluated(influx: dict[str, Any], seq: int, run: str, value: float, at_ms: int) -> None:
    """One point of ``run`` at ``at_ms`` through the store and the alert engine (its state restored), as the
    bridge does."""
    db = InfluxStore(f"influxdb://{influx['url'].split('//')[1]}/{influx['db']}")
    try:
        engine = AlertEngine(parse_rules("rules: [{name: nonfinite, kind: nonfinite}]"))
        engine.restore(db.load_alert_state())
        wall = np.array([at_ms * 1_000_000], dtype=np.int64)
        batch = DecodedBatch(b"q" * 16, seq, "mnist", run, [ScalarColumn("train/loss", np.array([100 + seq]), wall,
                                                                        np.array([value]))], [], [], None, None, 0)
        db.write([batch])
        changes = engine.evaluate([batch])
        db.save_alert_state(changes.entries, [a.to_json() for a in changes.alerts])
    finally:
        db.close()


def test_the_firing_rule_fires_while_the_bridge_says_so_whatever_its_age_and_resolves_when_the_bridge_does(
        influx) -> None:
    # tags sorted by name: metric, project, rule, run
    here = ("train/loss", "mnist", "nonfinite", RUN)
    assert evaluate(influx, "curvestream-alert-firing") == {here: 0}  # the NaN resolved at the next finite point
    _evaluated(influx, 3, RUN, np.inf, influx["now_ms"] - 1_000)  # a second one leaves it firing
    assert evaluate(influx, "curvestream-alert-firing") == {here: 1}
    later = influx["now_ms"] + 25 * 3_600_000  # a day and an hour on, nothing new: still firing, still there
    assert evaluate(influx, "curvestream-alert-firing", later) == {here: 1}
    _evaluated(influx, 4, RUN, 0.5, influx["now_ms"])  # a finite point: the bridge resolves it
    assert evaluate(influx, "curvestream-alert-firing", later) == {here: 0}


def test_the_nonfinite_rule_counts_nan_points_of_the_last_five_minutes_per_run(influx) -> None:
    counts = evaluate(influx, "curvestream-nonfinite")
    assert {k: v for k, v in counts.items() if v > 0} == {("train/loss", "mnist", RUN): 2}
