"""The runs table at fleet scale: the page's filters, sort and paging, evaluated
on the bridge (``GET /api/v1/runs/table``), so a page shows 100 rows of 10,000
runs without ever holding the other 9,900.

The run records are read from the store into a :class:`RunsSnapshot` (with
each run's search text, sort keys and config texts worked out once). A run
that changes (added, a status, metadata, edited, deleted: the live hub and the
API say which) is read again alone, before the next query answers; a run that
only got points is read again once the snapshot is older than ``max_age_s``,
by a thread of its own while the old snapshot answers (its point count may lag
that much). The other runs' rows are kept: a fleet's steady trickle of status
changes costs one run's read each, not the 10,000 runs' (~300 ms CPU). Every
run is read again only after :meth:`RunsTable.invalidate` and every
``full_every_s`` (a store shared with another bridge changes unsaid). A query
then only filters and sorts the snapshot: tens of ms for 10,000 runs.

The filters are the page's, with its meaning (``page/runFilter.ts``): every
word of ``search`` in the run's project, name, state, group, host, commit,
tags or ``key=value`` config texts (any case); a tag; a group; a config key
(and its value, as :func:`.configtext.config_text` writes it); a state; only
runs with firing alerts.
"""

from __future__ import annotations

import bisect
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
    names: tuple  # natural keys of (project, run name), then run and project: the order of ties
    ref: tuple[str, str]  # (project, run)


