"""``curvestream grafana sync``: connect curvestream to an existing Grafana.

    curvestream grafana sync --url https://grafana.example.com --token glsa_... \\
        --influx-url http://influxdb:8086 --influx-token ... [--folder curvestream] [--dry-run]

Creates or updates, each by a stable uid: the folder, the two InfluxDB data
sources (Flux, and InfluxQL through the v1 API), the dashboards (the committed
``grafana/provisioning/dashboards/curvestream/*.json``, or ``--dashboards
DIR``), the Grafana-managed alert rules of
``grafana/provisioning/alerting/curvestream.yaml`` (or ``--alert-rules FILE``)
through the alerting provisioning API, with their group's evaluation
interval, and, with ``--webhook-url``, a webhook contact point. It checks that
the panel plugin is installed (and says how to install it when it is not),
and creates the service account and token the bridge pushes Grafana Live
points with, printing the bridge's two settings. A second run finds
everything as wanted and reports nothing changed; ``--dry-run`` prints the plan
and changes nothing (with no Grafana to reach it builds and checks every body
offline and says so). Dashboards, the folder, alert rules, rule groups and the
contact point are checked against grafana-foundation-sdk's types before they
are sent (the SDK has no type for data sources).

Needs the extra ``curvestream-bridge[grafana]`` (grafana-client); install it
with ``URLLIB3_NO_OVERRIDE=1 pip install --no-binary urllib3-future
./proto './bridge[grafana]'`` (from a clone) so that urllib3-future leaves urllib3 alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import pathlib
import re
import socket
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Step", "plan", "main", "sdk_round_trip", "PANEL_PLUGIN_ID", "LIVE_ACCOUNT"]

PANEL_PLUGIN_ID = "curvestream-echarts-panel"
LIVE_ACCOUNT = "curvestream-bridge"
DATASOURCE_UIDS = {"Flux": "curvestream-influxdb-flux", "InfluxQL": "curvestream-influxdb-influxql"}
CONTACT_POINT_UID = "curvestream-webhook"
_REPO_DASHBOARDS = pathlib.Path("grafana/provisioning/dashboards/curvestream")
_REPO_ALERT_RULES = pathlib.Path("grafana/provisioning/alerting/curvestream.yaml")


@dataclasses.dataclass
class Step:
    """One object: what sync finds (``create``, ``update``, ``unchanged``, ``missing``; without a
    Grafana to ask, ``--dry-run`` gives ``checked``: built and type-checked, or ``unknown``)
    and how to make it so."""

    kind: str
    name: str
    action: str
    apply: Callable[[], str | None] | None = None

    def line(self) -> str:
        return f"{self.action:9} {self.kind:12} {self.name}"


_MODELS = {"dashboard": ("dashboard", "Dashboard"), "folder": ("folder", "Folder"),
           "contact point": ("alerting", "ContactPoint"), "alert rule": ("alerting", "Rule"),
           "rule group": ("alerting", "RuleGroup")}


def sdk_round_trip(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as grafana-foundation-sdk's model of ``kind`` reads it and writes it back.

    The SDK types an annotation's ``target`` as the built-in Grafana source's
    (limit, matchAny, tags, type; its own schema says "this should just be a
    normal query target"), so the target of an annotation on another data
    source goes through the SDK as a data query of that source, as a panel's
    targets do.
    """
    import importlib

    from grafana_foundation_sdk.cog import runtime
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    module, name = _MODELS[kind]
    model = getattr(importlib.import_module(f"grafana_foundation_sdk.models.{module}"), name)
    foreign: dict[int, dict[str, Any]] = {}
    if kind == "dashboard":
        annotations = body.get("annotations", {}).get("list", [])
        foreign = {
            i: a
            for i, a in enumerate(annotations)
            if isinstance(a.get("target"), dict) and a.get("datasource", {}).get("type") not in ("grafana", None)
        }
        if foreign:
            body = {**body, "annotations": {**body["annotations"], "list": [
                {k: v for k, v in a.items() if k != "target"} if i in foreign else a
                for i, a in enumerate(annotations)]}}
    back = json.loads(json.dumps(model.from_json(body), cls=JSONEncoder))
    for i, a in foreign.items():
        query = runtime.dataquery_from_json(a["target"], a["datasource"]["type"])
        back["annotations"]["list"][i]["target"] = json.loads(json.dumps(query, cls=JSONEncoder))
    return back


