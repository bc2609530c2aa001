#!/usr/bin/env python3
"""Dashboards as code: writes the provisioned Grafana dashboards from the query
library in ``grafana/queries/``, built with Grafana's own typed builders
(grafana-foundation-sdk).

    python grafana/dashboards/generate.py          # rewrite the JSON files
    python grafana/dashboards/generate.py --check  # exit 1 if they are stale

One dashboard per query flavour, each on its own data source:

- ``curvestream-flux.json``: InfluxDB 2 in Flux mode;
- ``curvestream-influxql.json``: the same InfluxDB 2 through its v1 DBRP mapping;
- ``../../influxdb3/curvestream-sql.json``: InfluxDB 3 in SQL mode (outside the compose
  kit's provisioning, which runs InfluxDB 2; with its data source in ``grafana/influxdb3/``).

All have the same variables (project; group, run and metric, multi-select
with "All": the runs of the chosen groups, every one of them for "All" runs, in
one query per panel) and the same panels: M4-downsampled curves as Grafana time series and
as the curvestream panel, one of each per metric (repeated by ``$metric``),
non-finite values per window, the bridge's Grafana Live stream, and a row of
the runs' system metrics (keys under ``system/``, repeated by
``$system_metric``; the ``metric`` variable leaves them out); the
bridge's alerts (measurement ``cs_alert``) are annotations.
``dashboard(flavour, extra_panels=..., annotations=...)`` takes more panels
and annotation queries (builders) for callers that add their own.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

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
    "sql": {
        "title": "curvestream: training curves (InfluxDB 3, SQL)",
        "uid": "curvestream-curves-sql",
        "datasource": {"type": "influxdb", "uid": "curvestream-influxdb-sql"},
    },
}
INFLUXDB3_DIR = GRAFANA / "influxdb3"

M4_NOTE = (
    "M4 downsampling: for every window of Grafana's interval (about one pixel column) the first, last, "
    "minimum and maximum point, so the line is the line of all points and a single spike stays visible."
)


def load_query(name: str, flavour: str) -> str:
    return (QUERIES / f"{name}.{flavour}").read_text(encoding="utf-8").strip()


def datasource(ref: dict[str, str]) -> model.DataSourceRef:
    return model.DataSourceRef(type_val=ref["type"], uid=ref["uid"])


class _Query(cogvariants.Dataquery):
    """A panel query of a data source the SDK has no types for (InfluxDB, Grafana Live)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


class Query(cogbuilder.Builder[cogvariants.Dataquery]):
    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def build(self) -> cogvariants.Dataquery:
        return _Query(self.fields)


def target(flavour: str, name: str, ref_id: str = "A") -> Query:
    ds = FLAVOURS[flavour]["datasource"]
    query = load_query(name, flavour)
    if flavour == "flux":
        return Query(refId=ref_id, datasource=ds, query=query)
    if flavour == "sql":
        return Query(refId=ref_id, datasource=ds, rawSql=query, format="time_series", rawQuery=True, editorMode="code")
    return Query(refId=ref_id, datasource=ds, query=query, rawQuery=True, resultFormat="time_series")


def variable(flavour: str, name: str, label: str, query_name: str, *, multi: bool, regex: str = "",
             all_value: str | None = ".*") -> dash.QueryVariable:
    """A variable whose options a library query lists, those ``regex`` keeps (Grafana's filter
    of the answer); ``multi``: several at once and "All", sent as ``all_value`` as is (not
    regex-escaped: /^.*$/ instead of a long alternation) or, when None, as the options."""
    query = load_query(query_name, flavour)
    var = (dash.QueryVariable(name).label(label).datasource(datasource(FLAVOURS[flavour]["datasource"]))
           .query(query).refresh(model.VariableRefresh.ON_DASHBOARD_LOAD)
           .sort(model.VariableSort.ALPHABETICAL_ASC).regex(regex).hide(model.VariableHide.DONT_HIDE)
           .multi(multi).include_all(multi).options([]).current(model.VariableOption()))
    if multi:
        var.current(model.VariableOption(selected=True, text=["All"], value=["$__all"]))
        if all_value is not None:
            var.all_value(all_value)
    return var


def grid(h: int, w: int = 24) -> model.GridPos:
    return model.GridPos(h=h, w=w, x=0, y=0)


