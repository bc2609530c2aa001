"""W&B's data types as ``curvestream.wandb`` takes them: ``Histogram`` is stored
as a histogram (its own bins); the media types (``Image``, ``Table``, ``Audio``,
``Video``, ``Html``, ``Object3D``, ``Plotly``, ``Molecule``) are accepted so a
script runs unchanged, and not stored (one warning per type, when logged)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from curvestream.buckets import Buckets

__all__ = ["Histogram", "Media", "Image", "Table", "Audio", "Video", "Html", "Object3D", "Plotly", "Molecule",
           "buckets_of"]


class Histogram:
    """``wandb.Histogram(sequence, num_bins=64)`` or ``wandb.Histogram(np_histogram=(counts, edges))``."""

    def __init__(self, sequence: Sequence[Any] | Any = None, np_histogram: tuple[Any, Any] | None = None,
                 num_bins: int = 64) -> None:
        if np_histogram is None and sequence is None:
            raise ValueError("curvestream.wandb: Histogram needs a sequence or np_histogram=(counts, edges)")
        if not isinstance(num_bins, int) or not 0 < num_bins <= 512:
            raise ValueError(f"curvestream.wandb: num_bins must be an int from 1 to 512, got {num_bins!r}")
        self.sequence = sequence
        self.np_histogram = np_histogram
        self.num_bins = num_bins


def buckets_of(value: Any) -> Buckets | None:
    """The buckets of a histogram given as ``np_histogram``, or of a histogram object of
    the ``wandb`` package itself (``.histogram`` counts, ``.bins`` edges); else None."""
    if isinstance(value, Histogram):
        if value.np_histogram is None:
            return None
        counts, edges = value.np_histogram
        return Buckets(list(edges), list(counts))
    counts, edges = getattr(value, "histogram", None), getattr(value, "bins", None)
    if counts is not None and edges is not None and type(value).__name__ == "Histogram":
        return Buckets(list(edges), list(counts))
    return None


class Media:
    """A W&B media object: accepted, never stored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


class Image(Media):
    pass


class Table(Media):
    """``wandb.Table(columns=..., data=...)``; ``add_data`` works, nothing is stored."""

    def __init__(self, columns: Sequence[str] | None = None, data: Sequence[Sequence[Any]] | None = None,
                 *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.columns = list(columns or [])
        self.data = [list(row) for row in (data or [])]

    def add_data(self, *row: Any) -> None:
        self.data.append(list(row))


class Audio(Media):
    pass


class Video(Media):
    pass


class Html(Media):
    pass


class Object3D(Media):
    pass


class Plotly(Media):
    pass


class Molecule(Media):
    pass
