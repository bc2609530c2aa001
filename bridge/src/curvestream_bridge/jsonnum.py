"""JSON for numbers that JSON cannot spell: NaN and ±Inf travel as the strings
"NaN", "Infinity" and "-Infinity" (see docs/http-api.md)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["json_float", "json_floats"]


def json_float(v: float) -> float | str:
    if math.isfinite(v):
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def json_floats(values: np.ndarray) -> list[float | str]:
    out: list[float | str] = values.tolist()
    bad = np.flatnonzero(~np.isfinite(values))
    for i in bad.tolist():
        out[i] = json_float(out[i])
    return out
