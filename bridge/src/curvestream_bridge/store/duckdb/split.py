"""An overlay's series read on several threads.

Ten runs × 10M points cost about ten times one run, read by one thread while
the other cores wait. DuckDB releases the GIL while it runs a statement, and
so does numpy for most of the merging, so the runs of one request are split
into interleaved parts read side by side: one by the calling thread, the
others by a small pool. Each part reads in its own snapshot (a part's answers
are each exactly what :meth:`~.store.DuckDBStore.series` would answer at that
moment) and carries the caller's context, so a read whose client went away
(:mod:`..cancel`) stops every part.

    >>> with ThreadPoolExecutor(1) as pool:
    ...     split_read(lambda part: [x * 10 for x in part], [1, 2, 3, 4, 5], pool, 2)
    [10, 20, 30, 40, 50]
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["split_read"]

T = TypeVar("T")
R = TypeVar("R")


def split_read(read: Callable[[list[T]], list[R]], items: Sequence[T], pool: ThreadPoolExecutor | None,
               parts: int) -> list[R]:
    """``read(items)``, as ``parts`` interleaved parts: the first read by the
    calling thread, the others by ``pool``. Waits for every part, then raises
    the first part's error, if any."""
    parts = min(parts, len(items)) if pool is not None else 1
    if parts <= 1:
        return read(list(items))
    groups = [list(items[i::parts]) for i in range(parts)]
    futures = [pool.submit(contextvars.copy_context().run, read, group) for group in groups[1:]]  # type: ignore[union-attr]
    answers: list[list[R] | None] = [None] * parts
    error: BaseException | None = None
    try:
        answers[0] = read(groups[0])
    except BaseException as exc:
        error = exc
    for i, future in enumerate(futures, start=1):
        try:
            answers[i] = future.result()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error
    out: list[R] = [None] * len(items)  # type: ignore[list-item]
    for i, answer in enumerate(answers):
        out[i::parts] = answer  # type: ignore[assignment]
    return out
