"""What the fan-in benches share: the bridge's memory from /proc, and a WebSocket
on /api/v1/live that times every pushed point."""

from __future__ import annotations

import json
import pathlib
import threading
import time

__all__ = ["rss_mb", "LiveListener"]


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class LiveListener(threading.Thread):
    """A WebSocket on /api/v1/live subscribed to some runs of a project; the latency of
    every pushed point (arrival minus its wall time) and the gap messages."""

    def __init__(self, url: str, project: str, runs: list[str]) -> None:
        super().__init__(daemon=True)
        self.url, self.project, self.runs = url, project, runs
        self.latencies_ms: list[float] = []
        self.gaps = 0
        self.stop = threading.Event()
        self.subscribed = threading.Event()

    def run(self) -> None:
        from websockets.sync.client import connect

        with connect(self.url, max_size=None) as ws:
            ws.send(json.dumps({"subscribe": [{"project": self.project, "run": r} for r in self.runs]}))
            self.subscribed.set()
            while not self.stop.is_set():
                try:
                    text = ws.recv(timeout=0.5)
                except TimeoutError:
                    continue
                except Exception:
                    return
                now_ms = time.time() * 1000
                msg = json.loads(text)
                if msg.get("type") == "points":
                    for series in msg["series"]:
                        self.latencies_ms.extend(now_ms - t for t in series["time_ms"])
                elif msg.get("type") == "gap":
                    self.gaps += 1
