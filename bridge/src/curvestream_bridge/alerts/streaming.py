"""Streaming statistics the detectors share: the exponential moving average,
computed for a whole batch at once, and the trailing window of recent finite
values with the robust z of new points against it.

    >>> import numpy as np
    >>> ema(np.array([0.0, 1.0, 2.0]), None, 0.5).tolist()
    [0.0, 0.5, 1.25]

With ``gaps`` (steps since the point before), the weight is per step: a point
two steps after the last weighs the past by ``weight ** 2``:

    >>> ema(np.array([0.0, 1.0, 2.0]), None, 0.5, gaps=np.array([1, 1, 2])).round(12).tolist()
    [0.0, 0.5, 1.625]
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

__all__ = ["ema", "TrailingWindow"]

EXPONENT_SPAN = 30.0
"""A chunk of the vectorized EMA spans at most weight**-k = e**30, so the sums stay finite and exact enough."""


def ema(x: np.ndarray, prev: float | None, weight: float, gaps: np.ndarray | None = None) -> np.ndarray:
    """s_t = a_t * s_(t-1) + (1 - a_t) * x_t with a_t = weight (or weight ** gaps[t]),
    vectorized; s starts at the first x when there is no ``prev``. Works in chunks short
    enough that the powers of the weight stay finite."""
    if weight == 0 or not len(x):
        return x.astype(np.float64, copy=True)
    if gaps is not None:
        return _ema_gaps(x, prev, weight, np.maximum(gaps, 1).astype(np.float64))
    out = np.empty(len(x), dtype=np.float64)
    s = float(x[0]) if prev is None else float(prev)
    length = max(1, int(EXPONENT_SPAN / -math.log(weight)))
    up, down = _powers(weight, length)
    for start in range(0, len(x), length):
        part = x[start:start + length]
        m = len(part)
        out[start:start + m] = down[1:m + 1] * s + (1 - weight) * down[:m] * np.cumsum(part * up[:m])
        s = float(out[start + m - 1])
    return out


def _ema_gaps(x: np.ndarray, prev: float | None, weight: float, gaps: np.ndarray) -> np.ndarray:
    """s_i = w**D_i * (s + sum_(j<=i) w**-D_j * (1 - w**g_j) * x_j), D the gaps summed within a chunk."""
    out = np.empty(len(x), dtype=np.float64)
    s = float(x[0]) if prev is None else float(prev)
    log_w = math.log(weight)
    span = EXPONENT_SPAN / -log_w  # steps per chunk at most
    total = np.cumsum(gaps)
    start = 0
    while start < len(x):
        before = total[start - 1] if start else 0.0
        end = max(start + 1, int(np.searchsorted(total, before + span, side="right")))
        g = gaps[start:end]
        if end - start == 1 and g[0] > span:  # a long gap alone: the past weighs (almost) nothing
            keep = math.exp(log_w * g[0])
            out[start] = s = keep * s + (1 - keep) * float(x[start])
        else:
            d = total[start:end] - before
            terms = np.exp(-log_w * d) * -np.expm1(log_w * g) * x[start:end]
            out[start:end] = np.exp(log_w * d) * (s + np.cumsum(terms))
            s = float(out[end - 1])
        start = end
    return out


_POWERS: dict[tuple[float, int], tuple[np.ndarray, np.ndarray]] = {}


def _powers(weight: float, length: int) -> tuple[np.ndarray, np.ndarray]:
    """weight**-k for k < length and weight**k for k <= length, computed once per weight."""
    found = _POWERS.get((weight, length))
    if found is None:
        k = np.arange(length + 1, dtype=np.float64)
        found = _POWERS[(weight, length)] = (weight ** -k[:-1], weight ** k)
        if len(_POWERS) > 64:
            _POWERS.pop(next(iter(_POWERS)))
    return found


class TrailingWindow:
    """The last ``size`` finite values (and their steps): the reference of a robust z."""

    def __init__(self, size: int, values: Any = (), steps: Any = ()) -> None:
        self.size = size
        self.values = np.asarray(values, dtype=np.float64)
        self.steps = np.asarray(steps, dtype=np.int64)

    def to_dict(self) -> dict[str, Any]:
        """Compact: the arrays as base64 of their little-endian bytes (saved every round)."""
        return {"size": self.size, "values": base64.b64encode(self.values.astype("<f8").tobytes()).decode(),
                "steps": base64.b64encode(self.steps.astype("<i8").tobytes()).decode()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrailingWindow:
        return cls(int(d["size"]), np.frombuffer(base64.b64decode(d["values"]), dtype="<f8"),
                   np.frombuffer(base64.b64decode(d["steps"]), dtype="<i8"))

    def robust_z(self, steps: np.ndarray, values: np.ndarray, min_points: int) -> tuple[np.ndarray, np.ndarray]:
        """|x - median| / (1.4826 * MAD) of each point against the window as it was
        before the point's chunk (chunks of half the window keep a trend inside a
        batch from looking like a spike), then take the points in. NaN where the
        window is too short to judge or the point is not finite. Also returns each
        point's reference median."""
        n = len(values)
        finite = np.isfinite(values)
        history = np.concatenate([self.values, values[finite]])  # the window before each chunk is a slice
        before = len(self.values) + np.concatenate([[0], np.cumsum(finite)])  # history length before point i
        centre = np.full(n, np.nan)
        scale = np.full(n, np.nan)
        full: list[tuple[int, int, int]] = []  # chunks whose window is full: (start, end, history length)
        pos = 0
        while pos < n:
            have = int(before[pos])
            if have < min_points:  # too short to judge: take points in until it is not
                end = min(n, pos + max(1, int(np.searchsorted(before, min_points, side="left")) - pos))
            else:
                end = min(n, pos + max(1, self.size // 2))
                if have >= self.size:
                    full.append((pos, end, have))
                else:
                    med, spread = _centre_and_scale(history[None, :have])
                    centre[pos:end], scale[pos:end] = med[0], spread[0]
            pos = end
        if full:  # every full window of the batch at once
            if len(full) == 1:  # a small batch: one window, a slice (no view machinery)
                windows = history[None, full[0][2] - self.size:full[0][2]]
            else:
                windows = np.lib.stride_tricks.sliding_window_view(history, self.size)[[h - self.size
                                                                                         for _, _, h in full]]
            med, spread = _centre_and_scale(windows)
            for (a, b, _), m, sc in zip(full, med, spread):
                centre[a:b], scale[a:b] = m, sc
        self.values = history[-self.size:]
        self.steps = np.concatenate([self.steps, steps[finite]])[-self.size:]
        with np.errstate(invalid="ignore", over="ignore"):
            z = np.abs(values - centre) / scale
        z[~finite] = np.nan
        return z, centre


def _centre_and_scale(windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the median, and 1.4826 * MAD; where MAD is 0 (more than half the row
    flat) 1.2533 * the mean deviation; where that is 0 too (a flat row) 0.1 % of the level."""
    med = _row_medians(windows)
    deviations = np.abs(windows - med[:, None])
    scale = 1.4826 * _row_medians(deviations)
    scale = np.where(scale > 0, scale, 1.2533 * deviations.mean(axis=1))
    scale = np.where(scale > 0, scale, 1e-3 * np.abs(med))
    return med, np.where(scale > 0, scale, 1e-300)


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """``np.median(rows, axis=1)`` for finite rows, by one partition (np.median's
    own checks cost more than the work on the short rows of a small batch)."""
    n = rows.shape[1]
    half = n // 2
    if n % 2:
        return np.partition(rows, half, axis=1)[:, half]
    part = np.partition(rows, (half - 1, half), axis=1)
    return (part[:, half - 1] + part[:, half]) / 2
