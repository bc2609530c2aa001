"""TensorBoard's histogram buckets, computed as ``torch.utils.tensorboard``
and ``tensorboardX`` compute them, so a histogram logged through curvestream's
``SummaryWriter`` holds the same buckets a TensorBoard file would.

TensorBoard keeps only right bucket limits; its writers add one empty bucket
on the left whose limit is the leftmost edge. curvestream keeps edges
(one more than counts): ``edges == bucket_limit`` and ``counts == bucket[1:]``
when the first bucket is that empty one, which :func:`from_tensorboard` undoes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from curvestream.buckets import Buckets

__all__ = ["DEFAULT_BINS", "tensorboard_buckets", "from_tensorboard"]


def _default_bins() -> list[float]:
    v = 1e-12
    positive, negative = [], []
    while v < 1e20:
        positive.append(v)
        negative.append(-v)
        v *= 1.1
    return negative[::-1] + [0] + positive


DEFAULT_BINS = _default_bins()


def tensorboard_buckets(values: Any, bins: Any = "tensorflow", max_bins: int | None = None) -> Buckets:
    """The buckets ``SummaryWriter.add_histogram`` would write for ``values``."""
    import numpy as np

    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError("curvestream: add_histogram got no values")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = DEFAULT_BINS
    counts, limits = np.histogram(arr, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins
        if len(counts) % sub:
            counts = np.pad(counts, [[0, sub - len(counts) % sub]], mode="constant", constant_values=0)
        counts = counts.reshape(-1, sub).sum(axis=-1)
        merged = np.empty((counts.size + 1,), limits.dtype)
        merged[:-1] = limits[:-1:sub]
        merged[-1] = limits[-1]
        limits = merged
    cum = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    return from_tensorboard(limits.tolist(), counts.tolist(), min=float(arr.min()), max=float(arr.max()),
                            sum=float(arr.sum()), num=int(arr.size))


def from_tensorboard(bucket_limit: Sequence[float], bucket: Sequence[float], *, min: float,
                     max: float, sum: float, num: float) -> Buckets:
    """curvestream's buckets for a TensorBoard ``HistogramProto``'s fields."""
    limits = [float(x) for x in bucket_limit]
    counts = [float(x) for x in bucket]
    if not limits:
        return Buckets([min if math.isfinite(min) else 0.0, max if math.isfinite(max) else 1.0], [0.0],
                       min=min, max=max, sum=sum, count=int(num))
    if counts and counts[0] == 0:  # the writers' empty left bucket: its limit is the leftmost edge
        return Buckets(limits, counts[1:], min=min, max=max, sum=sum, count=int(num))
    left = min if math.isfinite(min) and min <= limits[0] else limits[0]
    return Buckets([left, *limits], counts, min=min, max=max, sum=sum, count=int(num))
