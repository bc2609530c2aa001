"""Small helpers for tests: the bridge's HTTP API and its Prometheus metrics."""

from __future__ import annotations

import json
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
    q = lambda s: urllib.parse.quote(s, safe="")  # noqa: E731
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

