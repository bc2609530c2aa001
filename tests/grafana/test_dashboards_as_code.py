"""grafana/: the provisioned dashboards are exactly what the generator writes, use
only provisioned data sources and defined variables, and run the query library's
queries; the provisioning agrees with the bridge and the panel plugin."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
from typing import Any

import numpy as np
import pytest
import yaml

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.grafana_live import live_lines
from curvestream_bridge.settings import BridgeSettings
from grafana_kit import GRAFANA_DIR, PROVISIONING_DIR, REPO, query_library, referenced_variables, walk_panels

DASHBOARD_DIR = PROVISIONING_DIR / "dashboards" / "curvestream"
PLUGIN_JSON = REPO / "panels" / "echarts-plugin" / "src" / "grafana" / "plugin.json"
BUILT_IN_DATASOURCES = {"grafana"}  # Grafana's own source: Live measurements


@pytest.fixture(scope="module")
def generator() -> Any:
    path = GRAFANA_DIR / "dashboards" / "generate.py"
    spec = importlib.util.spec_from_file_location("curvestream_dashboards_generate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(DASHBOARD_DIR.glob("*.json"))}


@pytest.fixture(scope="module")
def datasources() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((PROVISIONING_DIR / "datasources" / "curvestream.yaml").read_text())
    return {d["uid"]: d for d in doc["datasources"]}


def test_committed_dashboards_are_exactly_the_generators_output(generator) -> None:
    expected = generator.outputs()
    committed = sorted([*DASHBOARD_DIR.glob("*.json"), *(GRAFANA_DIR / "influxdb3").glob("*.json")])
    assert sorted(expected) == committed, "a dashboard file is missing or left over"
    for path, text in expected.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run grafana/dashboards/generate.py"
    assert generator.main(["--check"]) == 0


def test_the_generator_builds_with_grafanas_foundation_sdk_and_the_standard_library_only(generator) -> None:
    source = (GRAFANA_DIR / "dashboards" / "generate.py").read_text()
    imported = {line.split()[1].split(".")[0] for line in source.splitlines()
                if line.startswith(("import ", "from ")) and not line.startswith("from __future__")}
    assert imported - set(sys.stdlib_module_names) == {"grafana_foundation_sdk"}
    from grafana_foundation_sdk.models.dashboard import Dashboard

    assert isinstance(generator.dashboard("influxql").build(), Dashboard)  # the SDK's own typed model


def test_dashboards_are_well_formed_with_unique_ids_and_a_stable_uid(dashboards) -> None:
    assert set(dashboards) == {"curvestream-flux.json", "curvestream-influxql.json"}
    uids = [d["uid"] for d in dashboards.values()]
    assert len(set(uids)) == len(uids) and all(uid.startswith("curvestream-") for uid in uids)
    for name, dashboard in dashboards.items():
        panels = list(walk_panels(dashboard["panels"]))
        ids = [p["id"] for p in panels]
        assert len(set(ids)) == len(ids), name
        for p in panels:
            grid = p["gridPos"]
            assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, (name, p["title"])


def test_every_panel_and_query_uses_a_provisioned_data_source(dashboards, datasources) -> None:
    known = set(datasources) | BUILT_IN_DATASOURCES
    for name, dashboard in dashboards.items():
        for panel in walk_panels(dashboard["panels"]):
            refs = [panel.get("datasource")] + [t.get("datasource") for t in panel.get("targets", [])]
            for ref in filter(None, refs):
                assert ref["uid"] in known, (name, panel["title"], ref)
                if ref["uid"] in datasources:
                    assert ref["type"] == datasources[ref["uid"]]["type"]
        for var in dashboard["templating"]["list"]:
            assert var["datasource"]["uid"] in datasources, (name, var["name"])


def test_each_dashboard_queries_one_flavour_through_the_matching_source(dashboards, datasources) -> None:
    for flavour, version in (("flux", "Flux"), ("influxql", "InfluxQL")):
        dashboard = dashboards[f"curvestream-{flavour}.json"]
        uids = {t["datasource"]["uid"] for p in walk_panels(dashboard["panels"]) for t in p.get("targets", [])}
        uids |= {v["datasource"]["uid"] for v in dashboard["templating"]["list"]}
        uids -= BUILT_IN_DATASOURCES
        assert [datasources[uid]["jsonData"]["version"] for uid in uids] == [version]


def test_every_variable_referenced_is_defined(dashboards) -> None:
    for name, dashboard in dashboards.items():
        defined = [v["name"] for v in dashboard["templating"]["list"]]
        assert defined == ["project", "group", "run", "metric", "system_metric"]
        texts = [json.dumps(dashboard["panels"]), json.dumps([v["query"] for v in dashboard["templating"]["list"]])]
        used = set().union(*(referenced_variables(t) for t in texts))
        assert used and used <= set(defined), (name, used - set(defined))
        for i, var in enumerate(dashboard["templating"]["list"]):
            assert referenced_variables(var["query"]) <= set(defined[:i]), f"{var['name']} depends on a later one"


def test_runs_and_metrics_are_multi_select_and_panels_repeat_per_metric(dashboards) -> None:
    for _name, dashboard in dashboards.items():
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert not variables["project"]["multi"]
        for multi in ("group", "run", "metric"):
            assert variables[multi]["multi"] and variables[multi]["includeAll"]
        assert variables["group"]["allValue"] == variables["metric"]["allValue"] == ".*"
        # "All" runs: the runs the variable lists (those of the chosen groups), not every run of the project
        assert variables["run"].get("allValue") is None
        # each variable after those it names
        assert list(variables) == ["project", "group", "run", "metric", "system_metric"]
        repeated = [p for p in walk_panels(dashboard["panels"]) if p.get("repeat") == "metric"]
        assert {p["type"] for p in repeated} == {"timeseries", "curvestream-echarts-panel"}
        assert all(p["title"] == "${metric}" for p in repeated)
        # the system metrics (system/…) are left out of $metric and drawn in their own row, by $system_metric
        assert variables["metric"]["regex"] == "/^(?!system\\/)/"
        system = variables["system_metric"]
        assert system["query"] == variables["metric"]["query"] and system["regex"] == "/^system\\//"
        assert system["multi"] and system["includeAll"] and "allValue" not in system
        (panel,) = [p for p in walk_panels(dashboard["panels"]) if p.get("repeat") == "system_metric"]
        rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
        assert rows[-1].startswith("System") and dashboard["panels"][-1] is panel and panel["type"] == "timeseries"


def test_dashboards_run_the_query_librarys_queries_and_the_library_has_both_flavours(dashboards) -> None:
    library = query_library()
    assert all(set(flavours) == {"flux", "influxql"} for flavours in library.values()), library.keys()
    used: set[str] = set()
    for flavour in ("flux", "influxql"):
        by_text = {queries[flavour]: name for name, queries in library.items()}
        dashboard = dashboards[f"curvestream-{flavour}.json"]
        queries = [t["query"] for p in walk_panels(dashboard["panels"]) for t in p.get("targets", []) if "query" in t]
        queries += [v["query"] for v in dashboard["templating"]["list"]]
        queries += [a["target"]["query"] for a in dashboard["annotations"]["list"]]
        assert all(q in by_text for q in queries), "a dashboard query is not in grafana/queries/"
        used |= {by_text[q] for q in queries}
    assert used == set(library), f"unused library queries: {set(library) - used}"


def test_the_curvestream_panel_is_the_plugins_id_with_its_options(dashboards) -> None:
    plugin = json.loads(PLUGIN_JSON.read_text())
    assert plugin["type"] == "panel"
    options = {"xAxis", "stepField", "seriesName", "smoothing", "smoothingKind", "showEnvelope", "logY",
               "ignoreOutliers", "zoomSlider", "zoomSetsTimeRange"}  # the plugin's PanelOptions
    types_file = REPO / "panels" / "echarts-plugin" / "src" / "grafana" / "types" / "options.ts"
    assert all(f"  {o}:" in types_file.read_text() for o in options)
    for dashboard in dashboards.values():
        panels = [p for p in walk_panels(dashboard["panels"]) if p["type"] not in ("row", "timeseries")]
        assert panels and {p["type"] for p in panels} == {plugin["id"]}
        assert all(set(p["options"]) == options for p in panels)


def test_the_live_panel_listens_on_the_channel_the_bridge_pushes_to(dashboards) -> None:
    stream = BridgeSettings.model_fields["grafana_live_stream"].default
    column = ScalarColumn("loss", np.array([1]), np.array([10**18]), np.array([0.5]))
    measurement = live_lines([DecodedBatch(b"p" * 16, 1, "p", "r", [column], [], [], None, None, 0)])[0].split(",")[0]
    channel = f"stream/{stream}/{measurement}"
    for dashboard in dashboards.values():
        live = [t for p in walk_panels(dashboard["panels"]) for t in p.get("targets", [])
                if t.get("queryType") == "measurements"]
        assert [t["channel"] for t in live] == [channel]


def test_the_dashboard_provider_and_data_sources_are_well_formed(datasources) -> None:
    provider = yaml.safe_load((PROVISIONING_DIR / "dashboards" / "curvestream.yaml").read_text())
    assert provider["apiVersion"] == 1 and [p["type"] for p in provider["providers"]] == ["file"]
    assert pathlib.PurePosixPath(provider["providers"][0]["options"]["path"]).name == DASHBOARD_DIR.name
    assert set(datasources) == {"curvestream-influxdb-flux", "curvestream-influxdb-influxql"}
    assert all(d["type"] == "influxdb" and d["access"] == "proxy" for d in datasources.values())
    assert sum(bool(d.get("isDefault")) for d in datasources.values()) == 1
