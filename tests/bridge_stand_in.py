"""A real local HTTP server that answers POSTs and GETs as a test scripts it,
standing in for the bridge where a test needs answers the bridge never gives."""

from __future__ import annotations

import collections
import http.server
import threading

__all__ = ["BridgeStandIn"]


class _Script(http.server.BaseHTTPRequestHandler):
    answers: collections.deque
    seen: list

    def _answer(self) -> None:
        body_in = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                "body": body_in, "port": self.client_address[1]})
        status, headers, body, drop = type(self).answers.popleft()
        if status is None:  # take the request, never answer
            self.close_connection = True
            return
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if drop:
            self.close_connection = True  # no "Connection: close": the client believes it still open

    do_POST = do_GET = _answer

    def log_message(self, *args: object) -> None:
        pass


class BridgeStandIn:
    """Answers each request with the next answer given to :meth:`will_answer`;
    ``seen`` lists the requests (method, path, headers, body, client port).
    ``keep_alive``: HTTP/1.1 connections that stay open, as a real bridge behind
    uvicorn keeps them; else HTTP/1.0, one connection per request."""

    def __init__(self, keep_alive: bool = True) -> None:
        self._handler = type("Script", (_Script,), {"answers": collections.deque(), "seen": [],
                                                    "protocol_version": "HTTP/1.1" if keep_alive else "HTTP/1.0"})
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def will_answer(self, status: int | None, headers: dict[str, str] | None = None, body: bytes = b"",
                    drop: bool = False) -> None:
        """Queue an answer; ``drop``: close the kept-alive connection after it without saying so;
        ``status=None``: take the request and close the connection without any answer."""
        self._handler.answers.append((status, headers or {}, body, drop))

    @property
    def seen(self) -> list[dict]:
        return self._handler.seen

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
