"""The metric keys of some runs as the page lays out their charts: sections by
key prefix, searched and paged on the bridge (``GET /api/v1/keys``), so a run
with 10,000 keys never sends them all to the page.

A key's section is the part before its first ``/`` (``layer.12/attn/q`` is in
``layer.12``; a key without ``/`` is in the section ``""``, first). Sections
come in natural order (``layer.2`` before ``layer.10``), keys inside a section
too, except ``system`` (the metrics a client samples for every run), last
after the run's own; a page asks for a range of that order (``offset``, ``limit``).

A search (``q``) keeps the keys it matches, as ``match`` says:

- ``words`` (default): every word of ``q`` in the key, any case;
- ``glob``: the whole key matches the pattern (``*``, ``?``, ``[...]``;
  ``*`` crosses ``/``), case-sensitive;
- ``regex``: a Python regular expression found anywhere in the key.

    >>> section_of("layer.12/attn/q"), section_of("loss")
    ('layer.12', '')
    >>> KeyMatcher("words", "Attn q").matches("layer.1/attn/q_norm")
    True
    >>> KeyMatcher("glob", "layer.1/*").matches("layer.12/x")
    False
    >>> KeyMatcher("regex", r"^layer\\.(3|4)/").matches("layer.4/w")
    True
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from curvestream_bridge.runs_table import natural_key
from curvestream_bridge.store.base import MetricRecord

__all__ = ["section_of", "KeyMatcher", "KeyIndex", "KeyIndexCache", "MatchMode", "MAX_PATTERN"]

MatchMode = Literal["words", "glob", "regex"]
SYSTEM_SECTION = "system"
"""The section of the system metrics (CPU, memory, GPUs): after every section of the run's own keys."""
MAX_PATTERN = 1000
"""Longest ``q`` taken (a regular expression runs on the bridge's reader thread)."""


def section_of(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


class KeyMatcher:
    """Whether a key matches a search; a bad pattern raises ``ValueError`` saying why."""

    def __init__(self, mode: MatchMode, q: str) -> None:
        if len(q) > MAX_PATTERN:
            raise ValueError(f"q is longer than {MAX_PATTERN} characters")
        self.mode, self.q = mode, q
        if mode == "words":
            words = q.lower().split()
            self._test: Callable[[str], bool] = lambda k: all(w in k.lower() for w in words)
        elif mode == "glob":
            pattern = re.compile(fnmatch.translate(q), re.DOTALL)
            self._test = lambda k: pattern.match(k) is not None
        elif mode == "regex":
            try:
                pattern = re.compile(q)
            except re.error as exc:
                raise ValueError(f"q is not a regular expression: {exc}") from None
            self._test = lambda k: pattern.search(k) is not None
        else:
            raise ValueError(f"match must be words, glob or regex, got {mode!r}")

    @property
    def everything(self) -> bool:
        return self.q == "" or (self.mode == "words" and not self.q.split())

    def matches(self, key: str) -> bool:
        return self._test(key)


@dataclasses.dataclass
class KeyIndex:
    """The scalar keys of some runs, in page order, each with the runs (their
    indices in the order asked) that logged it, and each run's first point."""

    keys: list[str]
    runs_of: list[list[int]]
    first_ms: list[float | None]

    @classmethod
    def of(cls, metrics: Sequence[Sequence[MetricRecord]]) -> KeyIndex:
        owners: dict[str, list[int]] = {}
        first_ms: list[float | None] = []
        for i, records in enumerate(metrics):
            first = None
            for m in records:
                if m.first_ns and (first is None or m.first_ns < first):
                    first = m.first_ns
                if m.kind == "scalar":
                    have = owners.setdefault(m.key, [])
                    if not have or have[-1] != i:
                        have.append(i)
            first_ms.append(first / 1e6 if first is not None else None)
        keys = sorted(owners, key=lambda k: (section_of(k) != "", section_of(k) == SYSTEM_SECTION,
                                             natural_key(section_of(k)), natural_key(k), k))
        return cls(keys, [owners[k] for k in keys], first_ms)

    def answer(self, matcher: KeyMatcher, offset: int, limit: int) -> dict[str, Any]:
        """The matching keys' sections (with how many each holds and where it starts
        in the matching order) and the keys ``[offset, offset + limit)`` of that order."""
        found = range(len(self.keys)) if matcher.everything else \
            [i for i, k in enumerate(self.keys) if matcher.matches(k)]
        sections: list[dict[str, Any]] = []
        for n, i in enumerate(found):
            name = section_of(self.keys[i])
            if not sections or sections[-1]["name"] != name:
                sections.append({"name": name, "offset": n, "keys": 0})
            sections[-1]["keys"] += 1
        page = [{"key": self.keys[i], "runs": self.runs_of[i]} for i in found[offset:offset + limit]]
        return {"total": len(self.keys), "matched": len(found), "sections": sections,
                "offset": offset, "limit": limit, "keys": page}


class KeyIndexCache:
    """Indices of the runs asked recently: a page scrolling through sections asks
    for a range of keys per screen, and an index of 10,000 keys takes ~0.1 s of
    a core to build. Kept ``max_age_s`` (new keys appear as runs log), or read
    again when asked ``fresh`` (a page that saw a key it does not know) or once
    ``generation()`` moved (a run was deleted: its keys go at once)."""

    def __init__(self, read: Callable[[list[tuple[str, str]]], list[list[MetricRecord]]], max_age_s: float = 10.0,
                 entries: int = 16, clock: Callable[[], float] = time.monotonic,
                 generation: Callable[[], int] = lambda: 0) -> None:
        self._read = read
        self.max_age_s = max_age_s
        self._entries = entries
        self._clock = clock
        self._generation = generation
        self._lock = threading.Lock()
        self._kept: dict[tuple[tuple[str, str], ...], tuple[float, int, KeyIndex]] = {}

    def index(self, runs: list[tuple[str, str]], fresh: bool = False) -> KeyIndex:
        ident = tuple(runs)
        now, generation = self._clock(), self._generation()
        with self._lock:
            kept = self._kept.get(ident)
        if kept is not None and now - kept[0] <= self.max_age_s and kept[1] == generation and not fresh:
            return kept[2]
        index = KeyIndex.of(self._read(runs))
        with self._lock:
            self._kept[ident] = (now, generation, index)
            while len(self._kept) > self._entries:
                self._kept.pop(next(iter(self._kept)))
        return index