def _sdk_checked(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body``, after checking that a round trip through grafana-foundation-sdk's
    model of it keeps it whole: a field the model does not know, or a value of
    the wrong shape, fails here."""
    back = sdk_round_trip(kind, body)
    if back != body:
        lost = sorted(set(body) - set(back)) or sorted(k for k in body if body[k] != back.get(k))
        raise ValueError(f"{kind} {body.get('uid') or body.get('title')}: not of the SDK's type ({lost})")
    return body


def _not_found(exc: Exception) -> bool:
    return getattr(exc, "status_code", None) == 404


class _Offline(Exception):
    """Raised by :class:`Unreachable` for every call."""


class Unreachable:
    """Stands for a Grafana that cannot be reached: ``--dry-run`` still builds and checks every body,
    and each object's step says it was checked, not compared (:data:`UNKNOWN`)."""

    def __getattr__(self, name: str) -> Unreachable:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise _Offline()


UNKNOWN = object()
"""What Grafana holds, when it cannot be asked."""


def _get(call: Callable[[], Any]) -> Any:
    from grafana_client.client import GrafanaClientError

    try:
        return call()
    except _Offline:
        return UNKNOWN
    except GrafanaClientError as exc:
        if _not_found(exc):
            return None
        raise


def _unreachable(exc: BaseException) -> bool:
    """A connection that could not be made (refused, no route, unknown host, timed out)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (ConnectionError, TimeoutError, socket.gaierror)) or "NewConnectionError" in repr(seen) \
                or "Max retries exceeded" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _reason(exc: BaseException) -> str:
    """The innermost reason of a connection error in a few words ("[Errno 111] Connection refused"),
    not urllib3's "Max retries exceeded with url ... (Caused by ...)"."""
    text = str(exc)
    found = re.findall(r"\[Errno -?\d+\] [^'\")]+", text)
    if found:
        return found[-1].strip()
    seen = exc
    while (inner := seen.__cause__ or seen.__context__) is not None:
        seen = inner
    return (getattr(seen, "strerror", None) or str(seen) or type(seen).__name__).splitlines()[0][:200]


def _subset(wanted: Any, have: Any) -> bool:
    """Whether ``have`` holds everything ``wanted`` says (extra fields Grafana adds are fine)."""
    if isinstance(wanted, dict):
        return isinstance(have, dict) and all(_subset(v, have.get(k)) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(have, list) and len(have) == len(wanted) and all(map(_subset, wanted, have))
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


def _seconds(duration: str) -> int:
    """``90s``, ``1m``, ``2h`` (Grafana's file provisioning durations) in seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if not duration or duration[-1] not in units or not duration[:-1].isdigit():
        raise ValueError(f"alert rules: duration {duration!r} is not like 1m")
    return int(duration[:-1]) * units[duration[-1]]


@dataclasses.dataclass
class RuleGroup:
    """One group of the provisioned alert rules, as the provisioning API takes it."""

    title: str
    interval_s: int
    rules: list[dict[str, Any]]


class _DataqueryOf:
    """A query model as the SDK reads it for its data source type (the ``__expr__``
    expressions are typed; InfluxDB queries, which the SDK has no type for, are kept whole)."""

    def __init__(self, model: dict[str, Any]) -> None:
        self.model = model

    def build(self) -> Any:
        from grafana_foundation_sdk.cog import runtime

        return runtime.dataquery_from_json(self.model, self.model.get("datasource", {}).get("type", ""))


def alert_rule_groups(path: pathlib.Path, folder_uid: str) -> list[RuleGroup]:
    """The alert rules of a Grafana file-provisioning file (``grafana/provisioning/alerting/``)
    as provisioning API bodies (``ProvisionedAlertRule``), built with
    grafana-foundation-sdk's builders, in the folder ``folder_uid``."""
    import yaml
    from grafana_foundation_sdk.builders import alerting
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.alerting import RelativeTimeRange

    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    groups = []
    for group in doc.get("groups") or []:
        rules = []
        for r in group["rules"]:
            rule = (alerting.Rule(r["title"]).uid(r["uid"]).condition(r["condition"]).folder_uid(folder_uid)
                    .rule_group(group["name"]).org_id(int(group.get("orgId", 1))).for_val(r.get("for", "0s"))
                    .no_data_state(r.get("noDataState", "NoData")).exec_err_state(r.get("execErrState", "Error"))
                    .labels(r.get("labels") or {}).annotations(r.get("annotations") or {})
                    .is_paused(bool(r.get("isPaused", False))))
            for q in r["data"]:
                query = alerting.Query(q["refId"]).datasource_uid(q["datasourceUid"]).model(_DataqueryOf(q["model"]))
                span = q.get("relativeTimeRange") or {"from": 0, "to": 0}  # what Grafana stores for expressions
                query.relative_time_range(RelativeTimeRange(from_val=span["from"], to=span["to"]))
                rule.with_query(query)
            rules.append(_sdk_checked("alert rule", json.loads(json.dumps(rule.build(), cls=JSONEncoder))))
        groups.append(RuleGroup(group["name"], _seconds(group.get("interval", "1m")), rules))
    return groups


def _alert_rule_steps(api: Any, groups: list[RuleGroup], folder_uid: str) -> list[Step]:
    """Each rule by its uid (create, update, unchanged), then each group's
    evaluation interval (a new group takes Grafana's default)."""
    steps = []
    for group in groups:
        for body in group.rules:
            have = _get(functools.partial(api.alertingprovisioning.get_alertrule, body["uid"]))
            steps.append(_step("alert rule", body["title"], have, body,
                               functools.partial(api.alertingprovisioning.create_alertrule, body),
                               functools.partial(api.alertingprovisioning.update_alertrule, body["uid"], body)))
        have = _get(functools.partial(api.alertingprovisioning.get_rule_group, folder_uid, group.title))
        if have is UNKNOWN:
            _sdk_checked("rule group", {"title": group.title, "folderUid": folder_uid, "interval": group.interval_s,
                                        "rules": group.rules})
            steps.append(Step("rule group", f"{group.title} (every {group.interval_s} s)", "checked"))
            continue
        if have is not None and have.get("interval") == group.interval_s:
            steps.append(Step("rule group", group.title, "unchanged"))
            continue
        body = _sdk_checked("rule group", {"title": group.title, "folderUid": folder_uid,
                                           "interval": group.interval_s, "rules": group.rules})
        steps.append(Step("rule group", f"{group.title} (every {group.interval_s} s)",
                          "create" if have is None else "update",
                          functools.partial(api.alertingprovisioning.update_rule_group, folder_uid, group.title, body)))
    return steps


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
    if have is UNKNOWN:
        steps.append(Step("folder", args.folder, "checked"))
    elif have is None:
        steps.append(Step("folder", args.folder, "create",
                          lambda: api.folder.create_folder(args.folder, uid=folder_uid)))
    elif have.get("title") != folder["title"]:
        steps.append(Step("folder", args.folder, "update",
                          lambda: api.folder.update_folder(folder_uid, title=args.folder, overwrite=True)))
    else:
        steps.append(Step("folder", args.folder, "unchanged"))

    for body in datasource_bodies(args):
        have = _get(functools.partial(api.datasource.get_datasource_by_uid, body["uid"]))
        public = {k: v for k, v in body.items() if k != "secureJsonData"}  # Grafana never returns secrets
        steps.append(_step("data source", body["name"], have, public,
                           functools.partial(api.datasource.create_datasource, body),
                           functools.partial(api.datasource.update_datasource_by_uid, body["uid"], body)))

    for board in dashboard_bodies(pathlib.Path(args.dashboards)):
        have = _get(functools.partial(api.dashboard.get_dashboard, board["uid"]))
        if have is UNKNOWN:
            steps.append(Step("dashboard", board["title"], "checked"))
            continue
        same = (have is not None and have.get("meta", {}).get("folderUid") == folder_uid
                and _comparable(have.get("dashboard", {})) == _comparable(board))
        post = {"dashboard": {**board, "id": None}, "folderUid": folder_uid, "overwrite": True,
                "message": "curvestream grafana sync"}
        action = "unchanged" if same else ("create" if have is None else "update")
        steps.append(Step("dashboard", board["title"], action,
                          None if same else functools.partial(api.dashboard.update_dashboard, post)))

    if args.webhook_url:
        body = _sdk_checked("contact point", contact_point_body(args.webhook_url))
        points = _get(lambda: api.alertingprovisioning.get_contactpoints())
        found = UNKNOWN if points is UNKNOWN else next(
            (c for c in (points or []) if c.get("uid") == CONTACT_POINT_UID), None)
        steps.append(_step("contact point", body["name"], found, body,
                           lambda: api.alertingprovisioning.create_contactpoint(body),
                           lambda: api.alertingprovisioning.update_contactpoint(CONTACT_POINT_UID, body)))

    if args.alert_rules:
        steps.extend(_alert_rule_steps(api, alert_rule_groups(pathlib.Path(args.alert_rules), folder_uid),
                                       folder_uid))

    plugins = _get(lambda: api.plugin.list())
    if plugins is UNKNOWN:
        steps.append(Step("plugin", PANEL_PLUGIN_ID, "unknown"))
    else:
        found = PANEL_PLUGIN_ID in {p.get("id") for p in (plugins or [])}
        steps.append(Step("plugin", PANEL_PLUGIN_ID, "unchanged" if found else "missing"))

    pages = _get(lambda: api.serviceaccount.search(query=LIVE_ACCOUNT, page=1, perpage=100))  # one page per answer
    if pages is UNKNOWN:
        steps.append(Step("live token", LIVE_ACCOUNT, "unknown"))
        return steps
    account = next((a for page in pages for a in page.get("serviceAccounts", []) if a.get("name") == LIVE_ACCOUNT),
                   None)
    if account is None:
        steps.append(Step("live token", LIVE_ACCOUNT, "create", lambda: _create_live_token(api, args.url)))
    else:
        steps.append(Step("live token", LIVE_ACCOUNT, "unchanged"))  # its token was printed when it was made
    return steps


def _step(kind: str, name: str, have: dict[str, Any] | None, want: dict[str, Any],
          create: Callable[[], Any], update: Callable[[], Any]) -> Step:
    """Create what Grafana lacks, update what differs from ``want`` (the fields Grafana returns)."""
    if have is UNKNOWN:
        return Step(kind, name, "checked")
    if have is None:
        return Step(kind, name, "create", create)
    if not _subset(want, have):
        return Step(kind, name, "update", update)
    return Step(kind, name, "unchanged")


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
    parser.add_argument("--token", default=env("GRAFANA_TOKEN"),
                        help="an Admin service account token (default GRAFANA_TOKEN)")
    parser.add_argument("--folder", default="curvestream", help="folder of the dashboards (default curvestream)")
    parser.add_argument("--folder-uid", default="curvestream", help="the folder's uid (default curvestream)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan, change nothing; without a Grafana to reach, check what would be sent")
    parser.add_argument("--dashboards", default=str(_REPO_DASHBOARDS), help="directory of dashboard JSON files")
    parser.add_argument("--alert-rules", default=str(_REPO_ALERT_RULES),
                        help="Grafana alert rules in file-provisioning YAML (empty: none)")
    parser.add_argument("--influx-url", default=env("INFLUXDB_URL", "http://influxdb:8086"),
                        help="InfluxDB as Grafana reaches it (default INFLUXDB_URL or http://influxdb:8086)")
    parser.add_argument("--influx-token", default=env("INFLUXDB_TOKEN"),
                        help="InfluxDB token for both data sources (default INFLUXDB_TOKEN)")
    parser.add_argument("--influx-org", default=env("INFLUXDB_ORG", "curvestream"),
                        help="organization (Flux; default INFLUXDB_ORG or curvestream)")
    parser.add_argument("--influx-bucket", default=env("INFLUXDB_BUCKET", "curvestream"),
                        help="bucket (Flux; default INFLUXDB_BUCKET or curvestream)")
    parser.add_argument("--influx-db", default=env("INFLUXDB_DB", "curvestream"),
                        help="database (InfluxQL; default INFLUXDB_DB or curvestream)")
    parser.add_argument("--webhook-url", default=None, help="a webhook contact point for Grafana's alerts")
    args = parser.parse_args(argv)
    try:
        from grafana_client import GrafanaApi
    except ImportError:
        print("curvestream grafana sync needs grafana-client: URLLIB3_NO_OVERRIDE=1 pip install "
              "--no-binary urllib3-future ./proto './bridge[grafana]' (from a clone)", file=sys.stderr)
        return 2
    api = GrafanaApi.from_url(args.url, credential=args.token)
    why = ""
    try:
        steps = plan(api, args)
    except (OSError, ValueError) as exc:
        if not _unreachable(exc):
            print(f"curvestream grafana sync: {exc}", file=sys.stderr)
            return 2
        why = _reason(exc)
    if why:
        if not args.dry_run:
            print(f"curvestream grafana sync: cannot reach Grafana at {args.url} ({why}); nothing was changed",
                  file=sys.stderr)
            return 2
        try:
            steps = plan(Unreachable(), args)
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
    if why:
        print(f"Grafana at {args.url} cannot be reached ({why}): each body above was built and checked against "
              "grafana-foundation-sdk's types; what Grafana holds was not compared and nothing was sent")
    elif not any(s.apply is not None for s in steps):
        print("nothing changed" if not args.dry_run else "nothing to change")
    return 0
