"""Small helpers for tests: the bridge's HTTP API and its Prometheus metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["get_json", "run_path", "prometheus_value"]


def get_json(base: str, path: str, **params: Any) -> Any:
    query = urllib.parse.urlencode(params, doseq=True, quote_via=urllib.parse.quote)
    url = f"{base}{path}" + (f"?{query}" if query else "")
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def run_path(project: str, run: str) -> str:
    def q(s):
        return urllib.parse.quote(s, safe="")
    return f"/api/v1/runs/{q(project)}/{q(run)}"


def prometheus_value(base: str, name: str, **labels: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    wanted = name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "")
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        metric, _, value = line.rpartition(" ")
        if metric == wanted or (not labels and metric.split("{")[0] == name):
            total += float(value)
    return total



def series_points(base: str, project: str, run: str, key: str, start: int, end: int) -> dict:
    return get_json(base, run_path(project, run) + "/series", key=key, start=start, end=end, width=20000)


def stored_steps(base: str, project: str, run: str, key: str, last_step: int, window: int = 80_000) -> list[int]:
    """Every stored step of a series, read as raw points window by window (a duplicate shows twice)."""
    steps: list[int] = []
    for lo in range(0, last_step + 1, window):
        ans = series_points(base, project, run, key, lo, min(lo + window - 1, last_step))
        assert ans["raw"], f"window {lo} not raw: {ans['total']} points"
        steps.extend(ans["points"]["step"])
    return steps


def metric_counts(base: str, project: str, run: str) -> dict[str, int]:
    metrics = get_json(base, run_path(project, run) + "/metrics")["metrics"]
    return {m["key"]: m["count"] for m in metrics}


def run_state(base: str, project: str, run: str) -> str | None:
    for r in get_json(base, "/api/v1/runs")["runs"]:
        if (r["project"], r["run"]) == (project, run):
            return r["state"]
    return None


def import_command(source: str, folder: Any, mqtt_url: str, bridge_url: str, spool_dir: Any) -> dict:
    """``curvestream import SOURCE FOLDER`` run as its own process into a bridge; its JSON report."""
    proc = subprocess.run(
        [sys.executable, "-m", "curvestream.cli", "import", source, str(folder)],
        env={**os.environ, "CURVESTREAM_MQTT_URL": mqtt_url, "CURVESTREAM_BRIDGE_URL": bridge_url,
             "CURVESTREAM_SPOOL_DIR": str(spool_dir)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"import failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)
