"""The detectors of one rule for all series of a round, evaluated together.

A round under fan-in brings a short column for each of thousands of series;
evaluated one by one, each series costs dozens of small numpy calls, and
their fixed cost is most of the round's. Here the series of a rule that are
in their steady state (windows full, nothing to start) are stacked by length
into 2-D arrays and computed row-wise by the same expressions as the
detector's own ``update``, so every number comes out the same; only the rows
where something may happen (an alert fires or resolves, a point is filtered
out, a chunk boundary falls inside the batch) are handed to the detector's
own code. ``tests/bridge/alerts/test_many.py`` checks the two agree exactly.

    >>> import numpy as np
    >>> from curvestream_bridge.alerts.rules import Rule
    >>> rule = Rule(name="n", kind="nonfinite")
    >>> dets = [NonFinite("a"), NonFinite("b")]
    >>> cols = [(np.array([1, 2]), np.array([1, 2]), np.array([0.5, 0.25])),
    ...         (np.array([1, 2]), np.array([1, 2]), np.array([0.5, np.nan]))]
    >>> [[t.state for t in ts] for ts in update_many(rule, dets, cols)]
    [[], ['firing']]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from curvestream_bridge.alerts.detectors import ROUNDING, Detector, NonFinite, Plateau, Transition
from curvestream_bridge.alerts.rules import Rule
from curvestream_bridge.alerts.streaming import EXPONENT_SPAN, _centre_and_scale, _powers

__all__ = ["update_many", "Column"]

Column = tuple[np.ndarray, np.ndarray, np.ndarray]  # steps (sorted, new), wall_ns, values
Results = list[Sequence[Transition]]


def update_many(rule: Rule, detectors: Sequence[Detector], columns: Sequence[Column]) -> Results:
    """``[d.update(*c) for d, c in zip(detectors, columns)]``, the same transitions and state."""
    together = _BY_KIND.get(rule.kind)
    if together is None or len(detectors) < 2:
        return [d.update(*c) for d, c in zip(detectors, columns)]
    return together(rule, detectors, columns)


def _nonfinite(rule: Rule, detectors: Sequence[Detector], columns: Sequence[Column]) -> Results:
    """A series not firing whose values are all finite only remembers its last value."""
    out: Results = [()] * len(detectors)
    lengths = np.array([len(c[2]) for c in columns])
    if not lengths.all():
        return [d.update(*c) for d, c in zip(detectors, columns)]
    values = np.concatenate([c[2] for c in columns])
    ends = np.cumsum(lengths)
    bad = np.add.reduceat(~np.isfinite(values), ends - lengths).tolist()
    last_values = values[ends - 1].tolist()
    last_steps = np.concatenate([c[0][-1:] for c in columns]).tolist()
    for i, d in enumerate(detectors):
        assert isinstance(d, NonFinite)
        if bad[i] or d.firing:
            out[i] = d.update(*columns[i])
        else:
            d.last_finite, d.last_finite_step = last_values[i], last_steps[i]
    return out


class _PlateauRule:
    """A plateau rule's numbers, read once per round."""

    def __init__(self, rule: Rule) -> None:
        self.spikes = float(rule.value("ignore_spikes"))
        self.weight = float(rule.value("smoothing"))
        self.sigmas = float(rule.value("noise_margin"))
        self.memory = 1.0 - 1.0 / max(1, int(rule.value("window")))
        self.sign = 1.0 if rule.value("mode") == "min" else -1.0
        self.warmup = int(rule.value("warmup_steps"))
        self.patience = int(rule.value("patience_steps"))
        self.delta = float(rule.value("min_delta"))
        self.size = int(rule.value("window"))
        # the steady path computes each EMA as one chunk of streaming.ema / _ema_gaps
        self.span = EXPONENT_SPAN / -math.log(self.weight) if 0 < self.weight < 1 else 0.0
        self.noise_length = max(1, int(EXPONENT_SPAN / -math.log(self.memory))) if 0 < self.memory < 1 else 0

    def steady(self, d: Plateau) -> bool:
        """Started (first step, best, smoothing known) and, where used, the window full and the noise known."""
        if d.first_step is None or d.best is None or d.smoothed is None or d.smoothed_step is None:
            return False
        if self.spikes > 0 and not (len(d.window.values) == len(d.window.steps) == d.window.size == self.size):
            return False
        return self.sigmas <= 0 or (len(d.last_values) == 2 and d.curvature is not None)


def _plateau(rule: Rule, detectors: Sequence[Detector], columns: Sequence[Column]) -> Results:
    p = _PlateauRule(rule)
    out: Results = [()] * len(detectors)
    if p.span <= 0 or (p.sigmas > 0 and p.noise_length <= 0):  # no smoothing or no memory: one by one
        return [d.update(*c) for d, c in zip(detectors, columns)]
    by_length: dict[int, list[int]] = {}
    for i, d in enumerate(detectors):
        assert isinstance(d, Plateau)
        n = len(columns[i][0])
        if n and p.steady(d) and (p.sigmas <= 0 or n <= p.noise_length):
            by_length.setdefault(n, []).append(i)
        else:
            out[i] = d.update(*columns[i])
    for rows in by_length.values():
        if len(rows) == 1:
            out[rows[0]] = detectors[rows[0]].update(*columns[rows[0]])
        else:
            _plateau_rows(p, [detectors[i] for i in rows], [columns[i] for i in rows], rows, out)  # type: ignore[misc]
    return out