def legend_and_tooltip(panel: timeseries.Panel) -> timeseries.Panel:
    return (panel.legend(common_builders.VizLegendOptions().display_mode(common.LegendDisplayMode.LIST)
                         .placement(common.LegendPlacement.BOTTOM).show_legend(True))
            .tooltip(common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI)
                     .sort(common.SortOrder.DESCENDING)))


def curvestream_options(**overrides: Any) -> dict[str, Any]:
    """The panel plugin's options (its PanelOptions), from the dashboards' defaults."""
    return {"xAxis": "time", "stepField": "step", "seriesName": "${run}", "smoothing": 0.6, "smoothingKind": "ema",
            "showEnvelope": True, "logY": False, "ignoreOutliers": False, "zoomSlider": False,
            "zoomSetsTimeRange": True, **overrides}


def timeseries_panel(flavour: str) -> timeseries.Panel:
    """The M4 curves of one metric as a Grafana time series, repeated for every selected metric."""
    panel = (timeseries.Panel().title("${metric}").description(M4_NOTE)
             .datasource(datasource(FLAVOURS[flavour]["datasource"])).repeat("metric").repeat_direction("h")
             .grid_pos(grid(9, 12)).with_target(target(flavour, "curves_m4"))
             .display_name("${__field.labels.run}").draw_style(common.GraphDrawStyle.LINE).line_width(1)
             .show_points(common.VisibilityMode.NEVER).span_nulls(True).fill_opacity(0))
    return legend_and_tooltip(panel)


def plugin_panel(title: str, ref: dict[str, str], query: Query, options: dict[str, Any], h: int) -> dash.Panel:
    return (dash.Panel().type(PANEL_PLUGIN_ID).title(title).datasource(datasource(ref)).grid_pos(grid(h))
            .with_target(query).options(options).field_config(model.FieldConfigSource(defaults=model.FieldConfig(),
                                                                                       overrides=[])))


def curvestream_panel(flavour: str) -> dash.Panel:
    note = M4_NOTE + " Smoothing keeps a min/max band, so spikes stay visible while smoothed."
    return (plugin_panel("${metric}", FLAVOURS[flavour]["datasource"], target(flavour, "curves_m4"),
                         curvestream_options(), 9)
            .description(note).repeat("metric").repeat_direction("h").grid_pos(grid(9, 12)))


def nonfinite_panel(flavour: str) -> timeseries.Panel:
    panel = (timeseries.Panel().title("NaN and ±Inf values per window")
             .description("Points logged as NaN, +Inf or -Inf are stored without a value (field nonfinite = 1, 2, 3); "
                          "the curves above skip them, this panel counts them.")
             .datasource(datasource(FLAVOURS[flavour]["datasource"])).grid_pos(grid(6))
             .with_target(target(flavour, "nonfinite_count"))
             .display_name("${__field.labels.run} ${__field.labels.metric}").decimals(0)
             .draw_style(common.GraphDrawStyle.BARS).fill_opacity(80).line_width(1)
             .show_points(common.VisibilityMode.NEVER))
    return legend_and_tooltip(panel)


SYSTEM_KEYS = r"/^system\//"
"""The system metrics a trainer records (``curvestream.system_metrics``): drawn in a row of their own."""
TRAINING_KEYS = r"/^(?!system\/)/"


def system_panel(flavour: str) -> timeseries.Panel:
    """One system metric of the runs (CPU, memory, disk, network, each GPU), repeated for every one
    selected (``$system_metric``)."""
    panel = (timeseries.Panel().title("${system_metric}")
             .description("Sampled by the trainer's client every 10 s (CURVESTREAM_SYSTEM_METRICS=0 turns it off): "
                          "few points, so each window's first, last, minimum and maximum come from the raw points.")
             .datasource(datasource(FLAVOURS[flavour]["datasource"])).repeat("system_metric").repeat_direction("h")
             .grid_pos(grid(7, 8)).with_target(target(flavour, "system_m4"))
             .display_name("${__field.labels.run}").draw_style(common.GraphDrawStyle.LINE).line_width(1)
             .show_points(common.VisibilityMode.NEVER).span_nulls(True).fill_opacity(0))
    return legend_and_tooltip(panel)


def live_panel() -> dash.Panel:
    query = Query(refId="A", datasource=GRAFANA_DATASOURCE, queryType="measurements", channel=LIVE_CHANNEL,
                  buffer=60000)
    return plugin_panel("Live points (Grafana Live push from the bridge)", GRAFANA_DATASOURCE, query,
                        curvestream_options(seriesName="${run} ${metric}", smoothing=0, zoomSetsTimeRange=False),
                        9).description(
        "Set CURVESTREAM_GRAFANA_LIVE_URL and CURVESTREAM_GRAFANA_LIVE_TOKEN on the bridge "
        "(see compose/README.md); every run's new points then arrive here as they are stored.")


