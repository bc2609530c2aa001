"""The bridge in its own process over a store whose writes can be held back:
the seam for showing that the live push does not wait for the store, and that
a trainer waits for a slow bridge. :class:`HeldBridge` starts it for a test.
Everything else (MQTT, ingest, the live WebSocket, the page) is the real bridge.

While the file named by ``HELD_STORE_GATE`` exists, a store write waits (it
has begun, it has not finished). ``HELD_STORE_STATE`` is rewritten with
``{"begun": n, "finished": m}`` as writes begin and end.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import threading
from collections.abc import Sequence
from typing import Any

from curvestream_bridge.store import Store
from servers import BridgeProcess
from wrapped_bridge import run_over


class HeldStore:
    def __init__(self, inner: Store, gate: pathlib.Path, state: pathlib.Path) -> None:
        self.inner = inner
        self.gate = gate
        self.state = state
        self.begun = 0
        self.finished = 0
        self._opened = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write(self, batches: Sequence[Any]) -> None:
        self.begun += 1
        self._tell()
        while self.gate.exists():
            self._opened.wait(0.01)  # the test removes the gate file: the write goes on
        try:
            self.inner.write(batches)
        finally:
            self.finished += 1
            self._tell()

    def _tell(self) -> None:
        tmp = self.state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"begun": self.begun, "finished": self.finished}))
        tmp.replace(self.state)


class HeldBridge(BridgeProcess):
    """The real bridge (its own process, DuckDB) whose store writes wait while ``gate`` exists."""

    def __init__(self, workdir: pathlib.Path, mqtt_url: str, **settings: str) -> None:
        super().__init__(workdir, f"duckdb:///{workdir / 's.duckdb'}", mqtt_url, **settings)
        self.gate = workdir / "gate"
        self.state = workdir / "state.json"

    def command(self) -> list[str]:
        return [sys.executable, str(pathlib.Path(__file__).resolve())]

    def env(self) -> dict[str, str]:
        return {**super().env(), "HELD_STORE_GATE": str(self.gate), "HELD_STORE_STATE": str(self.state)}

    def writes(self) -> dict[str, int]:
        return json.loads(self.state.read_text())


def main() -> None:
    run_over(lambda store: HeldStore(store, pathlib.Path(os.environ["HELD_STORE_GATE"]),
                                     pathlib.Path(os.environ["HELD_STORE_STATE"])))


if __name__ == "__main__":
    main()
