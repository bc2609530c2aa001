"""Turning what a trainer passes to log() into plain floats, on the training
thread and as cheaply as possible.

Accepted as a scalar: float, int, bool, any ``numbers.Real``, and one-element
array-likes (numpy scalars and 0-d arrays, torch tensors with one element) —
without importing numpy or torch. Anything else raises ``TypeError`` naming
the key. NaN and ±Inf are kept.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from curvestream.buckets import Buckets

__all__ = ["to_float", "histogram_values", "HistogramItem", "TextItem", "AlertItem", "alert_level"]


def _reject(key: str, value: Any, why: str = "") -> TypeError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return TypeError(
        f"curvestream: value of {key!r} must be a real number, got {type(value).__name__} {shown}{why}"
    )


def to_float(key: str, value: Any) -> float:
    """The float for ``value`` logged under ``key``; ``TypeError`` when it is not a real number."""
    kind = type(value)
    if kind is float:
        return value
    if kind is int or kind is bool:
        try:
            return float(value)
        except OverflowError:
            raise _reject(key, value, " (too large for a float64)") from None
    if isinstance(value, (str, bytes, complex)):
        raise _reject(key, value)
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "item"):
        size = 1
        for n in shape:
            size *= n
        if size != 1:
            raise _reject(key, value, f" (an array of shape {tuple(shape)}; log one number per key)")
        try:
            item = value.item()
        except Exception as exc:
            raise _reject(key, value, f" ({exc})") from None
        if isinstance(item, complex) or not isinstance(item, numbers.Real):
            raise _reject(key, value)
        return float(item)
    if isinstance(value, numbers.Real):
        return float(value)
    raise _reject(key, value)


class HistogramItem:
    """One histogram observation waiting in the queue (values already copied)."""

    __slots__ = ("key", "step", "wall_ns", "values", "bins")

    def __init__(self, key: str, step: int, wall_ns: int, values: Any, bins: int) -> None:
        self.key = key
        self.step = step
        self.wall_ns = wall_ns
        self.values = values
        self.bins = bins


class TextItem:
    __slots__ = ("key", "step", "wall_ns", "text", "level")

    def __init__(self, key: str, step: int, wall_ns: int, text: str, level: int) -> None:
        self.key = key
        self.step = step
        self.wall_ns = wall_ns
        self.text = text
        self.level = level


class AlertItem:
    """An alert the script raised (``run.alert``), waiting in the queue."""

    __slots__ = ("title", "text", "level", "step", "wall_ns")

    def __init__(self, title: str, text: str, level: str, step: int, wall_ns: int) -> None:
        self.title = title
        self.text = text
        self.level = level
        self.step = step
        self.wall_ns = wall_ns


_LEVELS = {"info": "info", "warn": "warning", "warning": "warning", "error": "critical", "critical": "critical"}


def alert_level(level: Any) -> str:
    """``info``, ``warning`` or ``critical`` (the alert severities), from those or W&B's INFO, WARN, ERROR."""
    found = _LEVELS.get(str(getattr(level, "value", level)).lower())
    if found is None:
        raise ValueError(f"curvestream: alert level must be info, warning or critical (or W&B's INFO, WARN, "
                         f"ERROR), got {level!r}")
    return found


def histogram_values(key: str, values: Any) -> Any:
    """A private copy of ``values`` (a list of floats, or a flat numpy array) that
    later changes to the caller's tensor cannot reach; ``Buckets`` pass as they are."""
    if type(values) is Buckets:
        return values
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor, without importing torch
        values = values.detach().cpu()
        if hasattr(values, "numpy"):
            try:
                values = values.numpy()
            except (RuntimeError, TypeError):  # e.g. bfloat16 has no numpy dtype
                values = values.float().numpy()
    if hasattr(values, "dtype") and hasattr(values, "ravel") and hasattr(values, "astype"):
        kind = getattr(values.dtype, "kind", "")
        if kind not in ("f", "i", "u", "b"):
            raise TypeError(f"curvestream: histogram {key!r} needs real numbers, got an array of {values.dtype}")
        return values.astype("float64").ravel().copy()
    if isinstance(values, (str, bytes)) or (
        not isinstance(values, (Sequence, set, frozenset)) and not hasattr(values, "__iter__")
    ):
        raise TypeError(
            f"curvestream: histogram {key!r} needs a sequence or array of numbers, got {type(values).__name__}"
        )
    return [to_float(key, v) for v in values]


def compute_histogram(values: Any, bins: int) -> tuple[list[float], list[float], float, float, float, int]:
    """``(edges, counts, min, max, sum, count)`` over the finite values."""
    if type(values) is Buckets:
        return values.as_tuple()
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy-less trainers
        np = None  # type: ignore[assignment]
    if np is not None:
        arr = np.asarray(values, dtype="float64")
        finite = arr[np.isfinite(arr)]
        if finite.size == 0:
            return [0.0, 1.0], [0.0], math.nan, math.nan, 0.0, int(arr.size)
        counts, edges = np.histogram(finite, bins=bins)
        return (
            edges.tolist(),
            counts.astype("float64").tolist(),
            float(finite.min()),
            float(finite.max()),
            float(finite.sum()),
            int(arr.size),
        )
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [0.0, 1.0], [0.0], math.nan, math.nan, 0.0, len(values)
    lo, hi = min(finite), max(finite)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    width = (hi - lo) / bins
    counts = [0.0] * bins
    for v in finite:
        counts[min(int((v - lo) / width), bins - 1)] += 1
    edges = [lo + i * width for i in range(bins)] + [hi]
    return edges, counts, min(finite), max(finite), math.fsum(finite), len(values)
