"""The bridge in its own process over a store engine that fails on purpose:
the seam for fault tests. Everything else (MQTT, HTTP, the ingest pipeline,
the parked set) is the real bridge.

While the JSON file named by ``FAULTY_STORE_SPEC`` exists, a store write that
holds a point whose step lies in ``steps`` raises the named built-in exception:
``{"exception": "TypeError", "steps": [lo, hi]}``. Delete the file: the fix.
"""

from __future__ import annotations

import builtins
import json
import os
import pathlib
from collections.abc import Sequence
from typing import Any

from curvestream_bridge.store import Store
from wrapped_bridge import run_over


class FaultyStore:
    def __init__(self, inner: Store, spec: pathlib.Path) -> None:
        self.inner = inner
        self.spec = spec

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write(self, batches: Sequence[Any]) -> None:
        try:
            fault = json.loads(self.spec.read_text())
        except FileNotFoundError:
            fault = None
        if fault is not None:
            lo, hi = fault["steps"]
            if any(((col.steps >= lo) & (col.steps <= hi)).any() for b in batches for col in b.scalars):
                raise getattr(builtins, fault["exception"])(f"injected fault on steps {lo}..{hi}")
        self.inner.write(batches)


def main() -> None:
    run_over(lambda store: FaultyStore(store, pathlib.Path(os.environ["FAULTY_STORE_SPEC"])))


if __name__ == "__main__":
    main()
