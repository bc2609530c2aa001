"""``curvestream grafana sync``: connect curvestream to an existing Grafana.

    curvestream grafana sync --url https://grafana.example.com --token glsa_... \\
        --influx-url http://influxdb:8086 --influx-token ... [--folder curvestream] [--dry-run]

Creates or updates, each by a stable uid: the folder, the two InfluxDB data
sources (Flux, and InfluxQL through the v1 API), the dashboards (the committed
``grafana/provisioning/dashboards/curvestream/*.json``, or ``--dashboards
DIR``) and, with ``--webhook-url``, a webhook contact point. It checks that
the panel plugin is installed (and says how to install it when it is not),
and creates the service account and token the bridge pushes Grafana Live
points with, printing the bridge's two settings. A second run finds
everything as wanted and reports nothing changed; ``--dry-run`` prints the plan
and changes nothing. Dashboards, the folder and the contact point are checked
against grafana-foundation-sdk's types before they are sent (the SDK has no
type for data sources).

Needs the extra ``curvestream-bridge[grafana]`` (grafana-client); install it
with ``URLLIB3_NO_OVERRIDE=1 pip install --no-binary urllib3-future
'curvestream-bridge[grafana]'`` so that urllib3-future leaves urllib3 alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
from typing import Any, Callable

__all__ = ["Step", "plan", "main", "PANEL_PLUGIN_ID", "LIVE_ACCOUNT"]

PANEL_PLUGIN_ID = "curvestream-echarts-panel"
LIVE_ACCOUNT = "curvestream-bridge"
DATASOURCE_UIDS = {"Flux": "curvestream-influxdb-flux", "InfluxQL": "curvestream-influxdb-influxql"}
CONTACT_POINT_UID = "curvestream-webhook"
_REPO_DASHBOARDS = pathlib.Path("grafana/provisioning/dashboards/curvestream")


@dataclasses.dataclass
class Step:
    """One object: what sync finds (``create``, ``update``, ``unchanged``, ``missing``)
    and how to make it so."""

    kind: str
    name: str
    action: str
    apply: Callable[[], str | None] | None = None

    def line(self) -> str:
        return f"{self.action:9} {self.kind:12} {self.name}"


def _sdk_checked(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` after a round trip through grafana-foundation-sdk's model of it:
    a field the model does not know, or a value of the wrong shape, fails here."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models import alerting, dashboard, folder

    model = {"dashboard": dashboard.Dashboard, "folder": folder.Folder, "contact point": alerting.ContactPoint}[kind]
    back = json.loads(json.dumps(model.from_json(body), cls=JSONEncoder))
    if back != body:
        lost = sorted(set(body) - set(back)) or sorted(k for k in body if body[k] != back.get(k))
        raise ValueError(f"{kind} {body.get('uid') or body.get('title')}: not of the SDK's type ({lost})")
    return body


def _not_found(exc: Exception) -> bool:
    return getattr(exc, "status_code", None) == 404


def _get(call: Callable[[], Any]) -> Any:
    from grafana_client.client import GrafanaClientError

    try:
        return call()
    except GrafanaClientError as exc:
        if _not_found(exc):
            return None
        raise


def _subset(wanted: Any, have: Any) -> bool:
    """Whether ``have`` holds everything ``wanted`` says (extra fields Grafana adds are fine)."""
    if isinstance(wanted, dict):
        return isinstance(have, dict) and all(_subset(v, have.get(k)) for k, v in wanted.items())
    return wanted == have


def datasource_bodies(args: argparse.Namespace) -> list[dict[str, Any]]:
    common = {"type": "influxdb", "access": "proxy", "url": args.influx_url}
    flux = {**common, "uid": DATASOURCE_UIDS["Flux"], "name": "curvestream InfluxDB (Flux)",
            "jsonData": {"version": "Flux", "organization": args.influx_org, "defaultBucket": args.influx_bucket,
                         "timeInterval": "1ms"}}
    influxql = {**common, "uid": DATASOURCE_UIDS["InfluxQL"], "name": "curvestream InfluxDB (InfluxQL)",
                "jsonData": {"version": "InfluxQL", "dbName": args.influx_db, "httpMode": "POST",
                             "timeInterval": "1ms", "httpHeaderName1": "Authorization"}}
    if args.influx_token:
        flux["secureJsonData"] = {"token": args.influx_token}
        influxql["secureJsonData"] = {"httpHeaderValue1": f"Token {args.influx_token}"}
    return [flux, influxql]


def contact_point_body(webhook_url: str) -> dict[str, Any]:
    from grafana_foundation_sdk.builders import alerting
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    built = (alerting.ContactPoint().uid(CONTACT_POINT_UID).name("curvestream webhook").type("webhook")
             .settings({"url": webhook_url, "httpMethod": "POST"}).disable_resolve_message(False).build())
    return json.loads(json.dumps(built, cls=JSONEncoder))


def dashboard_bodies(directory: pathlib.Path) -> list[dict[str, Any]]:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no dashboards in {directory} (--dashboards DIR)")
    return [_sdk_checked("dashboard", json.loads(p.read_text(encoding="utf-8"))) for p in paths]


def plan(api: Any, args: argparse.Namespace) -> list[Step]:
    """What sync would do, found by reading Grafana (nothing is changed here)."""
    steps: list[Step] = []
    folder_uid = args.folder_uid
    folder = _sdk_checked("folder", {"uid": folder_uid, "title": args.folder})
    have = _get(lambda: api.folder.get_folder(folder_uid))
    if have is None:
        steps.append(Step("folder", args.folder, "create",
                          lambda: api.folder.create_folder(args.folder, uid=folder_uid)))
    elif have.get("title") != folder["title"]:
        steps.append(Step("folder", args.folder, "update",
                          lambda: api.folder.update_folder(folder_uid, title=args.folder, overwrite=True)))
    else:
        steps.append(Step("folder", args.folder, "unchanged"))

    for body in datasource_bodies(args):
        have = _get(lambda uid=body["uid"]: api.datasource.get_datasource_by_uid(uid))
        public = {k: v for k, v in body.items() if k != "secureJsonData"}  # Grafana never returns secrets
        if have is None:
            steps.append(Step("data source", body["name"], "create",
                              lambda b=body: api.datasource.create_datasource(b)))
        elif not _subset(public, have):
            steps.append(Step("data source", body["name"], "update",
                              lambda b=body: api.datasource.update_datasource_by_uid(b["uid"], b)))
        else:
            steps.append(Step("data source", body["name"], "unchanged"))

    for board in dashboard_bodies(pathlib.Path(args.dashboards)):
        have = _get(lambda uid=board["uid"]: api.dashboard.get_dashboard(uid))
        same = (have is not None and have.get("meta", {}).get("folderUid") == folder_uid
                and _comparable(have.get("dashboard", {})) == _comparable(board))
        post = {"dashboard": {**board, "id": None}, "folderUid": folder_uid, "overwrite": True,
                "message": "curvestream grafana sync"}
        action = "unchanged" if same else ("create" if have is None else "update")
        steps.append(Step("dashboard", board["title"], action,
                          None if same else (lambda p=post: api.dashboard.update_dashboard(p))))

    if args.webhook_url:
        body = _sdk_checked("contact point", contact_point_body(args.webhook_url))
        found = [c for c in (api.alertingprovisioning.get_contactpoints() or []) if c.get("uid") == CONTACT_POINT_UID]
        if not found:
            steps.append(Step("contact point", body["name"], "create",
                              lambda: api.alertingprovisioning.create_contactpoint(body)))
        elif not _subset(body, found[0]):
            steps.append(Step("contact point", body["name"], "update",
                              lambda: api.alertingprovisioning.update_contactpoint(CONTACT_POINT_UID, body)))
        else:
            steps.append(Step("contact point", body["name"], "unchanged"))

    plugins = {p.get("id") for p in (api.plugin.list() or [])}
    steps.append(Step("plugin", PANEL_PLUGIN_ID, "unchanged" if PANEL_PLUGIN_ID in plugins else "missing"))

    pages = api.serviceaccount.search(query=LIVE_ACCOUNT, page=1, perpage=100)  # one page per answer
    account = next((a for page in pages for a in page.get("serviceAccounts", []) if a.get("name") == LIVE_ACCOUNT),
                   None)
    if account is None:
        steps.append(Step("live token", LIVE_ACCOUNT, "create", lambda: _create_live_token(api, args.url)))
    else:
        steps.append(Step("live token", LIVE_ACCOUNT, "unchanged"))  # its token was printed when it was made
    return steps


def _comparable(board: dict[str, Any]) -> dict[str, Any]:
    """A dashboard without what Grafana assigns on save."""
    return {k: v for k, v in board.items() if k not in ("id", "version")}


def _create_live_token(api: Any, url: str) -> str:
    account = api.serviceaccount.create({"name": LIVE_ACCOUNT, "role": "Admin"})
    token = api.serviceaccount.create_token(account["id"], {"name": "live-push"})
    return (f"CURVESTREAM_GRAFANA_LIVE_URL={url.rstrip('/')}\n"
            f"CURVESTREAM_GRAFANA_LIVE_TOKEN={token['key']}")


PLUGIN_HELP = (f"the panel plugin {PANEL_PLUGIN_ID} is not installed: copy panels/echarts-plugin/dist/ (make "
               f"grafana-plugin) into Grafana's plugins directory as {PANEL_PLUGIN_ID}/, set "
               f"GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS={PANEL_PLUGIN_ID} and restart Grafana")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="curvestream grafana sync", description=__doc__.splitlines()[0])
    env = os.environ.get
    parser.add_argument("--url", required=True, help="Grafana's base URL")
    parser.add_argument("--token", default=env("GRAFANA_TOKEN"), help="an Admin service account token")
    parser.add_argument("--folder", default="curvestream", help="folder of the dashboards (default curvestream)")
    parser.add_argument("--folder-uid", default="curvestream")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.add_argument("--dashboards", default=str(_REPO_DASHBOARDS), help="directory of dashboard JSON files")
    parser.add_argument("--influx-url", default=env("INFLUXDB_URL", "http://influxdb:8086"),
                        help="InfluxDB as Grafana reaches it")
    parser.add_argument("--influx-token", default=env("INFLUXDB_TOKEN"))
    parser.add_argument("--influx-org", default=env("INFLUXDB_ORG", "curvestream"))
    parser.add_argument("--influx-bucket", default=env("INFLUXDB_BUCKET", "curvestream"))
    parser.add_argument("--influx-db", default=env("INFLUXDB_DB", "curvestream"), help="database (InfluxQL)")
    parser.add_argument("--webhook-url", default=None, help="a webhook contact point for Grafana's alerts")
    args = parser.parse_args(argv)
    try:
        from grafana_client import GrafanaApi
    except ImportError:
        print("curvestream grafana sync needs grafana-client: URLLIB3_NO_OVERRIDE=1 pip install "
              "--no-binary urllib3-future 'curvestream-bridge[grafana]'", file=sys.stderr)
        return 2
    api = GrafanaApi.from_url(args.url, credential=args.token)
    try:
        steps = plan(api, args)
    except (OSError, ValueError) as exc:
        print(f"curvestream grafana sync: {exc}", file=sys.stderr)
        return 2
    for step in steps:
        print(("would " if args.dry_run and step.apply else "") + step.line())
        if step.action == "missing":
            print("  " + PLUGIN_HELP)
        if step.apply is not None and not args.dry_run:
            out = step.apply()
            if step.kind == "live token" and isinstance(out, str):
                print("  set on the bridge:\n  " + out.replace("\n", "\n  "))
    if not any(s.apply is not None for s in steps):
        print("nothing changed" if not args.dry_run else "nothing to change")
    return 0
