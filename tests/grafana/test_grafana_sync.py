"""``curvestream grafana sync`` with grafana-client against a local HTTP server
that stores and returns what it is given (no Grafana server may run here):
the first run creates the folder, data sources, dashboards, alert rules (with
their group's interval), contact point and Live token; every body it sends fits grafana-foundation-sdk's types; a second
run changes nothing; --dry-run sends nothing; a missing panel plugin is said."""

from __future__ import annotations

import json

import pytest
import yaml

from curvestream_bridge import grafana_sync
from fake_grafana import FakeGrafana
from grafana_kit import PROVISIONING_DIR

DASHBOARDS = PROVISIONING_DIR / "dashboards" / "curvestream"
ALERT_RULES = PROVISIONING_DIR / "alerting" / "curvestream.yaml"
ARGS = ["--token", "glsa_admin", "--influx-url", "http://influxdb:8086", "--influx-token", "secret",
        "--dashboards", str(DASHBOARDS), "--alert-rules", str(ALERT_RULES),
        "--webhook-url", "http://bridge:8080/alerts"]


def provisioned_rules() -> dict[str, dict]:
    return {r["uid"]: r for g in yaml.safe_load(ALERT_RULES.read_text())["groups"] for r in g["rules"]}


def sync(grafana: FakeGrafana, *extra: str) -> int:
    return grafana_sync.main(["--url", grafana.url, *ARGS, *extra])


def test_first_sync_creates_everything_and_prints_the_bridges_live_settings(capsys) -> None:
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
        out = capsys.readouterr().out
    assert set(grafana.objects["folders"]) == {"curvestream"}
    assert set(grafana.objects["datasources"]) == set(grafana_sync.DATASOURCE_UIDS.values())
    assert set(grafana.objects["dashboards"]) == {json.loads(p.read_text())["uid"] for p in DASHBOARDS.glob("*.json")}
    assert all(d["meta"]["folderUid"] == "curvestream" for d in grafana.objects["dashboards"].values())
    assert set(grafana.objects["contact-points"]) == {grafana_sync.CONTACT_POINT_UID}
    assert set(grafana.objects["alert-rules"]) == set(provisioned_rules())
    assert f"CURVESTREAM_GRAFANA_LIVE_URL={grafana.url}" in out
    assert "CURVESTREAM_GRAFANA_LIVE_TOKEN=glsa_test_1" in out
    assert "nothing changed" not in out


def test_every_body_sent_fits_the_foundation_sdks_types() -> None:
    round_trip = grafana_sync.sdk_round_trip  # annotation targets go through the SDK as data queries
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
    checked = {"dashboard": 0, "folder": 0, "contact point": 0, "alert rule": 0, "rule group": 0}
    for _method, path, body in grafana.writes():
        if path == "/api/dashboards/db":
            board = {k: v for k, v in body["dashboard"].items() if k != "id"}
            assert round_trip("dashboard", board) == board
            checked["dashboard"] += 1
        elif path.startswith("/api/folders"):
            assert round_trip("folder", body) == body
            checked["folder"] += 1
        elif path.startswith("/api/v1/provisioning/contact-points"):
            assert round_trip("contact point", body) == body
            checked["contact point"] += 1
        elif path.startswith("/api/v1/provisioning/alert-rules"):
            assert round_trip("alert rule", body) == body
            checked["alert rule"] += 1
        elif "/rule-groups/" in path:
            assert round_trip("rule group", body) == body
            checked["rule group"] += 1
    assert checked == {"dashboard": 2, "folder": 1, "contact point": 1, "alert rule": len(provisioned_rules()),
                       "rule group": 1}


def test_alert_rules_are_sent_as_provisioned_with_their_queries_and_group_interval() -> None:
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
    group = yaml.safe_load(ALERT_RULES.read_text())["groups"][0]
    for uid, rule in provisioned_rules().items():
        sent = grafana.objects["alert-rules"][uid]
        assert (sent["title"], sent["condition"], sent["for"]) == (rule["title"], rule["condition"], rule["for"])
        assert (sent["folderUID"], sent["ruleGroup"]) == ("curvestream", group["name"])
        assert (sent["noDataState"], sent["execErrState"]) == (rule["noDataState"], rule["execErrState"])
        assert sent["labels"] == rule["labels"] and sent["annotations"] == rule["annotations"]
        assert [(q["refId"], q["datasourceUid"], q["model"]) for q in sent["data"]] == \
            [(q["refId"], q["datasourceUid"], q["model"]) for q in rule["data"]]
        assert [q["relativeTimeRange"] for q in sent["data"]] == \
            [q.get("relativeTimeRange", {"from": 0, "to": 0}) for q in rule["data"]]
    assert grafana.objects["rule-groups"][("curvestream", group["name"])]["interval"] == 60  # "1m"


