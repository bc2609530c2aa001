"""A real HTTP server in a thread that records the JSON bodies POSTed to it:
the receiving end of alert webhooks in tests."""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any

__all__ = ["WebhookReceiver"]


class WebhookReceiver:
    def __init__(self, port: int) -> None:
        self.port = port
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver._lock:
                    receiver.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="webhook-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def alerts(self, **labels: str) -> list[dict[str, Any]]:
        """Every alert item received whose labels include these."""
        with self._lock:
            items = [a for body in self.bodies for a in body["alerts"]]
        return [a for a in items if all(a["labels"].get(k) == v for k, v in labels.items())]
