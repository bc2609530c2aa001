"""The runs table at fleet scale: the page's filters, sort and paging, evaluated
on the bridge (``GET /api/v1/runs/table``), so a page shows 100 rows of 10,000
runs without ever holding the other 9,900.

The run records are read from the store into a :class:`RunsSnapshot` (with
each run's search text, sort keys and config texts worked out once), kept
while nothing changed: a new run, a status or new metadata invalidate it (the
live hub says so as it pushes them) and the next query reads the store
again. A snapshot older than ``max_age_s`` still answers, while a thread of
its own reads a fresh one (point counts move with every write: they may lag
that much). A query then only filters and sorts the snapshot: tens of ms for
10,000 runs, where reading them from the store takes ~100 ms.

The filters are the page's, with its meaning (``page/runFilter.ts``): every
word of ``search`` in the run's project, name, state, group, host, commit,
tags or ``key=value`` config texts (any case); a tag; a group; a config key
(and its value, as :func:`.configtext.config_text` writes it); a state; only
runs with firing alerts.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from curvestream_bridge.configtext import config_text
from curvestream_bridge.store.base import RunRecord

__all__ = ["RunsFilter", "RunsSnapshot", "RunsTable", "SORT_KEYS", "natural_key"]

log = logging.getLogger("curvestream.bridge.runs_table")

SORT_KEYS = ("started", "updated", "project", "run", "state", "group", "points", "alerts")
"""What the table sorts by; ``-`` before one: descending. Ties: project, then run."""


def natural_key(text: str) -> tuple:
    """Sorts ``step2`` before ``step10`` and ignores case, as the page's collator."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.casefold())
                 for part in re.split(r"(\d+)", text) if part)


@dataclasses.dataclass(frozen=True)
class RunsFilter:
    project: str | None = None
    search: str = ""
    tag: str = ""
    group: str = ""
    config_key: str = ""
    config_value: str = ""  # "" = any run that has the key
    state: str = ""
    alerting: bool = False

    @property
    def words(self) -> list[str]:
        return self.search.lower().split()


@dataclasses.dataclass
class _Row:
    record: RunRecord
    json: dict[str, Any]  # the record as the runs list answers it
    text: str  # what the search looks in, lowercased
    configs: dict[str, str]  # config key -> its value's text
    names: tuple  # natural keys of (project, run name): the order of ties

    @property
    def ref(self) -> tuple[str, str]:
        return self.record.project, self.record.run


class RunsSnapshot:
    """The runs as read at one moment, ready to be filtered and sorted."""

    def __init__(self, records: Iterable[RunRecord]) -> None:
        self.rows = [_row(r) for r in records]
        self.by_ref = {row.ref: row for row in self.rows}
        self._facets: dict[str | None, dict[str, list[str]]] = {}
        self._orders: dict[str, list[_Row]] = {}
        self._lock = threading.Lock()

    def ordered(self, sort: str, firing: dict[tuple[str, str], int]) -> list[_Row]:
        """Every row in the order ``sort`` names (see :func:`sort_rows`); kept per order, but by firing
        alerts, which move without the runs changing."""
        if sort.lstrip("-") == "alerts":
            return sort_rows(self.rows, sort, firing)
        with self._lock:
            found = self._orders.get(sort)
            if found is None:
                found = self._orders[sort] = sort_rows(self.rows, sort, firing)
            return found

    def matching(self, f: RunsFilter, firing: dict[tuple[str, str], int], sort: str = "-started") -> list[_Row]:
        """The rows that match the filter, in the order ``sort`` names."""
        words = f.words
        out = []
        for row in self.ordered(sort, firing):
            r = row.record
            if f.project is not None and r.project != f.project:
                continue
            if f.alerting and not firing.get(row.ref):
                continue
            if f.tag and f.tag not in r.tags:
                continue
            if f.group and r.group != f.group:
                continue
            if f.state and r.state != f.state:
                continue
            if f.config_key:
                have = row.configs.get(f.config_key)
                if have is None or (f.config_value and have != f.config_value):
                    continue
            if words and not all(w in row.text for w in words):
                continue
            out.append(row)
        return out

    def facets(self, project: str | None) -> dict[str, list[str]]:
        """The choices of the filter drop-downs (over every run of the project)."""
        found = self._facets.get(project)
        if found is None:
            tags: set[str] = set()
            groups: set[str] = set()
            keys: set[str] = set()
            for row in self.rows:
                if project is not None and row.record.project != project:
                    continue
                tags.update(row.record.tags)
                if row.record.group:
                    groups.add(row.record.group)
                keys.update(row.configs)
            found = self._facets[project] = {"tags": sorted(tags, key=natural_key),
                                             "groups": sorted(groups, key=natural_key),
                                             "config_keys": sorted(keys, key=natural_key)}
        return found

    def config_values(self, project: str | None, key: str) -> list[str]:
        """The distinct texts of one config key among the runs: by number when all are numbers."""
        values = {row.configs[key] for row in self.rows
                  if key in row.configs and (project is None or row.record.project == project)}
        return sorted(values, key=_number_or_text(values))