def dashboard(flavour: str, extra_panels: Sequence[tuple[str, cogbuilder.Builder[Any]]] = (),
              annotations: Sequence[dash.AnnotationQuery] = ()) -> dash.Dashboard:
    """The dashboard of one flavour; ``extra_panels``: (row title, panel) pairs appended after the others."""
    spec = FLAVOURS[flavour]
    layout: list[tuple[str, cogbuilder.Builder[Any]]] = [
        ("Curves: Grafana time series", timeseries_panel(flavour)),
        ("Curves: curvestream panel", curvestream_panel(flavour)),
        ("Non-finite values", nonfinite_panel(flavour)),
        ("Live", live_panel()),
        ("System: CPU, memory, disk, network, GPUs", system_panel(flavour)),
        *extra_panels,
    ]
    board = (dash.Dashboard(spec["title"]).uid(spec["uid"])
             .description("Training curves written by the curvestream bridge (rollups of measurement cs_scalar). "
                          + M4_NOTE)
             .tags(["curvestream", flavour]).editable().tooltip(model.DashboardCursorSync.CROSSHAIR)
             .timezone("browser").time("now-24h", "now").refresh("30s").version(1).links([]))
    for var in (variable(flavour, "project", "Project", "project_values", multi=False),
                variable(flavour, "group", "Group", "group_values", multi=True),
                variable(flavour, "run", "Run", "run_values", multi=True, all_value=None),
                variable(flavour, "metric", "Metric", "metric_values", multi=True, regex=TRAINING_KEYS),
                variable(flavour, "system_metric", "System metric", "metric_values", multi=True, regex=SYSTEM_KEYS,
                         all_value=None)):
        board.with_variable(var)
    for annotation in annotations:
        board.annotation(annotation)
    for title, panel in layout:
        board.with_row(dash.Row(title))
        board.with_panel(panel)
    return board


def as_json(built: Any) -> Any:
    """A built SDK object as the plain JSON data Grafana takes."""
    return json.loads(json.dumps(built, cls=JSONEncoder))


def dashboard_json(flavour: str) -> dict[str, Any]:
    doc = as_json(dashboard(flavour).build())
    doc["schemaVersion"] = SCHEMA_VERSION
    for i, panel in enumerate(doc["panels"], start=1):  # stable ids in layout order
        panel["id"] = i
    doc.setdefault("annotations", {}).setdefault("list", []).append(alert_annotation(flavour))
    return doc


def alert_annotation(flavour: str) -> dict[str, Any]:
    """The bridge's alerts (measurement cs_alert) as annotations on every time panel.

    Built with the SDK's ``AnnotationQuery``; its query is the data source's own
    query in ``target`` (the form Grafana's InfluxDB source migrates legacy
    annotations into, ``prepareAnnotation``). The SDK types ``target`` as the
    built-in Grafana source's (limit, matchAny, tags, type; its schema says
    "this should just be a normal query target"), so the target is set on the
    built JSON and checked as a data query (``grafana_sync.sdk_round_trip``).
    """
    query = load_query("alert_annotations", flavour)
    doc = as_json(dash.AnnotationQuery().name("curvestream alerts")
                  .datasource(datasource(FLAVOURS[flavour]["datasource"])).enable(True).hide(False)
                  .icon_color("red").build())
    if flavour == "sql":
        doc["target"] = {"refId": "Anno", "rawSql": query, "format": "table", "rawQuery": True,
                         "editorMode": "code", "fromAnnotations": True, "textColumn": "message",
                         "tagsColumn": "kind,state,metric"}
        return doc
    doc["target"] = {"refId": "Anno", "query": query, "rawQuery": True, "resultFormat": "table",
                     "queryType": "tags", "fromAnnotations": True,
                     "textColumn": "message" if flavour == "influxql" else "_value",
                     "tagsColumn": "kind,state,metric"}
    return doc


def render(flavour: str) -> str:
    return json.dumps(dashboard_json(flavour), indent=2, ensure_ascii=False) + "\n"


def outputs() -> dict[pathlib.Path, str]:
    return {(INFLUXDB3_DIR if flavour == "sql" else OUT_DIR) / f"curvestream-{flavour}.json": render(flavour)
            for flavour in FLAVOURS}


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