def _plateau_rows(p: _PlateauRule, dets: list[Plateau], cols: list[Column], rows: list[int], out: Results) -> None:
    """Rows of one length: Plateau.update for each, row-wise; the rows it cannot take go one by one."""
    steps = np.stack([c[0] for c in cols])
    wall = np.stack([c[1] for c in cols])
    values = np.stack([c[2] for c in cols])
    n = steps.shape[1]
    take = np.isfinite(values).all(axis=1)
    if p.spikes > 0:  # TrailingWindow.robust_z of a full window, every point kept
        history = np.concatenate([np.stack([d.window.values for d in dets]), values], axis=1)
        centre = np.empty(values.shape)
        scale = np.empty(values.shape)
        half = max(1, p.size // 2)
        for start in range(0, n, half):
            med, spread = _centre_and_scale(history[:, start:start + p.size])
            centre[:, start:start + half], scale[:, start:start + half] = med[:, None], spread[:, None]
        with np.errstate(invalid="ignore", over="ignore"):
            z = np.abs(values - centre) / scale
        take &= (z <= p.spikes).all(axis=1)
    smoothed = np.array([d.smoothed for d in dets], dtype=np.float64)
    before = np.array([d.smoothed_step for d in dets], dtype=np.int64)
    gaps = np.diff(steps, axis=1, prepend=before[:, None])
    g = np.maximum(gaps, 1).astype(np.float64)
    total = np.cumsum(g, axis=1)
    take &= total[:, -1] <= p.span  # streaming._ema_gaps in one chunk
    for k in np.flatnonzero(~take).tolist():
        out[rows[k]] = dets[k].update(*cols[k])
    keep = np.flatnonzero(take)
    if not len(keep):
        return
    dets = [dets[k] for k in keep.tolist()]
    rows = [rows[k] for k in keep.tolist()]
    steps, wall, values = steps[keep], wall[keep], values[keep]
    g, total, smoothed = g[keep], total[keep], smoothed[keep]
    # streaming._ema_gaps, one chunk
    log_w = math.log(p.weight)
    terms = np.exp(-log_w * total) * -np.expm1(log_w * g) * values
    s = np.exp(log_w * total) * (smoothed[:, None] + np.cumsum(terms, axis=1))
    noise, curvature, last_values = _plateau_noise(p, dets, values, p.weight ** g)
    u = p.sign * s
    best = np.array([d.best for d in dets], dtype=np.float64)
    best_step = np.array([d.best_step for d in dets], dtype=np.int64)
    firing = np.array([d.firing for d in dets], dtype=bool)
    first = np.array([d.first_step for d in dets], dtype=np.int64)
    # Plateau.judge finds nothing in a row when: past the warmup, and quiet - no new best by min_delta and
    # patience not run out; firing - nothing better by min_delta and the noise margin
    quiet_bar = best - p.delta * np.abs(best)
    waiting = ~((u < quiet_bar[:, None]).any(axis=1) | (steps[:, -1] >= best_step + p.patience))
    if p.delta <= ROUNDING:
        waiting[:] = False
    firing_bar = best - max(p.delta, ROUNDING) * np.abs(best)
    unresolved = ~((u < firing_bar[:, None]) & (u + noise < best[:, None])).any(axis=1)
    nothing = np.where(firing, unresolved, waiting) & (steps[:, 0] >= first + p.warmup)
    s_last, st_last = s[:, -1].tolist(), steps[:, -1].tolist()
    if p.spikes > 0:
        window_values = history[keep][:, -p.size:]
        window_steps = np.concatenate([np.stack([d.window.steps for d in dets]), steps], axis=1)[:, -p.size:]
    for k, d in enumerate(dets):
        d.smoothed, d.smoothed_step = s_last[k], st_last[k]
        if p.sigmas > 0:
            d.curvature, d.last_values = curvature[k], last_values[k]
        if p.spikes > 0:
            d.window.values, d.window.steps = window_values[k].copy(), window_steps[k].copy()
        if not nothing[k]:
            out[rows[k]] = d.judge(steps[k], wall[k], s[k], noise[k])


def _plateau_noise(p: _PlateauRule, dets: list[Plateau], raw: np.ndarray,
                   weight: np.ndarray) -> tuple[np.ndarray, list[float], list[list[float]]]:
    """Plateau._noise of each row (two values known, one chunk of streaming.ema): the
    margins, and each row's new curvature and last two values."""
    if p.sigmas <= 0:
        return np.zeros(raw.shape), [], []
    seq = np.concatenate([np.array([d.last_values for d in dets], dtype=np.float64), raw], axis=1)
    curvature = np.abs(np.diff(seq, n=2, axis=1))
    m = curvature.shape[1]
    up, down = _powers(p.memory, p.noise_length)
    prev = np.array([d.curvature for d in dets], dtype=np.float64)
    mean = down[1:m + 1] * prev[:, None] + (1 - p.memory) * down[:m] * np.cumsum(curvature * up[:m], axis=1)
    margin = p.sigmas * mean * math.sqrt(math.pi / 12) * np.sqrt((1 - weight) / (1 + weight))
    return margin, mean[:, -1].tolist(), seq[:, -2:].tolist()


_BY_KIND: dict[str, Callable[[Rule, Sequence[Detector], Sequence[Column]], Results]] = {
    "nonfinite": _nonfinite, "plateau": _plateau,
}
