"""``curvestream grafana sync`` with grafana-client against a local HTTP server
that stores and returns what it is given (no Grafana server may run here):
the first run creates the folder, data sources, dashboards, contact point and
Live token; every body it sends fits grafana-foundation-sdk's types; a second
run changes nothing; --dry-run sends nothing; a missing panel plugin is said."""

from __future__ import annotations

import json

import pytest

from curvestream_bridge import grafana_sync
from fake_grafana import FakeGrafana
from grafana_kit import PROVISIONING_DIR

DASHBOARDS = PROVISIONING_DIR / "dashboards" / "curvestream"
ARGS = ["--token", "glsa_admin", "--influx-url", "http://influxdb:8086", "--influx-token", "secret",
        "--dashboards", str(DASHBOARDS), "--webhook-url", "http://bridge:8080/alerts"]


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
    assert f"CURVESTREAM_GRAFANA_LIVE_URL={grafana.url}" in out
    assert "CURVESTREAM_GRAFANA_LIVE_TOKEN=glsa_test_1" in out
    assert "nothing changed" not in out


def test_every_body_sent_fits_the_foundation_sdks_types() -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models import alerting, dashboard, folder

    def round_trip(model, body):
        return json.loads(json.dumps(model.from_json(body), cls=JSONEncoder))

    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        assert sync(grafana) == 0
    checked = {"dashboard": 0, "folder": 0, "contact point": 0}
    for method, path, body in grafana.writes():
        if path == "/api/dashboards/db":
            board = {k: v for k, v in body["dashboard"].items() if k != "id"}
            assert round_trip(dashboard.Dashboard, board) == board
            checked["dashboard"] += 1
        elif path.startswith("/api/folders"):
            assert round_trip(folder.Folder, body) == body
            checked["folder"] += 1
        elif path.startswith("/api/v1/provisioning/contact-points"):
            assert round_trip(alerting.ContactPoint, body) == body
            checked["contact point"] += 1
    assert checked == {"dashboard": 2, "folder": 1, "contact point": 1}


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
        from curvestream_bridge.service import main
    with FakeGrafana(plugins=[grafana_sync.PANEL_PLUGIN_ID]) as grafana:
        with pytest.raises(SystemExit) as done:
            main(["grafana", "sync", "--url", grafana.url, *ARGS, "--dry-run"])
        assert done.value.code == 0 and grafana.writes() == []
    assert "would create    dashboard" in capsys.readouterr().out
