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

import base64
import dataclasses
import json
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

    def state_json(self) -> str:
        """``to_dict()`` as JSON text, written directly: it is saved for every series in every
        round, and ``json.dumps`` of the dict costs more than a small batch's evaluation."""
        return "{" + ", ".join(f'"{k}": {_json(v)}' for k, v in vars(self).items() if k not in ("key", "rule")) + "}"

    def load(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            if k in vars(self):
                setattr(self, k, TrailingWindow.from_dict(v) if isinstance(getattr(self, k), TrailingWindow) else v)


def _json(v: Any) -> str:
    """One value of a detector's state as ``json.dumps`` writes it."""
    t = type(v)
    if t is float and v - v == 0:  # finite
        return float.__repr__(v)
    if t is int:
        return int.__repr__(v)
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isfinite(v):
            return float.__repr__(v)
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, list):
        return "[" + ", ".join(map(_json, v)) + "]"
    if isinstance(v, TrailingWindow):
        values = base64.b64encode(np.asarray(v.values, dtype="<f8").tobytes()).decode()
        steps = base64.b64encode(np.asarray(v.steps, dtype="<i8").tobytes()).decode()
        return f'{{"size": {int(v.size)}, "values": "{values}", "steps": "{steps}"}}'
    return json.dumps(v)


