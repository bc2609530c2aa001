"""A set of sequence numbers kept as sorted, disjoint, inclusive ranges.

    >>> s = SeqSet()
    >>> s.add(1, 3); s.add(5, 5); s.add(4, 4)
    >>> s.ranges()
    [(1, 5)]
    >>> s.covers(2, 5), s.covers(2, 6)
    (True, False)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

__all__ = ["SeqSet"]


class SeqSet:
    __slots__ = ("_starts", "_ends")

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        for first, last in ranges:
            self.add(first, last)

    def add(self, first: int, last: int) -> None:
        if last < first:
            return
        starts, ends = self._starts, self._ends
        # ranges that touch or overlap [first, last] merge into one
        lo = bisect.bisect_left(ends, first - 1)
        hi = bisect.bisect_right(starts, last + 1)
        if lo < hi:
            first = min(first, starts[lo])
            last = max(last, ends[hi - 1])
        starts[lo:hi] = [first]
        ends[lo:hi] = [last]

    def __contains__(self, seq: int) -> bool:
        i = bisect.bisect_right(self._starts, seq) - 1
        return i >= 0 and self._ends[i] >= seq

    def covers(self, first: int, last: int) -> bool:
        i = bisect.bisect_right(self._starts, first) - 1
        return i >= 0 and self._ends[i] >= last

    def ranges(self) -> list[tuple[int, int]]:
        return list(zip(self._starts, self._ends))

    def contiguous_from(self, start: int) -> int:
        """The highest n such that every seq in [start, n] is in the set (start - 1 if none)."""
        i = bisect.bisect_right(self._starts, start) - 1
        if i >= 0 and self._ends[i] >= start:
            return self._ends[i]
        return start - 1

    def count_within(self, first: int, last: int) -> int:
        """How many seqs of [first, last] are in the set."""
        return sum(
            min(last, e) - max(first, s) + 1 for s, e in zip(self._starts, self._ends) if s <= last and e >= first
        )

    def __len__(self) -> int:
        return sum(e - s + 1 for s, e in zip(self._starts, self._ends))

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __repr__(self) -> str:
        return f"SeqSet({self.ranges()!r})"