class RunsSnapshot:
    """The runs as read at one moment, ready to be filtered and sorted."""

    def __init__(self, records: Iterable[RunRecord]) -> None:
        rows = [_row(r) for r in records]
        self._set_rows(rows, {row.ref: row for row in rows})

    @classmethod
    def of_rows(cls, by_ref: dict[tuple[str, str], _Row], old: RunsSnapshot | None = None,
                changed: set[tuple[str, str]] | None = None) -> RunsSnapshot:
        """A snapshot of rows already worked out (those of runs that did not change are kept). The orders
        ``old`` kept are kept too, the ``changed`` runs' rows taken out and put back in their places."""
        snap = cls.__new__(cls)
        snap._set_rows(list(by_ref.values()), by_ref)
        if old is not None and changed is not None and len(changed) <= max(100, len(by_ref) // 20):
            with old._lock:
                orders = dict(old._orders)
            fresh = [snap.by_ref[ref] for ref in changed if ref in snap.by_ref]
            snap._orders = {sort: _reordered(order, sort, changed, fresh) for sort, order in orders.items()}
        return snap

    def _set_rows(self, rows: list[_Row], by_ref: dict[tuple[str, str], _Row]) -> None:
        self.rows = rows
        self.by_ref = by_ref
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
        return sorted(sorted(values), key=_number_or_text(values))  # "1" and "1.0": in one order always


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
    names = (natural_key(r.project), natural_key(json.get("name") or r.run), r.run, r.project)
    return _Row(r, json, "\n".join(parts).lower(), configs, names, (r.project, r.run))


def _sort_key(field: str, firing: dict[tuple[str, str], int]) -> Callable[[_Row], Any]:
    def started(row: _Row) -> float:
        r = row.record
        return r.started_ns or r.updated_ns or -math.inf

    keys: dict[str, Callable[[_Row], Any]] = {
        "started": started,
        "updated": lambda row: row.record.updated_ns or -math.inf,
        "project": lambda row: row.names[0],
        "run": lambda row: row.names[1:3],
        "state": lambda row: row.record.state,
        "group": lambda row: natural_key(row.record.group),
        "points": lambda row: row.record.points,
        "alerts": lambda row: firing.get(row.ref, 0),
    }
    return keys[field]


class _Descending:
    """A sort key compared the other way round."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.value == other.value


def _reordered(order: list[_Row], sort: str, changed: set[tuple[str, str]], fresh: list[_Row]) -> list[_Row]:
    """``order`` (as :func:`sort_rows` made it) without the ``changed`` runs' rows, with the ``fresh`` ones
    put where :func:`sort_rows` would."""
    field_key = _sort_key(sort.lstrip("-"), {})
    if sort.startswith("-"):
        def key(row: _Row) -> tuple:
            return _Descending(field_key(row)), row.names
    else:
        def key(row: _Row) -> tuple:
            return field_key(row), row.names
    kept = [row for row in order if row.ref not in changed]
    for row in fresh:
        kept.insert(bisect.bisect_right(kept, key(row), key=key), row)
    return kept


def sort_rows(rows: list[_Row], sort: str, firing: dict[tuple[str, str], int]) -> list[_Row]:
    """Sorted by ``sort`` (a :data:`SORT_KEYS` name, ``-`` first for descending), ties by project and run."""
    descending = sort.startswith("-")
    field = sort.lstrip("-")
    if field not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)} (with '-' for descending), got {sort!r}")
    rows = sorted(rows, key=lambda row: row.names)
    return sorted(rows, key=_sort_key(field, firing), reverse=descending)  # stable: ties keep project, run


class RunsTable:
    """Keeps the :class:`RunsSnapshot` the queries read (see the module docstring).

    ``read_runs()`` reads every run, ``read_runs(refs)`` only those (project, run) pairs.
    A run that changed is read again alone and its row replaced in a new snapshot; a read
    of every run happens first, after :meth:`invalidate` and every ``full_every_s`` (in the
    background: a store another bridge writes too changes without telling this one)."""

    def __init__(self, read_runs: Callable[..., list[RunRecord]], max_age_s: float = 5.0,
                 full_every_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._read_runs = read_runs
        self.max_age_s = max_age_s
        self.full_every_s = full_every_s
        self._clock = clock
        self._lock = threading.Lock()  # one read of the store installed at a time
        self._marks = threading.Lock()  # what changed meanwhile; never held while the store is read
        self._snapshot: RunsSnapshot | None = None
        self._changed: set[tuple[str, str]] = set()
        self._everything = False
        self._grown: set[tuple[str, str]] = set()
        self._reads = 0  # reads started, in order
        self._full_read = 0  # the newest read of every run installed
        self._read_of: dict[tuple[str, str], int] = {}  # a run read alone since: the read its row comes from
        self._full_at = 0.0  # when the newest installed read of every run started
        self._grown_at = 0.0  # when the newest installed read of the grown runs started
        self._refreshing = False

    def invalidate(self) -> None:
        """Anything may have changed: the next query reads every run again."""
        self.changed(None)

    def changed(self, refs: Iterable[tuple[str, str]] | None, points_only: bool = False) -> None:
        """These runs were added, edited, deleted or got a status or metadata: the next query reads them
        again (``None``: every run). ``points_only``: they only got points; read again once the snapshot
        is older than ``max_age_s``, in the background."""
        with self._marks:
            if refs is None:
                self._everything = True
            elif points_only:
                self._grown.update(refs)
            else:
                self._changed.update(refs)

    def snapshot(self) -> RunsSnapshot:
        with self._lock:  # one read of the store at a time; the others wait for it and share it
            with self._marks:
                everything, changed = self._everything or self._snapshot is None, self._changed
                self._everything, self._changed = False, set()
            try:
                if everything:
                    self._install(*self._read(None), None)
                elif changed:
                    self._install(*self._read(changed), changed)
            except BaseException:
                self.changed(None if everything else changed)  # read again by the next query
                raise
            now = self._clock()
            if not self._refreshing:
                full = now - self._full_at > self.full_every_s
                if full or (now - self._grown_at > self.max_age_s and self._grown):
                    self._refreshing = True
                    threading.Thread(target=self._refresh, args=(full,), name="curvestream-runs-table",
                                     daemon=True).start()
            snapshot = self._snapshot
            assert snapshot is not None  # installed by the read above, or by an earlier one
            return snapshot

    def _read(self, refs: set[tuple[str, str]] | None) -> tuple[int, float, list[RunRecord]]:
        with self._marks:
            self._reads += 1
            number = self._reads
        started = self._clock()
        return number, started, (self._read_runs() if refs is None else self._read_runs(sorted(refs)))

    def _install(self, number: int, started: float, records: list[RunRecord],
                 refs: set[tuple[str, str]] | None, grown: bool = False) -> None:
        """A new snapshot: the rows of the runs read replaced (or dropped: gone from the store), the
        others kept; a run a later read already installed keeps that one's row. Under ``_lock``."""
        old = self._snapshot
        if refs is None:
            if number < self._full_read:
                return  # a later read of every run is installed
            later = {ref: n for ref, n in self._read_of.items() if n > number}  # runs read alone since
            rows: dict[tuple[str, str], _Row] = {}
            for record in records:
                ref = (record.project, record.run)
                if ref not in later:
                    rows[ref] = _row(record)
            for ref in later:
                if old is not None and ref in old.by_ref:
                    rows[ref] = old.by_ref[ref]
            self._full_read, self._read_of = number, later
        else:
            rows = dict(old.by_ref) if old is not None else {}
            fresh = {(r.project, r.run): r for r in records}
            for ref in refs:
                if max(self._read_of.get(ref, 0), self._full_read) > number:
                    continue  # a later read installed this run
                self._read_of[ref] = number
                found = fresh.get(ref)
                if found is None:
                    rows.pop(ref, None)
                else:
                    rows[ref] = _row(found)
        self._snapshot = RunsSnapshot.of_rows(rows, old, refs)
        if refs is None:
            self._full_at = max(self._full_at, started)
        if refs is None or grown:
            self._grown_at = max(self._grown_at, started)

    def _refresh(self, full: bool) -> None:
        """Read the grown runs (or every run) without holding the lock (queries go on with the old
        snapshot), then install them."""
        with self._marks:
            grown, self._grown = self._grown, set()
        try:
            read = self._read(None if full else grown)
            with self._lock:
                self._install(*read, None if full else grown, grown=True)
        except Exception:
            with self._marks:
                self._grown |= grown
            log.exception("curvestream bridge: reading the runs for the runs table failed")
        finally:
            self._refreshing = False