class NonFinite(Detector):
    """Fires at the first NaN or ±Inf; resolves at the next finite point."""

    kind = "nonfinite"

    def __init__(self, key: str, rule: Rule | None = None) -> None:
        super().__init__(key)
        self.last_finite: float | None = None
        self.last_finite_step: int | None = None

    def state_json(self) -> str:
        return (f'{{"firing": {_json(self.firing)}, "last_finite": {_json(self.last_finite)}, '
                f'"last_finite_step": {_json(self.last_finite_step)}}}')

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
    """No improvement of the smoothed value for ``patience_steps``, with hysteresis.

    While quiet, better means ``s < best - min_delta * |best|`` (mode min;
    mirrored for max), which stays right for negative values; it fires at the
    first point ``patience_steps`` after the best. Once firing, it stays so until
    the smoothed value is better than that best by ``min_delta * |best|`` and by
    ``noise_margin`` standard deviations of the smoothed value's own noise
    (estimated from the raw values' second differences over the trailing
    ``window``): the dips of a noisy curve that has converged are not taken for
    progress, so it raises one alert, not one per wobble. After it resolves the
    best is taken from there, so it fires again no sooner than ``patience_steps``
    later. NaN and ±Inf never count, and points far outside the recent range
    (robust z above ``ignore_spikes``) are left out, so one corrupted batch
    neither hides nor fakes a plateau."""

    kind = "plateau"

    def __init__(self, key: str, rule: Rule) -> None:
        super().__init__(key)
        self.rule = rule
        self.first_step: int | None = None
        self.smoothed: float | None = None
        self.smoothed_step: int | None = None
        self.best: float | None = None  # in "lower is better" sign
        self.best_step = 0
        self.window = TrailingWindow(int(rule.value("window")))
        self.last_values: list[float] = []  # the last two raw values taken in
        self.curvature: float | None = None  # mean |x_t - 2 x_(t-1) + x_(t-2)| over the trailing window (an EMA)

    def state_json(self) -> str:
        last = self.last_values
        last_json = f"[{_json(last[0])}, {_json(last[1])}]" if len(last) == 2 else _json(last)
        return (f'{{"firing": {_json(self.firing)}, "first_step": {_json(self.first_step)}, '
                f'"smoothed": {_json(self.smoothed)}, "smoothed_step": {_json(self.smoothed_step)}, '
                f'"best": {_json(self.best)}, "best_step": {_json(self.best_step)}, "window": {_json(self.window)}, '
                f'"last_values": {last_json}, "curvature": {_json(self.curvature)}}}')

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
        weight = float(rule.value("smoothing"))
        gaps = np.diff(st, prepend=st[0] if self.smoothed_step is None else self.smoothed_step)
        s = ema(raw, self.smoothed, weight, gaps)
        self.smoothed, self.smoothed_step = float(s[-1]), int(st[-1])
        noise = self._noise(raw, weight ** np.maximum(gaps, 1).astype(np.float64))
        return self.judge(st, wall, s, noise)

    def judge(self, st: np.ndarray, wall: np.ndarray, s: np.ndarray, noise: np.ndarray) -> list[Transition]:
        """The transitions of the smoothed values ``s`` (their steps ``st``, each point's noise
        margin ``noise``), from the best and the firing state so far; moves both on."""
        rule = self.rule
        sign = 1.0 if rule.value("mode") == "min" else -1.0
        u = sign * s
        assert self.first_step is not None, "the first points set it"
        pos = int(np.searchsorted(st, self.first_step + int(rule.value("warmup_steps")), side="left"))
        if pos >= len(st):
            return []
        if self.best is None:
            self.best, self.best_step = float(u[pos]), int(st[pos])
            pos += 1
        patience, delta = int(rule.value("patience_steps")), float(rule.value("min_delta"))
        out: list[Transition] = []
        while pos < len(st):
            if self.firing:
                i = self._next_better(u, noise, pos, delta)
                if i >= len(st):
                    break
                step = int(st[i])
                out.append(Transition(
                    "resolved", step, int(wall[i]), float(s[i]), self.best_step, step,
                    f"{self.key} improves again: {_fmt(float(s[i]))} at step {step}, better than the best "
                    f"{_fmt(sign * self.best)} of step {self.best_step}"))
                self.firing = False
                self.best, self.best_step = float(u[i]), step
            else:
                i = self._patience_runs_out(st, u, pos, patience, delta)
                if i >= len(st):
                    break
                out.append(self._fired(sign, st, wall, s, i, patience, delta))
                self.firing = True
            pos = i + 1
        return out

    def _patience_runs_out(self, st: np.ndarray, u: np.ndarray, pos: int, patience: int, delta: float) -> int:
        """Follow the best through the improvements from ``pos``; the index where
        ``patience_steps`` pass without one (len(st): not in this batch)."""
        assert self.best is not None
        n = len(u)
        if delta <= ROUNDING:  # every new best counts: found at once, not one by one
            part, steps = u[pos:], st[pos:]
            best_before = np.minimum.accumulate(np.concatenate([[self.best], part]))[:-1]
            improved = part < best_before - ROUNDING * np.abs(best_before)
            last = np.maximum.accumulate(np.where(improved, np.arange(len(part)), -1))
            best_step = np.where(last >= 0, steps[np.maximum(last, 0)], self.best_step)
            due = np.flatnonzero(~improved & (steps - best_step >= patience))
            k = int(due[0]) if len(due) else len(part) - 1  # where this call leaves the best
            self.best = float(min(self.best, part[:k + 1].min()))
            if last[k] >= 0:
                self.best_step = int(steps[last[k]])
            return pos + k if len(due) else n
        running_min = -np.minimum.accumulate(u[pos:])  # nondecreasing: searchable
        start = pos
        while True:
            bar = self.best - delta * abs(self.best)
            nxt = max(pos, start + int(np.searchsorted(running_min, -bar, side="right")))
            due_at = max(pos, int(np.searchsorted(st, self.best_step + patience, side="left")))
            if due_at < min(nxt, n):
                return due_at
            if nxt >= n:
                return n
            self.best, self.best_step = float(u[nxt]), int(st[nxt])
            pos = nxt + 1

    def _noise(self, raw: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Per point: ``noise_margin`` standard deviations of the smoothed value's noise.

        The raw values' standard deviation is taken from their second differences
        (``x_t - 2 x_(t-1) + x_(t-2)``, blind to a straight trend): ``sqrt(pi / 12)``
        times their mean absolute size for independent noise, averaged over the
        trailing ``window`` points (an EMA); the smoothing's weight ``w`` of each
        point's past scales it by ``sqrt((1 - w) / (1 + w))``. Batches split anywhere
        give the same values."""
        sigmas = float(self.rule.value("noise_margin"))
        if sigmas <= 0:
            return np.zeros(len(raw))
        memory = 1.0 - 1.0 / max(1, int(self.rule.value("window")))
        known = np.asarray(self.last_values, dtype=np.float64)
        seq = np.concatenate([known, raw])
        curvature = np.abs(np.diff(seq, n=2)) if len(seq) > 2 else np.empty(0)
        mean = ema(curvature, self.curvature, memory)
        first = 2 - len(known)  # the index in raw of the first second difference
        per_point = np.empty(len(raw))
        per_point[:max(first, 0)] = self.curvature or 0.0
        per_point[max(first, 0):] = mean[max(0, -first):]
        if len(mean):
            self.curvature = float(mean[-1])
        self.last_values = seq[-2:].tolist()
        return sigmas * per_point * math.sqrt(math.pi / 12) * np.sqrt((1 - weight) / (1 + weight))

    def _next_better(self, u: np.ndarray, noise: np.ndarray, pos: int, delta: float) -> int:
        """The first index from ``pos`` better than the best by ``min_delta`` and by the noise
        margin (len(u): none). Looks ahead in spans that double: a batch costs time in
        proportion to its length."""
        assert self.best is not None
        bar = self.best - max(delta, ROUNDING) * abs(self.best)
        span = 64
        while pos < len(u):
            end = min(len(u), pos + span)
            better = (u[pos:end] < bar) & (u[pos:end] + noise[pos:end] < self.best)
            if better.any():
                return pos + int(np.argmax(better))
            pos, span = end, span * 2
        return len(u)

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
