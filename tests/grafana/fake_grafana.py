"""A local HTTP server that stores what it is given under Grafana's API paths
and returns it: the counterpart `curvestream grafana sync` is tested against,
since no Grafana server runs on these machines. It knows nothing of Grafana's
rules; it records every request so a test can check their bodies."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
from typing import Any

__all__ = ["FakeGrafana"]


class FakeGrafana:
    def __init__(self, plugins: list[str] | None = None) -> None:
        self.objects: dict[str, dict[str, Any]] = {"folders": {}, "datasources": {}, "dashboards": {},
                                                   "contact-points": {}, "serviceaccounts": {},
                                                   "alert-rules": {}, "rule-groups": {}}
        self.plugins = list(plugins or [])
        self.requests: list[tuple[str, str, Any]] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGrafana:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def writes(self) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] != "GET"]

    def route(self, method: str, path: str, body: Any, params: dict[str, str] | None = None) -> tuple[int, Any]:
        params = params or {}
        o = self.objects
        parts = path.strip("/").split("/")[1:]  # after "api"
        if method != "GET":
            self.requests.append((method, path, body))
        else:
            self.requests.append((method, path, None))
        match method, parts:
            case "GET", ["folders", uid]:
                return (200, o["folders"][uid]) if uid in o["folders"] else (404, {"message": "not found"})
            case "POST", ["folders"]:
                o["folders"][body["uid"]] = {"uid": body["uid"], "title": body["title"]}
                return 200, o["folders"][body["uid"]]
            case "PUT", ["folders", uid]:
                o["folders"][uid] = {"uid": uid, "title": body["title"]}
                return 200, o["folders"][uid]
            case "GET", ["datasources", "uid", uid]:
                return (200, o["datasources"][uid]) if uid in o["datasources"] else (404, {"message": "not found"})
            case ("POST", ["datasources"]) | ("PUT", ["datasources", "uid", _]):
                o["datasources"][body["uid"]] = {k: v for k, v in body.items() if k != "secureJsonData"}
                return 200, {"datasource": o["datasources"][body["uid"]]}
            case "GET", ["dashboards", "uid", uid]:
                return (200, o["dashboards"][uid]) if uid in o["dashboards"] else (404, {"message": "not found"})
            case "POST", ["dashboards", "db"]:
                board = body["dashboard"]
                o["dashboards"][board["uid"]] = {"dashboard": {**board, "id": 7, "version": 2},
                                                 "meta": {"folderUid": body.get("folderUid")}}
                return 200, {"uid": board["uid"], "status": "success"}
            case "GET", ["v1", "provisioning", "contact-points"]:
                return 200, list(o["contact-points"].values())
            case ("POST", ["v1", "provisioning", "contact-points"]) | \
                 ("PUT", ["v1", "provisioning", "contact-points", _]):
                o["contact-points"][body["uid"]] = body
                return 202, body
            case "GET", ["v1", "provisioning", "alert-rules", uid]:
                return (200, o["alert-rules"][uid]) if uid in o["alert-rules"] else (404, {"message": "not found"})
            case "POST", ["v1", "provisioning", "alert-rules"]:
                o["alert-rules"][body["uid"]] = {**body, "id": len(o["alert-rules"]) + 1, "provenance": "api"}
                return 201, o["alert-rules"][body["uid"]]
            case "PUT", ["v1", "provisioning", "alert-rules", uid]:
                o["alert-rules"][uid] = {**body, "id": o["alert-rules"][uid]["id"], "provenance": "api"}
                return 200, o["alert-rules"][uid]
            case "GET", ["v1", "provisioning", "folder", folder, "rule-groups", group]:
                found = o["rule-groups"].get((folder, group))
                return (200, found) if found else (404, {"message": "not found"})
            case "PUT", ["v1", "provisioning", "folder", folder, "rule-groups", group]:
                o["rule-groups"][(folder, group)] = body
                for rule in body.get("rules", []):
                    kept = o["alert-rules"].get(rule["uid"], {"id": len(o["alert-rules"]) + 1})
                    o["alert-rules"][rule["uid"]] = {**rule, "id": kept["id"], "provenance": "api"}
                return 200, body
            case "GET", ["plugins"]:
                return 200, [{"id": p, "type": "panel"} for p in self.plugins]
            case "GET", ["serviceaccounts", "search"]:
                found = [a for a in o["serviceaccounts"].values() if params.get("query", "") in a["name"]]
                page, per = int(params.get("page", 1)), int(params.get("perpage", 1000))
                return 200, {"totalCount": len(found), "page": page, "perPage": per,
                             "serviceAccounts": found[(page - 1) * per:page * per]}
            case "POST", ["serviceaccounts"]:
                account = {"id": len(o["serviceaccounts"]) + 1, **body}
                o["serviceaccounts"][account["id"]] = account
                return 201, account
            case "POST", ["serviceaccounts", sid, "tokens"]:
                return 200, {"id": 1, "name": body["name"], "key": f"glsa_test_{sid}"}
        return 404, {"message": f"no route {method} {path}"}

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                url = urllib.parse.urlsplit(self.path)
                code, doc = fake.route(self.command, url.path, body, dict(urllib.parse.parse_qsl(url.query)))
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = _answer

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
