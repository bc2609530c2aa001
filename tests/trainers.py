"""A trainer in a background thread, for tests that break things around it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import curvestream

__all__ = ["TrainerThread"]


class TrainerThread(threading.Thread):
    """Logs ``values(step)`` for n steps in chunks, pausing between chunks; ``logged`` tells how far it got."""

    def __init__(self, n: int, values: Callable[[int], dict[str, float]], chunk: int = 1000, pause_s: float = 0.01,
                 **init: object) -> None:
        super().__init__(name="test-trainer", daemon=True)
        self.n, self.values, self.chunk, self.pause_s = n, values, chunk, pause_s
        self.init_kw = {"ack_timeout_ms": 3000, "finish_timeout_ms": 180_000, **init}
        if "run" in self.init_kw and "id" not in self.init_kw:  # the tests look the run up by this identity
            self.init_kw["id"] = self.init_kw.pop("run")
        self.logged = 0
        self.error: BaseException | None = None
        self.report = None
        self.run_obj = None

    def run(self) -> None:
        try:
            with curvestream.init(**self.init_kw) as run:  # type: ignore[arg-type]
                self.run_obj = run
                for i in range(self.n):
                    run.log(self.values(i), step=i)
                    if (i + 1) % self.chunk == 0:
                        self.logged = i + 1
                        time.sleep(self.pause_s)
                self.logged = self.n
            self.report = run.finish()
        except BaseException as exc:
            self.error = exc

    def done(self, timeout: float = 240) -> None:
        """Wait for the end of the run; raise what it raised; the report must be complete."""
        self.join(timeout)
        assert not self.is_alive(), "the trainer did not finish"
        if self.error is not None:
            raise self.error
        assert self.report.complete, self.report
