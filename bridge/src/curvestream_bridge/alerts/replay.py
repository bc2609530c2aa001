"""``curvestream alerts test --rules FILE PROJECT RUN``: replay a stored run
through rules and print what would fire, where and why, to tune rules on
history before turning them on.

Points are read from a running bridge's HTTP API (``--bridge``, default
``CURVESTREAM_BRIDGE_URL``) as raw points, window by window, and fed to the
same engine the bridge runs, in batches of ``--batch`` points. ``stalled``
is judged from the gaps between the points' wall times, ``lost`` from the
run's stored state.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np

from curvestream_bridge.alerts.engine import Alert, AlertEngine, alert_id
from curvestream_bridge.alerts.rules import RulesError, load_rules
from curvestream_bridge.batch import DecodedBatch, ScalarColumn

__all__ = ["main", "replay"]

RAW_WINDOW_STEPS = 40_000  # with width 20000 the API answers raw points for ranges this wide
_NONFINITE = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}


class BridgeReader:
    def __init__(self, base: str, token: str = "") -> None:
        self.base = base.rstrip("/")
        self.token = token

    def get(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        request = urllib.request.Request(f"{self.base}{path}" + (f"?{query}" if query else ""))
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=60) as resp:
            return json.loads(resp.read())

    def run_path(self, project: str, run: str) -> str:
        return f"/api/v1/runs/{urllib.parse.quote(project, safe='')}/{urllib.parse.quote(run, safe='')}"

    def run_state(self, project: str, run: str) -> str:
        for r in self.get("/api/v1/runs", project=project)["runs"]:
            if r["run"] == run:
                return str(r["state"])
        raise LookupError(f"no run {project}/{run} at {self.base}")

    def scalars(self, project: str, run: str) -> list[dict[str, Any]]:
        return [m for m in self.get(self.run_path(project, run) + "/metrics")["metrics"] if m["kind"] == "scalar"]

    def points(self, project: str, run: str, metric: dict[str, Any]) -> Iterator[tuple[np.ndarray, ...]]:
        lo, last = int(metric["first_step"]), int(metric["last_step"])
        while lo <= last:
            hi = min(lo + RAW_WINDOW_STEPS - 1, last)
            ans = self.get(self.run_path(project, run) + "/series", key=metric["key"], start=lo, end=hi, width=20000)
            pts = ans["points"]
            if pts["step"]:
                yield (np.asarray(pts["step"], dtype=np.int64),
                       (np.asarray(pts["time_ms"], dtype=np.float64) * 1e6).astype(np.int64),
                       np.asarray([_NONFINITE.get(y, y) if isinstance(y, str) else y for y in pts["y"]],
                                  dtype=np.float64))
            lo = hi + 1


def replay(reader: BridgeReader, rules: list, project: str, run: str, batch_points: int = 1000) -> list[Alert]:
    engine = AlertEngine(rules)
    out: list[Alert] = []
    walls: list[np.ndarray] = []
    steps_seen: list[np.ndarray] = []
    for metric in reader.scalars(project, run):
        for steps, wall, values in reader.points(project, run, metric):
            walls.append(wall)
            steps_seen.append(steps)
            for i in range(0, len(steps), batch_points):
                col = ScalarColumn(metric["key"], steps[i:i + batch_points], wall[i:i + batch_points],
                                   values[i:i + batch_points])
                out += engine.evaluate([DecodedBatch(b"replay", 1, project, run, [col], [], [], None, None, 0)]).alerts
    out += _stalled(engine, rules, project, run, walls, steps_seen)
    if reader.run_state(project, run) == "lost":
        last = max((int(x.max()) for x in steps_seen if len(x)), default=0)
        end_ms = max((float(w.max()) for w in walls if len(w)), default=0.0) / 1e6
        for rule in rules:
            if rule.kind == "lost" and rule.matches_run(project, run):
                out.append(Alert(alert_id(rule.name, project, run, ""), rule.name, "lost", rule.effective_severity,
                                 project, run, "", "firing", last, end_ms, None,
                                 f"run {project}/{run} was lost: its connection ended without a finish "
                                 f"(MQTT Last Will) after step {last}", last, last, end_ms))
    return out


def _stalled(engine: AlertEngine, rules: list, project: str, run: str, walls: list[np.ndarray],
             steps: list[np.ndarray]) -> list[Alert]:
    """Gaps in the run's wall times longer than a stalled rule's ``after_s``."""
    found: list[Alert] = []
    if not walls:
        return found
    wall = np.concatenate(walls)
    step = np.concatenate(steps)
    order = np.argsort(wall, kind="stable")
    wall, step = wall[order], step[order]
    gaps = np.diff(wall) / 1e9
    for rule in rules:
        if rule.kind != "stalled" or not rule.matches_run(project, run):
            continue
        after_s = float(rule.value("after_s"))
        for i in np.flatnonzero(gaps >= after_s):
            message = (f"run {project}/{run} logged no point for {gaps[i]:.0f} s after step {int(step[i])} "
                       f"(stalled after {after_s:g} s), until step {int(step[i + 1])}")
            found.append(Alert(alert_id(rule.name, project, run, ""), rule.name, "stalled", rule.effective_severity,
                               project, run, "", "firing",
                               int(step[i]), float(wall[i]) / 1e6 + after_s * 1e3, None, message, int(step[i]),
                               int(step[i + 1]), float(wall[i]) / 1e6 + after_s * 1e3))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="curvestream alerts test",
                                     description="Replay a stored run through alert rules; print what would fire.")
    parser.add_argument("--rules", required=True, metavar="FILE", help="YAML rules file (docs/alerts.md)")
    parser.add_argument("--bridge", default=os.environ.get("CURVESTREAM_BRIDGE_URL", "http://127.0.0.1:8080"),
                        metavar="URL",
                        help="bridge HTTP base (default CURVESTREAM_BRIDGE_URL or http://127.0.0.1:8080)")
    parser.add_argument("--token", default=os.environ.get("CURVESTREAM_READ_TOKEN", ""),
                        help="read token (default CURVESTREAM_READ_TOKEN)")
    parser.add_argument("--batch", type=int, default=1000, metavar="POINTS",
                        help="points per evaluated batch (default 1000)")
    parser.add_argument("--json", action="store_true", help="one JSON object per alert change instead of text")
    parser.add_argument("project", help="the run's project")
    parser.add_argument("run", help="the run (as the runs list names it)")
    args = parser.parse_args(argv)
    try:
        rules = load_rules(args.rules)
    except RulesError as exc:
        print(f"curvestream alerts test: {exc}", file=sys.stderr)
        return 2
    try:
        found = replay(BridgeReader(args.bridge, args.token), rules, args.project, args.run, max(1, args.batch))
    except (urllib.error.URLError, OSError, LookupError) as exc:
        print(f"curvestream alerts test: cannot read {args.project}/{args.run} from {args.bridge}: {exc}",
              file=sys.stderr)
        return 1
    for a in found:
        if args.json:
            print(json.dumps(a.to_json(), allow_nan=False))
        else:
            where = f" {a.key}" if a.key else ""
            print(f"{a.state.upper():8} {a.rule}{where} at step {a.step} (window {a.from_step}..{a.to_step}): "
                  f"{a.message}")
    fired = sum(1 for a in found if a.state == "firing")
    if not args.json:
        print(f"{fired} alert(s) would fire on {args.project}/{args.run} with {len(rules)} rule(s)")
    return 0