def test_an_alert_rule_changed_in_grafana_is_put_back_and_only_that(capsys) -> None:
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
        uid = next(iter(provisioned_rules()))
        grafana.objects["alert-rules"][uid]["data"][0]["model"]["query"] = "SELECT 1"
        grafana.objects["alert-rules"][uid]["data"][0]["model"]["intervalMs"] = 1000  # Grafana adds such fields
        written = len(grafana.writes())
        capsys.readouterr()
        assert sync(grafana) == 0
        out = capsys.readouterr().out
        assert [(m, p) for m, p, _ in grafana.writes()[written:]] == [
            ("PUT", f"/api/v1/provisioning/alert-rules/{uid}")
        ]
        assert grafana.objects["alert-rules"][uid]["data"][0]["model"]["query"] == \
            provisioned_rules()[uid]["data"][0]["model"]["query"]
    assert [line.split()[0] for line in out.splitlines() if "alert rule" in line] == \
        ["update" if r == uid else "unchanged" for r in provisioned_rules()]


def test_a_body_the_sdk_does_not_know_is_refused_before_it_is_sent(tmp_path) -> None:
    board = json.loads(next(DASHBOARDS.glob("*.json")).read_text())
    board["panelz"] = board.pop("panels")
    (tmp_path / "bad.json").write_text(json.dumps(board))
    with pytest.raises(ValueError, match="not of the SDK's type"):
        grafana_sync.dashboard_bodies(tmp_path)


def test_a_second_sync_changes_nothing(capsys) -> None:
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
        written = len(grafana.writes())
        capsys.readouterr()
        assert sync(grafana) == 0
        out = capsys.readouterr().out
        assert len(grafana.writes()) == written
    assert "nothing changed" in out
    assert all(line.startswith("unchanged") for line in out.splitlines()[:-1]), out


def test_a_changed_dashboard_or_data_source_is_updated_and_only_that(capsys) -> None:
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
        uid = grafana_sync.DATASOURCE_UIDS["InfluxQL"]
        grafana.objects["datasources"][uid]["url"] = "http://elsewhere:8086"
        some_board = next(iter(grafana.objects["dashboards"].values()))
        some_board["dashboard"]["title"] = "edited by hand"
        written = len(grafana.writes())
        capsys.readouterr()
        assert sync(grafana) == 0
        out = capsys.readouterr().out
        assert len(grafana.writes()) == written + 2
        assert grafana.objects["datasources"][uid]["url"] == "http://influxdb:8086"
    assert sum(line.startswith("update") for line in out.splitlines()) == 2


def test_dry_run_prints_the_plan_and_sends_nothing(capsys) -> None:
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana, "--dry-run") == 0
        assert grafana.writes() == []
    out = capsys.readouterr().out
    assert "would create    folder" in out and "would create    live token" in out
    assert sum(line.startswith("would create    alert rule") for line in out.splitlines()) == len(provisioned_rules())
    assert "would create    rule group" in out


def test_a_missing_panel_plugin_is_reported_with_how_to_install_it(capsys) -> None:
    with FakeGrafana(plugins=[]) as grafana:
        assert sync(grafana) == 0
    out = capsys.readouterr().out
    assert f"missing   plugin       {grafana_sync.PANEL_PLUGIN_ID}" in out
    assert "GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS" in out


@pytest.mark.parametrize("command", ["curvestream", "curvestream-bridge"])
def test_both_commands_run_the_sync(command, capsys) -> None:
    if command == "curvestream":
        from curvestream.cli import main
    else:
        from curvestream_bridge.cli import main
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        with pytest.raises(SystemExit) as done:
            main(["grafana", "sync", "--url", grafana.url, *ARGS, "--dry-run"])
        assert done.value.code == 0 and grafana.writes() == []
    assert "would create    dashboard" in capsys.readouterr().out
