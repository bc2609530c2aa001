"""`curvestream demo` beside two busy-looping processes that take the CPU
first (the demo runs at a lower priority, `nice -n 5`, as a trainer's logging
would beside a training that keeps both cores busy): the embedded broker never
gives up on a delivery while the bridge writes (amqtt did after 5 s, with a
traceback each), the console holds no traceback, and every point arrives
exactly once with the values the training computed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Any, ClassVar

import curvestream
import curvestream.demo
from helpers import get_json, prometheus_value, run_path
from servers import free_port, wait_until

RUNS, STEPS, SECONDS = 3, 1500, 5.0


class _Recorded:
    """What `curvestream.init` gives the demo's training here: a run that only remembers its points."""

    runs: ClassVar[dict[str, dict[str, dict[int, float]]]] = {}

    def __init__(self, run: str, **_: Any) -> None:
        self.points = _Recorded.runs.setdefault(run, {})

    def __enter__(self) -> _Recorded:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def log(self, metrics: dict[str, float], step: int) -> None:
        for key, value in metrics.items():
            self.points.setdefault(key, {})[step] = value

    def log_histogram(self, *args: object, **kwargs: object) -> None:
        pass

    def log_text(self, *args: object, **kwargs: object) -> None:
        pass


def _expected_points(monkeypatch: Any) -> dict[str, dict[str, dict[int, float]]]:
    """The demo's training is seeded: run it again here, without curvestream, and keep what it logs."""
    _Recorded.runs = {}
    monkeypatch.setattr(curvestream, "init", lambda project, run, **kw: _Recorded(run))
    monkeypatch.setattr(curvestream, "LogHandler", lambda run: __import__("logging").NullHandler())
    curvestream.demo.run_sweep(project="demo", runs=RUNS, steps=STEPS, seconds=0.0)
    return {name.rsplit(" ", 1)[0]: points for name, points in _Recorded.runs.items()}  # by "spirals lr=…"


def test_demo_beside_two_busy_processes_prints_no_traceback_and_stores_every_point_once(tmp_path, monkeypatch):
    expected = _expected_points(monkeypatch)
    port, mqtt_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    out = tmp_path / "demo.out"
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    demo = None
    try:
        with open(out, "wb") as fh:
            demo = subprocess.Popen(
                ["nice", "-n", "5", sys.executable, "-m", "curvestream.cli", "demo", "--data", str(tmp_path / "data"),
                 "--port", str(port), "--mqtt-port", str(mqtt_port), "--runs", str(RUNS), "--steps", str(STEPS),
                 "--duration", str(SECONDS), "--spool-dir", str(tmp_path / "spool")],
                # no session of its own: with the kernel's autogroups a new session would get its own share
                # of the CPU whatever its nice value, and the busy loops would not press on it
                stdout=fh, stderr=subprocess.STDOUT, env=env)
        wait_until(lambda: "training done" in out.read_text() or demo.poll() is not None, 300,
                   "the demo's training and its runs' finish")
        assert demo.poll() is None, out.read_text()[-3000:]
        runs = {r["run"].rsplit(" ", 1)[0]: r["run"] for r in get_json(base, "/api/v1/runs")["runs"]
                if r["project"] == "demo"}
        assert set(runs) == set(expected)
        want = sum(len(points) for keys in expected.values() for points in keys.values())
        wait_until(lambda: sum(m["count"] for run in runs.values()
                               for m in get_json(base, run_path("demo", run) + "/metrics")["metrics"]) >= want,
                   300, f"{want} points stored")
        printed = out.read_text()
        assert "Traceback" not in printed, printed[-3000:]
        assert "Timeout waiting" not in printed and "TimeoutError" not in printed, printed[-3000:]
        total = 0
        for label, keys in expected.items():
            for key, points in keys.items():
                got = get_json(base, run_path("demo", runs[label]) + "/series", key=key, x="step", width=10000)
                assert got["raw"] is True and got["total"] == len(points), f"{label} {key}: {got['total']} stored"
                stored = list(zip(got["points"]["step"], got["points"]["y"]))
                assert stored == sorted(points.items()), f"{label} {key}: every point once, with its value"
                total += len(points)
        assert prometheus_value(base, "curvestream_points_ingested_total") >= total  # + histograms and texts
        # batches a trainer sent again (no commit within its ack timeout on a starved machine) were dropped:
        # counted, never stored twice (the series above)
        print("re-sent batches dropped:", prometheus_value(base, "curvestream_batches_duplicate_total"))
    finally:
        for p in busy:
            p.kill()
            p.wait(5)
        if demo is not None and demo.poll() is None:
            demo.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                demo.wait(30)
            if demo.poll() is None:
                demo.kill()
                demo.wait(5)