def _number_or_text(values: set[str]) -> Callable[[str], Any]:
    def number(v: str) -> float:
        try:
            return float(v)
        except ValueError:
            return math.nan

    if values and all(v.strip() and math.isfinite(number(v)) for v in values):
        return number
    return natural_key


def _row(r: RunRecord) -> _Row:
    json = r.to_json()
    configs = {str(k): config_text(v) for k, v in (r.config or {}).items()} if isinstance(r.config, dict) else {}
    parts = [r.project, r.run, json.get("name") or "", r.state, r.group, r.host, r.git_commit, *r.tags,
             *(f"{k}={v}" for k, v in configs.items())]
    names = (natural_key(r.project), natural_key(json.get("name") or r.run), r.run)
    return _Row(r, json, "\n".join(parts).lower(), configs, names)


def _sort_key(field: str, firing: dict[tuple[str, str], int]) -> Callable[[_Row], Any]:
    def started(row: _Row) -> float:
        r = row.record
        return r.started_ns or r.updated_ns or -math.inf

    keys: dict[str, Callable[[_Row], Any]] = {
        "started": started,
        "updated": lambda row: row.record.updated_ns or -math.inf,
        "project": lambda row: row.names[0],
        "run": lambda row: row.names[1:],
        "state": lambda row: row.record.state,
        "group": lambda row: natural_key(row.record.group),
        "points": lambda row: row.record.points,
        "alerts": lambda row: firing.get(row.ref, 0),
    }
    return keys[field]


def sort_rows(rows: list[_Row], sort: str, firing: dict[tuple[str, str], int]) -> list[_Row]:
    """Sorted by ``sort`` (a :data:`SORT_KEYS` name, ``-`` first for descending), ties by project and run."""
    descending = sort.startswith("-")
    field = sort.lstrip("-")
    if field not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)} (with '-' for descending), got {sort!r}")
    rows = sorted(rows, key=lambda row: row.names)
    return sorted(rows, key=_sort_key(field, firing), reverse=descending)  # stable: ties keep project, run


class RunsTable:
    """Keeps the :class:`RunsSnapshot` the queries read (see the module docstring)."""

    def __init__(self, read_runs: Callable[[], list[RunRecord]], max_age_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read_runs = read_runs
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshot: RunsSnapshot | None = None
        self._built = 0.0
        self._generation = 0
        self._seen = -1
        self._refreshing = False

    def invalidate(self) -> None:
        """A run was added or changed its state or metadata: the next query reads the runs again."""
        self._generation += 1

    def snapshot(self) -> RunsSnapshot:
        with self._lock:  # one read of the store at a time; the others wait for it and share it
            if self._snapshot is None or self._seen != self._generation:
                self._rebuild()
            elif self._clock() - self._built > self.max_age_s and not self._refreshing:
                self._refreshing = True
                threading.Thread(target=self._refresh, name="curvestream-runs-table", daemon=True).start()
            return self._snapshot  # type: ignore[return-value]

    def _rebuild(self) -> None:
        generation = self._generation
        built = self._clock()
        self._snapshot = RunsSnapshot(self._read_runs())
        self._built, self._seen = built, generation

    def _refresh(self) -> None:
        """Read the runs without holding the lock (queries go on with the old snapshot), then swap."""
        try:
            generation, built = self._generation, self._clock()
            fresh = RunsSnapshot(self._read_runs())
            with self._lock:
                if built > self._built:  # no read started later has been installed meanwhile
                    self._snapshot, self._built, self._seen = fresh, built, generation
        except Exception:
            log.exception("curvestream bridge: reading the runs for the runs table failed")
        finally:
            self._refreshing = False
