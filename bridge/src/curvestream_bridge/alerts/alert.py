"""An alert as the engine keeps, saves and delivers it: one record per (rule,
project, run, key), its latest transition; ``to_json`` is the object of
``GET /api/v1/alerts``."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from typing import Any

__all__ = ["Alert", "alert_id", "SEP"]

SEP = "\x1f"  # between the parts of a state entry's name; never in a rule name


@functools.lru_cache(maxsize=1 << 16)  # looked up for every run of every round (its stalled alert)
def alert_id(rule: str, project: str, run: str, key: str) -> str:
    """Stable across restarts and bridges: the same (rule, project, run, key) is the same alert."""
    return hashlib.sha256(SEP.join((rule, project, run, key)).encode()).hexdigest()[:20]


@dataclasses.dataclass
class Alert:
    id: str
    rule: str
    kind: str
    severity: str
    project: str
    run: str
    key: str
    state: str  # firing | resolved
    step: int  # firing: where the condition became true; resolved: where it stopped being true
    time_ms: float
    value: float | None
    message: str
    from_step: int
    to_step: int
    started_ms: float  # when the current (or last) firing began
    ended_ms: float | None = None
    fired_step: int = 0  # the step of the current (or last) firing
    version: int = 0  # counts transitions: what deliveries remember
    time_ns: int = 0  # time_ms exactly: where the store puts the transition

    def to_json(self) -> dict[str, Any]:
        value: float | str | None = self.value
        if self.value is not None and not math.isfinite(self.value):
            value = "NaN" if math.isnan(self.value) else ("+Inf" if self.value > 0 else "-Inf")
        return {
            "id": self.id, "rule": self.rule, "kind": self.kind, "severity": self.severity,
            "project": self.project, "run": self.run, "key": self.key, "state": self.state,
            "step": self.step, "time_ms": self.time_ms, "value": value, "message": self.message,
            "window": {"from_step": self.from_step, "to_step": self.to_step},
            "fired_step": self.fired_step, "started_ms": self.started_ms, "ended_ms": self.ended_ms,
            "version": self.version, "time_ns": self.time_ns,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Alert:
        value = d.get("value")
        if isinstance(value, str):
            value = float(value.replace("Inf", "inf"))
        return cls(d["id"], d["rule"], d["kind"], d["severity"], d["project"], d["run"], d["key"], d["state"],
                   int(d["step"]), float(d["time_ms"]), value, d["message"], int(d["window"]["from_step"]),
                   int(d["window"]["to_step"]), float(d["started_ms"]), d.get("ended_ms"),
                   int(d.get("fired_step", d["step"])), int(d.get("version", 0)), int(d.get("time_ns", 0)))
