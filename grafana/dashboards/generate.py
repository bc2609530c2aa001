#!/usr/bin/env python3
"""Dashboards as code: writes the provisioned Grafana dashboards from the query
library in ``grafana/queries/`` (standard library only).

    python grafana/dashboards/generate.py          # rewrite the JSON files
    python grafana/dashboards/generate.py --check  # exit 1 if they are stale

One dashboard per query flavour, each on its own data source:

- ``curvestream-flux.json``: InfluxDB 2 in Flux mode;
- ``curvestream-influxql.json``: the same InfluxDB 2 through its v1 DBRP mapping.

Both have the same variables (project; run and metric, multi-select with
"All") and the same panels: M4-downsampled curves as Grafana time series and
as the curvestream panel, one of each per metric (repeated by ``$metric``),
non-finite values per window, and the bridge's Grafana Live stream; the
bridge's alerts (measurement ``cs_alert``) are annotations.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
GRAFANA = HERE.parent
QUERIES = GRAFANA / "queries"
OUT_DIR = GRAFANA / "provisioning" / "dashboards" / "curvestream"

PANEL_PLUGIN_ID = "curvestream-echarts-panel"
LIVE_CHANNEL = "stream/curvestream/curvestream"  # bridge: grafana_live_stream "curvestream", measurement "curvestream"
GRAFANA_DATASOURCE = {"type": "datasource", "uid": "grafana"}  # Grafana's built-in source (Live measurements)
SCHEMA_VERSION = 41

FLAVOURS: dict[str, dict[str, Any]] = {
    "flux": {
        "title": "curvestream: training curves (Flux)",
        "uid": "curvestream-curves-flux",
        "datasource": {"type": "influxdb", "uid": "curvestream-influxdb-flux"},
    },
    "influxql": {
        "title": "curvestream: training curves (InfluxQL)",
        "uid": "curvestream-curves-influxql",
        "datasource": {"type": "influxdb", "uid": "curvestream-influxdb-influxql"},
    },
}

M4_NOTE = (
    "M4 downsampling: for every window of Grafana's interval (about one pixel column) the first, last, "
    "minimum and maximum point, so the line is the line of all points and a single spike stays visible."
)


def load_query(name: str, flavour: str) -> str:
    return (QUERIES / f"{name}.{flavour}").read_text(encoding="utf-8").strip()


def target(flavour: str, name: str, ref_id: str = "A") -> dict[str, Any]:
    ds = FLAVOURS[flavour]["datasource"]
    query = load_query(name, flavour)
    if flavour == "flux":
        return {"refId": ref_id, "datasource": ds, "query": query}
    return {"refId": ref_id, "datasource": ds, "query": query, "rawQuery": True, "resultFormat": "time_series"}


def variable(flavour: str, name: str, label: str, query_name: str, *, multi: bool) -> dict[str, Any]:
    query = load_query(query_name, flavour)
    var: dict[str, Any] = {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": FLAVOURS[flavour]["datasource"],
        "query": query,
        "definition": query,
        "refresh": 1,
        "sort": 1,
        "regex": "",
        "hide": 0,
        "skipUrlSync": False,
        "multi": multi,
        "includeAll": multi,
        "options": [],
        "current": {},
    }
    if multi:
        # A custom "All" is sent as-is (not regex-escaped): /^.*$/ instead of a long alternation.
        var["allValue"] = ".*"
        var["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    return var


def row(title: str, y: int, panel_id: int) -> dict[str, Any]:
    return {"type": "row", "id": panel_id, "title": title, "collapsed": False,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []}


TIMESERIES_OPTIONS = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                      "tooltip": {"mode": "multi", "sort": "desc"}}


def curvestream_options(**overrides: Any) -> dict[str, Any]:
    """The panel plugin's options (its PanelOptions), from the dashboards' defaults."""
    return {"xAxis": "time", "stepField": "step", "seriesName": "${run}", "smoothing": 0.6, "smoothingKind": "ema",
            "showEnvelope": True, "logY": False, "ignoreOutliers": False, "zoomSlider": False,
            "zoomSetsTimeRange": True, **overrides}


def per_metric_panel(flavour: str, panel_type: str, panel_id: int, y: int, description: str) -> dict[str, Any]:
    """A panel of the M4 curves of one metric, repeated for every selected metric."""
    return {
        "type": panel_type,
        "id": panel_id,
        "title": "${metric}",
        "description": description,
        "datasource": FLAVOURS[flavour]["datasource"],
        "repeat": "metric",
        "repeatDirection": "h",
        "maxPerRow": 2,
        "gridPos": {"h": 9, "w": 12, "x": 0, "y": y},
        "targets": [target(flavour, "curves_m4")],
    }


def timeseries_panel(flavour: str, panel_id: int, y: int) -> dict[str, Any]:
    panel = per_metric_panel(flavour, "timeseries", panel_id, y, M4_NOTE)
    panel["fieldConfig"] = {
        "defaults": {
            "displayName": "${__field.labels.run}",
            "custom": {"drawStyle": "line", "lineWidth": 1, "showPoints": "never", "spanNulls": True,
                       "fillOpacity": 0},
        },
        "overrides": [],
    }
    panel["options"] = TIMESERIES_OPTIONS
    return panel


def curvestream_panel(flavour: str, panel_id: int, y: int) -> dict[str, Any]:
    note = M4_NOTE + " Smoothing keeps a min/max band, so spikes stay visible while smoothed."
    panel = per_metric_panel(flavour, PANEL_PLUGIN_ID, panel_id, y, note)
    panel["options"] = curvestream_options()
    panel["fieldConfig"] = {"defaults": {}, "overrides": []}
    return panel


def nonfinite_panel(flavour: str, panel_id: int, y: int) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "id": panel_id,
        "title": "NaN and ±Inf values per window",
        "description": "Points logged as NaN, +Inf or -Inf are stored without a value (field nonfinite = 1, 2, 3); "
                       "the curves above skip them, this panel counts them.",
        "datasource": FLAVOURS[flavour]["datasource"],
        "gridPos": {"h": 6, "w": 24, "x": 0, "y": y},
        "targets": [target(flavour, "nonfinite_count")],
        "fieldConfig": {
            "defaults": {
                "displayName": "${__field.labels.run} ${__field.labels.metric}",
                "decimals": 0,
                "custom": {"drawStyle": "bars", "fillOpacity": 80, "lineWidth": 1, "showPoints": "never"},
            },
            "overrides": [],
        },
        "options": TIMESERIES_OPTIONS,
    }


def live_panel(panel_id: int, y: int) -> dict[str, Any]:
    return {
        "type": PANEL_PLUGIN_ID,
        "id": panel_id,
        "title": "Live points (Grafana Live push from the bridge)",
        "description": "Set CURVESTREAM_GRAFANA_LIVE_URL and CURVESTREAM_GRAFANA_LIVE_TOKEN on the bridge "
                       "(see compose/README.md); every run's new points then arrive here as they are stored.",
        "datasource": GRAFANA_DATASOURCE,
        "gridPos": {"h": 9, "w": 24, "x": 0, "y": y},
        "targets": [{"refId": "A", "datasource": GRAFANA_DATASOURCE, "queryType": "measurements",
                     "channel": LIVE_CHANNEL, "buffer": 60000}],
        "options": curvestream_options(seriesName="${run} ${metric}", smoothing=0, zoomSetsTimeRange=False),
        "fieldConfig": {"defaults": {}, "overrides": []},
    }


def dashboard(flavour: str) -> dict[str, Any]:
    spec = FLAVOURS[flavour]
    layout = [
        lambda i, y: row("Curves: Grafana time series", y, i),
        lambda i, y: timeseries_panel(flavour, i, y),
        lambda i, y: row("Curves: curvestream panel", y, i),
        lambda i, y: curvestream_panel(flavour, i, y),
        lambda i, y: row("Non-finite values", y, i),
        lambda i, y: nonfinite_panel(flavour, i, y),
        lambda i, y: row("Live", y, i),
        live_panel,
    ]
    panels: list[dict[str, Any]] = []
    y = 0
    for build in layout:
        panel = build(len(panels) + 1, y)
        panels.append(panel)
        y += panel["gridPos"]["h"]
    return {
        "uid": spec["uid"],
        "title": spec["title"],
        "description": "Training curves written by the curvestream bridge (measurement cs_scalar). " + M4_NOTE,
        "tags": ["curvestream", flavour],
        "editable": True,
        "graphTooltip": 1,
        "timezone": "browser",
        "time": {"from": "now-24h", "to": "now"},
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "links": [],
        "annotations": {"list": [alert_annotation(flavour)]},
        "templating": {"list": [
            variable(flavour, "project", "Project", "project_values", multi=False),
            variable(flavour, "run", "Run", "run_values", multi=True),
            variable(flavour, "metric", "Metric", "metric_values", multi=True),
        ]},
        "panels": panels,
    }


def alert_annotation(flavour: str) -> dict[str, Any]:
    """The bridge's alerts (measurement cs_alert) as annotations on every time panel."""
    query = load_query("alert_annotations", flavour)
    return {
        "name": "curvestream alerts",
        "datasource": FLAVOURS[flavour]["datasource"],
        "enable": True,
        "hide": False,
        "iconColor": "red",
        "query": query,
        "target": {"refId": "Anno", "query": query, "rawQuery": True, "resultFormat": "table"},
        "textColumn": "message" if flavour == "influxql" else "_value",
        "tagsColumn": "kind,state,metric",
    }


def render(flavour: str) -> str:
    return json.dumps(dashboard(flavour), indent=2, ensure_ascii=False) + "\n"


def outputs() -> dict[pathlib.Path, str]:
    return {OUT_DIR / f"curvestream-{flavour}.json": render(flavour) for flavour in FLAVOURS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed dashboard differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'} {path.relative_to(GRAFANA.parent)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
