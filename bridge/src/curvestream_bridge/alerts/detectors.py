"""Streaming detectors, one small class per series kind: ``update`` takes a
batch's numpy columns (steps sorted, each step newer than any seen before) and
returns the transitions it caused; ``to_dict``/``from_dict`` persist the few
numbers of state.

    >>> import numpy as np
    >>> d = NonFinite("loss")
    >>> [e.step for e in d.update(np.array([1, 2, 3]), np.array([10, 20, 30]), np.array([0.5, np.nan, np.nan]))]
    [2]
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from curvestream_bridge.alerts.rules import Rule
from curvestream_bridge.alerts.streaming import TrailingWindow, ema

__all__ = ["Transition", "Detector", "NonFinite", "Threshold", "Spike", "Plateau", "detector_for"]


@dataclasses.dataclass
class Transition:
    state: str  # "firing" | "resolved"
    step: int  # where the condition became true (firing) or stopped being true (resolved)
    wall_ns: int
    value: float | None  # None for the run kinds (stalled, lost)
    from_step: int
    to_step: int
    message: str


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:.4g}"


class Detector:
    kind = ""

    def __init__(self, key: str) -> None:
        self.key = key
        self.firing = False

    def update(self, steps: np.ndarray, wall_ns: np.ndarray, values: np.ndarray) -> list[Transition]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {k: v.to_dict() if isinstance(v, TrailingWindow) else v
                for k, v in vars(self).items() if k not in ("key", "rule")}

    def load(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            if k in vars(self):
                setattr(self, k, TrailingWindow.from_dict(v) if isinstance(getattr(self, k), TrailingWindow) else v)


class NonFinite(Detector):
    """Fires at the first NaN or ±Inf; resolves at the next finite point."""

    kind = "nonfinite"

    def __init__(self, key: str, rule: Rule | None = None) -> None:
        super().__init__(key)
        self.last_finite: float | None = None
        self.last_finite_step: int | None = None

    def update(self, steps: np.ndarray, wall_ns: np.ndarray, values: np.ndarray) -> list[Transition]:
        bad = ~np.isfinite(values)
        out: list[Transition] = []
        pos = 0
        while pos < len(values):
            wanted = ~bad[pos:] if self.firing else bad[pos:]
            hit = int(np.argmax(wanted))
            if not wanted[hit]:
                break
            i = pos + hit
            if i > 0 and not self.firing:
                self._remember(steps, values, bad, i)
            step, v = int(steps[i]), float(values[i])
            if not self.firing:
                before = (f" (last finite value {_fmt(self.last_finite)} at step {self.last_finite_step})"
                          if self.last_finite is not None else "")
                out.append(Transition("firing", step, int(wall_ns[i]), v, step, step,
                                      f"{self.key} became {_fmt(v)} at step {step}{before}"))
            else:
                out.append(Transition("resolved", step, int(wall_ns[i]), v, step, step,
                                      f"{self.key} is finite again at step {step} ({_fmt(v)})"))
            self.firing = not self.firing
            pos = i + 1
        self._remember(steps, values, bad, len(values))
        return out

    def _remember(self, steps: np.ndarray, values: np.ndarray, bad: np.ndarray, end: int) -> None:
        good = np.flatnonzero(~bad[:end])
        if len(good):
            self.last_finite, self.last_finite_step = float(values[good[-1]]), int(steps[good[-1]])


class Threshold(Detector):
    """Fires when a value passes ``threshold`` (above for mode max, below for
    min); resolves when it is back."""

    kind = "threshold"

    def __init__(self, key: str, rule: Rule) -> None:
        super().__init__(key)
        self.rule = rule

    def update(self, steps: np.ndarray, wall_ns: np.ndarray, values: np.ndarray) -> list[Transition]:
        limit = float(self.rule.value("threshold"))
        above = self.rule.value("mode") == "max"
        with np.errstate(invalid="ignore"):
            bad = values > limit if above else values < limit
        bad &= ~np.isnan(values)
        out: list[Transition] = []
        word = "above" if above else "below"
        for i in _changes(bad, self.firing):
            step, v = int(steps[i]), float(values[i])
            if bad[i]:
                out.append(Transition("firing", step, int(wall_ns[i]), v, step, step,
                                      f"{self.key} is {_fmt(v)} at step {step}, {word} {_fmt(limit)}"))
            else:
                out.append(Transition("resolved", step, int(wall_ns[i]), v, step, step,
                                      f"{self.key} is back at {_fmt(v)} at step {step}"))
            self.firing = bool(bad[i])
        return out


def _changes(flags: np.ndarray, before: bool) -> np.ndarray:
    """Indices where a boolean column differs from its predecessor (the first from ``before``)."""
    if not len(flags):
        return np.empty(0, dtype=np.int64)
    prev = np.concatenate([[before], flags[:-1]])
    return np.flatnonzero(flags != prev)


class Spike(Detector):
    """Fires at a point whose robust z over the trailing window passes
    ``threshold``; resolves at the next ordinary point."""

    kind = "spike"

    def __init__(self, key: str, rule: Rule) -> None:
        super().__init__(key)
        self.rule = rule
        self.window = TrailingWindow(int(rule.value("window")))

    def update(self, steps: np.ndarray, wall_ns: np.ndarray, values: np.ndarray) -> list[Transition]:
        limit = float(self.rule.value("threshold"))
        finite = np.isfinite(values)
        steps, wall_ns, values = steps[finite], wall_ns[finite], values[finite]
        since = int(self.window.steps[0]) if len(self.window.steps) else None
        z, centre = self.window.robust_z(steps, values, int(self.rule.value("min_points")))
        spiking = np.nan_to_num(z, nan=0.0) > limit
        out: list[Transition] = []
        for i in _changes(spiking, self.firing):
            step, v = int(steps[i]), float(values[i])
            if spiking[i]:
                out.append(Transition(
                    "firing", step, int(wall_ns[i]), v, since if since is not None else step, step,
                    f"{self.key} spiked to {_fmt(v)} at step {step}: {z[i]:.1f} robust deviations from the median "
                    f"{_fmt(float(centre[i]))} of the {self.window.size} points before (threshold {_fmt(limit)})"))
            else:
                out.append(Transition("resolved", step, int(wall_ns[i]), v, step, step,
                                      f"{self.key} is back to ordinary at step {step} ({_fmt(v)})"))
            self.firing = bool(spiking[i])
        return out


ROUNDING = 1e-9
"""Smaller relative changes are rounding noise of the smoothing, not progress."""


class Plateau(Detector):
    """No improvement of the smoothed value for ``patience_steps``.

    Better means ``s < best - min_delta * |best|`` (mode min; mirrored for max),
    which stays right for negative values; NaN and ±Inf never count, and
    points far outside the recent range (robust z above ``ignore_spikes``) are
    left out of the smoothing, so one corrupted batch neither hides nor fakes a
    plateau. Fires at the first point ``patience_steps`` after the best;
    resolves at the next improvement."""

    kind = "plateau"

    def __init__(self, key: str, rule: Rule) -> None:
        super().__init__(key)
        self.rule = rule
        self.first_step: int | None = None
        self.smoothed: float | None = None
        self.best: float | None = None  # in "lower is better" sign
        self.best_step = 0
        self.window = TrailingWindow(int(rule.value("window")))

    def update(self, steps: np.ndarray, wall_ns: np.ndarray, values: np.ndarray) -> list[Transition]:
        rule = self.rule
        keep = np.isfinite(values)
        spikes = float(rule.value("ignore_spikes"))
        if spikes > 0:
            z, _ = self.window.robust_z(steps, values, min_points=min(20, self.window.size))
            keep &= ~(np.nan_to_num(z, nan=0.0) > spikes)
        st, wall, raw = steps[keep], wall_ns[keep], values[keep]
        if not len(st):
            return []
        if self.first_step is None:
            self.first_step = int(st[0])
        s = ema(raw, self.smoothed, float(rule.value("smoothing")))
        self.smoothed = float(s[-1])
        sign = 1.0 if rule.value("mode") == "min" else -1.0
        u = sign * s
        start = int(np.searchsorted(st, self.first_step + int(rule.value("warmup_steps")), side="left"))
        if start >= len(st):
            return []
        if self.best is None:
            self.best, self.best_step = float(u[start]), int(st[start])
            start += 1
        patience, delta = int(rule.value("patience_steps")), float(rule.value("min_delta"))
        if delta <= ROUNDING:
            return self._every_new_best(sign, st[start:], wall[start:], s[start:], u[start:], patience)
        out: list[Transition] = []
        running_min = -np.minimum.accumulate(u[start:])  # nondecreasing: searchable
        pos = start
        while True:
            bar = self.best - max(delta, ROUNDING) * abs(self.best)
            nxt = start + int(np.searchsorted(running_min, -bar, side="right"))
            nxt = max(nxt, pos)
            if not self.firing:
                due = max(pos, int(np.searchsorted(st, self.best_step + patience, side="left")))
                if due < min(nxt, len(st)):
                    out.append(self._fired(sign, st, wall, s, due, patience, delta))
                    self.firing = True
            if nxt >= len(st):
                break
            if self.firing:
                step = int(st[nxt])
                out.append(Transition(
                    "resolved", step, int(wall[nxt]), float(s[nxt]), self.best_step, step,
                    f"{self.key} improves again: {_fmt(float(s[nxt]))} at step {step}, better than the best "
                    f"{_fmt(sign * self.best)} of step {self.best_step}"))
                self.firing = False
            self.best, self.best_step = float(u[nxt]), int(st[nxt])
            pos = nxt + 1
        return out

    def _every_new_best(self, sign: float, st: np.ndarray, wall: np.ndarray, s: np.ndarray, u: np.ndarray,
                        patience: int) -> list[Transition]:
        """``min_delta`` 0: every new best counts (a steadily falling loss improves at
        almost every point), so the improvements are found at once, not one by one."""
        assert self.best is not None
        n = len(u)
        if not n:
            return []
        best_before = np.minimum.accumulate(np.concatenate([[self.best], u]))[:-1]
        improved = u < best_before - ROUNDING * np.abs(best_before)
        best = np.where(improved, u, best_before)
        last = np.maximum.accumulate(np.where(improved, np.arange(n), -1))
        best_step = np.where(last >= 0, st[np.maximum(last, 0)], self.best_step)
        due = np.flatnonzero(~improved & (st - best_step >= patience))
        gains = np.flatnonzero(improved)
        out: list[Transition] = []
        pos = 0
        while pos < n:
            if self.firing:
                k = int(np.searchsorted(gains, pos))
                if k >= len(gains):
                    break
                j = int(gains[k])
                before_best = float(best[j - 1]) if j else self.best
                before_step = int(best_step[j - 1]) if j else self.best_step
                step = int(st[j])
                out.append(Transition(
                    "resolved", step, int(wall[j]), float(s[j]), before_step, step,
                    f"{self.key} improves again: {_fmt(float(s[j]))} at step {step}, better than the best "
                    f"{_fmt(sign * before_best)} of step {before_step}"))
                self.firing = False
                pos = j + 1
            else:
                k = int(np.searchsorted(due, pos))
                if k >= len(due):
                    break
                i = int(due[k])
                self.best, self.best_step = float(best[i]), int(best_step[i])
                out.append(self._fired(sign, st, wall, s, i, patience, 0.0))
                self.firing = True
                pos = i + 1
        self.best, self.best_step = float(best[-1]), int(best_step[-1])
        return out

    def _fired(self, sign: float, st: np.ndarray, wall: np.ndarray, s: np.ndarray, i: int, patience: int,
               delta: float) -> Transition:
        step = int(st[i])
        by = f" by {delta:.0%}" if delta >= 0.01 else (f" by {delta:g}×|best|" if delta > 0 else "")
        assert self.best is not None
        return Transition(
            "firing", step, int(wall[i]), float(s[i]), self.best_step, step,
            f"{self.key} has not improved{by} for {step - self.best_step} steps (patience {patience}): "
            f"best {_fmt(sign * self.best)} at step {self.best_step}, now {_fmt(float(s[i]))} at step {step}")


_BY_KIND = {"nonfinite": NonFinite, "threshold": Threshold, "spike": Spike, "plateau": Plateau}


def detector_for(rule: Rule, key: str) -> Detector:
    return _BY_KIND[rule.kind](key, rule)
