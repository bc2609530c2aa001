"""The alert engine: per-series detectors and per-run watches, fed with the
batches of each ingest round, the run status changes and a clock tick.

Every change comes back as :class:`Changes`: the state entries to persist
(before the round's commit goes out) and the alerts that changed. Evaluation
is replay-safe: each series remembers the last step it consumed and ignores
points at or below it, so a batch evaluated twice (a re-send after a crash)
changes nothing, and a batch stored but never evaluated is evaluated when it
comes again.

    >>> import numpy as np
    >>> from curvestream_bridge.alerts.rules import Rule
    >>> from curvestream_bridge.batch import DecodedBatch, ScalarColumn
    >>> engine = AlertEngine([Rule(name="nonfinite", kind="nonfinite")])
    >>> col = ScalarColumn("loss", np.array([1, 2]), np.array([1_000_000, 2_000_000]), np.array([0.3, np.inf]))
    >>> batch = DecodedBatch(b"p", 1, "proj", "r1", [col], [], [], None, None, 0)
    >>> [(a.state, a.step, a.message) for a in engine.evaluate([batch]).alerts]
    [('firing', 2, 'loss became +Inf at step 2 (last finite value 0.3 at step 1)')]
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from curvestream_bridge.alerts import code
from curvestream_bridge.alerts.alert import SEP, Alert, alert_id
from curvestream_bridge.alerts.detectors import Detector, Transition, detector_for
from curvestream_bridge.alerts.many import Column, update_many
from curvestream_bridge.alerts.rules import RUN_KINDS, Rule
from curvestream_bridge.batch import DecodedBatch

__all__ = ["Alert", "AlertEngine", "Changes", "alert_id", "SEP"]  # Alert, alert_id and SEP live in .alert

_ENDED = ("finished", "failed")


@dataclasses.dataclass
class Changes:
    entries: dict[str, str] = dataclasses.field(default_factory=dict)
    alerts: list[Alert] = dataclasses.field(default_factory=list)

    def merge(self, other: Changes) -> None:
        self.entries.update(other.entries)
        self.alerts.extend(other.alerts)

    def __bool__(self) -> bool:
        return bool(self.entries or self.alerts)


@dataclasses.dataclass
class _Series:
    detector: Detector | None  # None once its run ended: only the last step consumed is kept
    last_step: int | None = None


@dataclasses.dataclass
class _RunWatch:
    state: str = "unknown"
    last_seen_ns: int = 0  # bridge clock when its last point arrived
    last_step: int | None = None


def _watch_json(watch: _RunWatch) -> str:
    """A run watch's state entry (``dataclasses.asdict`` costs more than the rest of a small batch)."""
    last_step = "null" if watch.last_step is None else int(watch.last_step)
    return (f'{{"state": {json.dumps(watch.state)}, "last_seen_ns": {int(watch.last_seen_ns)}, '
            f'"last_step": {last_step}}}')


class _RoundShape:
    """The step columns of a round's batches, measured together: each batch's newest and
    oldest step, and each series' columns joined in step order."""

    def __init__(self, batches: list[DecodedBatch]) -> None:
        self.columns = [c for b in batches for c in b.scalars]
        if not self.columns:  # no points in the round (a script's own alerts only)
            self.first_column, self.newest, self.oldest = [], [], []
            self.col_max, self.col_min, self.col_unsorted = [], [], []
            return
        counts = [len(b.scalars) for b in batches]
        self.first_column = np.cumsum([0, *counts[:-1]]).tolist()
        lengths = np.array([len(c.steps) for c in self.columns], dtype=np.int64)
        if not lengths.all():  # an empty column (decode drops them): measured one by one
            self.col_max = [int(c.steps.max()) if len(c.steps) else -(1 << 63) for c in self.columns]
            self.col_min = [int(c.steps.min()) if len(c.steps) else 1 << 63 for c in self.columns]
            self.col_unsorted = [bool(len(c.steps) > 1 and np.any(c.steps[1:] < c.steps[:-1])) for c in self.columns]
        else:
            steps = np.concatenate([c.steps for c in self.columns])
            starts = np.cumsum(lengths) - lengths
            self.col_max = np.maximum.reduceat(steps, starts).tolist()
            self.col_min = np.minimum.reduceat(steps, starts).tolist()
            down = np.empty(len(steps), dtype=bool)
            down[:-1] = steps[1:] < steps[:-1]
            down[starts + lengths - 1] = False  # from one column to the next is not a step back
            self.col_unsorted = np.logical_or.reduceat(down, starts).tolist()
        self.newest = [max(self.col_max[f:f + n]) for f, n in zip(self.first_column, counts)]
        self.oldest = [min(self.col_min[f:f + n]) for f, n in zip(self.first_column, counts)]

    def series(self, at: list[int]) -> Column:
        """The columns ``at`` (of one series, in arrival order) as one column in step order."""
        if len(at) == 1:
            c = self.columns[at[0]]
            if not self.col_unsorted[at[0]]:
                return c.steps, c.wall_ns, c.values
            steps, wall, values = c.steps, c.wall_ns, c.values
        else:
            cols = [self.columns[j] for j in at]
            steps, wall, values = (np.concatenate([getattr(c, f) for c in cols])
                                   for f in ("steps", "wall_ns", "values"))
            if not any(self.col_unsorted[j] for j in at) and all(
                    self.col_min[b] >= self.col_max[a] for a, b in itertools.pairwise(at)):
                return steps, wall, values
        order = np.argsort(steps, kind="stable")
        return steps[order], wall[order], values[order]


class AlertEngine:
    def __init__(self, rules: Sequence[Rule], clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.rules = list(rules)
        self._series_rules = [r for r in self.rules if r.kind not in RUN_KINDS]
        self._run_rules = [r for r in self.rules if r.kind in RUN_KINDS]
        self._clock_ns = clock_ns
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        self._runs: dict[tuple[str, str], _RunWatch] = {}
        self._alerts: dict[str, Alert] = {}
        self._matches: dict[tuple[str, str, str], list[Rule]] = {}
        self._series_of_run: dict[tuple[str, str], set[tuple[str, str, str, str]]] = {}
        self._by_name = {r.name: r for r in self.rules}
        self._stalled_rules: dict[tuple[str, str], list[Rule]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ persistence
    def restore(self, entries: dict[str, str]) -> None:
        """Take back what :class:`Changes` gave to persist (entries of rules no longer defined are left)."""
        with self._lock:
            for name, text in entries.items():
                kind, *parts = name.split(SEP)
                data = json.loads(text)
                if kind == "s" and len(parts) == 4 and parts[0] in self._by_name:
                    rule = self._by_name[parts[0]]
                    if rule.kind in RUN_KINDS:
                        continue
                    det = detector_for(rule, parts[3])
                    det.load(data["detector"])
                    self._series[(parts[0], parts[1], parts[2], parts[3])] = _Series(det, data["last_step"])
                    self._series_of_run.setdefault((parts[1], parts[2]), set()).add(
                        (parts[0], parts[1], parts[2], parts[3]))
                elif kind == "r" and len(parts) == 2:
                    self._runs[(parts[0], parts[1])] = _RunWatch(**data)
                elif kind == "a":
                    alert = Alert.from_json(data)
                    self._alerts[alert.id] = alert
            for (project, run), watch in self._runs.items():
                if watch.state in _ENDED:
                    self._retire(project, run)

    # ------------------------------------------------------------------ inputs
    def evaluate(self, batches: Iterable[DecodedBatch]) -> Changes:
        changes = Changes()
        now = self._clock_ns()
        batches = list(batches)
        with self._lock:
            with_points = [b for b in batches if b.scalars]
            shape = _RoundShape(with_points)
            columns: dict[tuple[str, str, str], list[int]] = {}  # each series' columns, by index in the round
            work: dict[str, tuple[Rule, list[tuple[tuple[str, str, str, str], _Series, Column]]]] = {}
            i = 0
            for b in batches:
                if b.scalars:
                    self._points_arrived(b, shape.newest[i], shape.oldest[i], now, changes)
                    for j, col in enumerate(b.scalars, shape.first_column[i]):
                        found = columns.get((b.project, b.run, col.key))
                        if found is None:
                            columns[(b.project, b.run, col.key)] = [j]
                        else:
                            found.append(j)
                    i += 1
                if b.alerts:
                    self._raised_by_code(b, changes)
            # each series once per round, its batches' columns in their order: the detectors cost per call
            for (project, run, key), at in columns.items():
                rules = self._matches.get((project, run, key))
                if rules is None:
                    rules = self._rules_for(project, run, key)
                if not rules:
                    continue
                steps, wall, values = shape.series(at)
                for rule in rules:
                    fed = self._series_input(rule, project, run, key, steps, wall, values)
                    if fed is not None:
                        work.setdefault(rule.name, (rule, []))[1].append(fed)
            # each rule's detectors of the round together (many.py): a detector call per series costs more
            # than its few points
            for rule, items in work.values():
                results = update_many(rule, [series.detector for _, series, _ in items],  # type: ignore[misc]
                                      [column for _, _, column in items])
                for (ident, series, column), transitions in zip(items, results):
                    for t in transitions:
                        self._transition(rule, ident[1], ident[2], ident[3], t, changes)
                    series.last_step = int(column[0][-1])
                    assert series.detector is not None
                    changes.entries[SEP.join(("s", *ident))] = (
                        f'{{"last_step": {series.last_step}, "detector": {series.detector.state_json()}}}')
        return changes

    def status(self, project: str, run: str, state: str, updated_ns: int = 0) -> Changes:
        """A run's status changed (``lost`` when its Last Will arrived)."""
        changes = Changes()
        with self._lock:
            watch = self._runs.setdefault((project, run), _RunWatch())
            if watch.state == state:
                return changes
            watch.state = state
            changes.entries[SEP.join(("r", project, run))] = _watch_json(watch)
            if state in _ENDED:
                self._retire(project, run)
            when_ms = (updated_ns or self._clock_ns()) / 1e6
            step = watch.last_step if watch.last_step is not None else 0
            for rule in self._run_rules:
                if not rule.matches_run(project, run):
                    continue
                current = self._alerts.get(alert_id(rule.name, project, run, ""))
                firing = current is not None and current.state == "firing"
                if rule.kind == "lost" and state == "lost" and not firing:
                    self._transition(rule, project, run, "", Transition(
                        "firing", step, int(when_ms * 1e6), None, step, step,
                        f"run {project}/{run} was lost: its connection ended without a finish (MQTT Last Will) "
                        f"after step {step}"), changes)
                elif firing and ((rule.kind == "lost" and state == "running")
                                 or (rule.kind == "stalled" and state != "running")):
                    words = "is running again" if state == "running" else f"is {state}"
                    self._transition(rule, project, run, "", Transition(
                        "resolved", step, int(when_ms * 1e6), None, step, step,
                        f"run {project}/{run} {words} (at step {step})"), changes)
            for alert in code.ended(self._alerts.values(), project, run, state, step, int(when_ms * 1e6)):
                self._record(alert, changes)
        return changes

    def tick(self) -> Changes:
        """Fire ``stalled`` for running runs without a new point for ``after_s``."""
        changes = Changes()
        now = self._clock_ns()
        stalled_rules = [r for r in self._run_rules if r.kind == "stalled"]
        if not stalled_rules:
            return changes
        with self._lock:
            for (project, run), watch in self._runs.items():
                if watch.state != "running" or not watch.last_seen_ns:
                    continue
                quiet_s = (now - watch.last_seen_ns) / 1e9
                for rule in stalled_rules:
                    after_s = float(rule.value("after_s"))
                    if quiet_s < after_s or not rule.matches_run(project, run):
                        continue
                    current = self._alerts.get(alert_id(rule.name, project, run, ""))
                    if current is not None and current.state == "firing":
                        continue
                    step = watch.last_step if watch.last_step is not None else 0
                    since = datetime.datetime.fromtimestamp(watch.last_seen_ns / 1e9, datetime.timezone.utc)
                    self._transition(rule, project, run, "", Transition(
                        "firing", step, watch.last_seen_ns + int(after_s * 1e9), None, step, step,
                        f"run {project}/{run} is running but has logged no point for {after_s:g} s: the last one, "
                        f"step {step}, arrived at {since:%H:%M:%S} UTC"), changes)
        return changes

    # ------------------------------------------------------------------ reading
    def alerts(self, project: str | None = None, run: str | None = None, state: str | None = None) -> list[Alert]:
        with self._lock:
            return sorted((a for a in self._alerts.values()
                           if (project is None or a.project == project) and (run is None or a.run == run)
                           and (state is None or a.state == state)),
                          key=lambda a: (a.started_ms, a.id))

    def get(self, ident: str) -> Alert | None:
        with self._lock:
            return self._alerts.get(ident)

    # ------------------------------------------------------------------ a deleted run
    def entries_of_run(self, project: str, run: str) -> list[str]:
        """The names of the state entries about a run: its series, its watch, its alerts."""
        with self._lock:
            names = [SEP.join(("s", *k)) for k in self._series if k[1] == project and k[2] == run]
            if (project, run) in self._runs:
                names.append(SEP.join(("r", project, run)))
            return names + [SEP.join(("a", a.id)) for a in self._alerts.values()
                            if (a.project, a.run) == (project, run)]

    def forget_run(self, project: str, run: str) -> list[str]:
        """Forget everything about a run (it was deleted); the ids of its alerts."""
        with self._lock:
            for key in [k for k in self._series if k[1] == project and k[2] == run]:
                del self._series[key]
            for match_key in [k for k in self._matches if k[0] == project and k[1] == run]:
                del self._matches[match_key]
            self._runs.pop((project, run), None)
            self._series_of_run.pop((project, run), None)
            ids = [i for i, a in self._alerts.items() if (a.project, a.run) == (project, run)]
            for ident in ids:
                del self._alerts[ident]
            return ids

    # ------------------------------------------------------------------ inside
    def _rules_for(self, project: str, run: str, key: str) -> list[Rule]:
        ident = (project, run, key)
        rules = self._matches.get(ident)
        if rules is None:
            if len(self._matches) > 100_000:
                self._matches.clear()
            rules = self._matches[ident] = [r for r in self._series_rules if r.matches(project, run, key)]
        return rules

    def _points_arrived(self, b: DecodedBatch, newest: int, oldest: int, now: int, changes: Changes) -> None:
        watch = self._runs.get((b.project, b.run))
        if watch is None:
            watch = self._runs[(b.project, b.run)] = _RunWatch()
        if watch.last_step is not None and newest <= watch.last_step:
            return  # a re-send: nothing new arrived
        # the first step not seen before: a batch may begin with the rest of the last step seen (other keys)
        seen = watch.last_step if watch.last_step is not None else -(1 << 63)
        first = oldest if oldest > seen else min(int(c.steps[c.steps > seen].min())
                                                 for c in b.scalars if int(c.steps.max()) > seen)
        watch.last_step = newest
        watch.last_seen_ns = now
        changes.entries[SEP.join(("r", b.project, b.run))] = _watch_json(watch)
        stalled = self._stalled_rules.get((b.project, b.run))
        if stalled is None:
            if len(self._stalled_rules) > 100_000:
                self._stalled_rules.clear()
            stalled = self._stalled_rules[(b.project, b.run)] = [
                r for r in self._run_rules if r.kind == "stalled" and r.matches_run(b.project, b.run)]
        for rule in stalled:
            current = self._alerts.get(alert_id(rule.name, b.project, b.run, ""))
            if current is not None and current.state == "firing":
                self._transition(rule, b.project, b.run, "", Transition(
                    "resolved", first, now, None, current.step, first,
                    f"run {b.project}/{b.run} logs again: step {first} arrived "
                    f"{(now / 1e6 - current.started_ms) / 1e3:.0f} s after the alert"), changes)

    def _retire(self, project: str, run: str) -> None:
        """A run ended: its series' detectors are let go (their state stays saved), each
        keeping the last step it consumed, so a re-send changes nothing."""
        for ident in self._series_of_run.get((project, run), ()):
            self._series[ident].detector = None
            self._matches.pop(ident[1:], None)

    def _series_input(self, rule: Rule, project: str, run: str, key: str, steps: np.ndarray, wall: np.ndarray,
                      values: np.ndarray) -> tuple[tuple[str, str, str, str], _Series, Column] | None:
        """The series' detector for ``rule`` and the points it has not consumed yet (None: none)."""
        ident = (rule.name, project, run, key)
        series = self._series.get(ident)
        if series is None:
            series = self._series[ident] = _Series(detector_for(rule, key))
            self._series_of_run.setdefault((project, run), set()).add(ident)
        if series.detector is None:  # its run had ended: re-sends are ignored below, a resumed run watched anew
            if series.last_step is not None and steps[-1] <= series.last_step:
                return None
            series.detector = detector_for(rule, key)
            current = self._alerts.get(alert_id(rule.name, project, run, key))
            series.detector.firing = current is not None and current.state == "firing"  # to resolve, not fire again
        if series.last_step is not None:
            if steps[-1] <= series.last_step:
                return None
            if steps[0] <= series.last_step:
                start = int(np.searchsorted(steps, series.last_step, side="right"))
                steps, wall, values = steps[start:], wall[start:], values[start:]
        return ident, series, (steps, wall, values)

    def _transition(self, rule: Rule, project: str, run: str, key: str, t: Transition, changes: Changes) -> None:
        ident = alert_id(rule.name, project, run, key)
        prev = self._alerts.get(ident)
        time_ms = t.wall_ns / 1e6
        if t.state == "firing":
            alert = Alert(ident, rule.name, rule.kind, rule.effective_severity, project, run, key, "firing", t.step,
                          time_ms, t.value, t.message, t.from_step, t.to_step, time_ms, None, t.step,
                          (prev.version if prev else 0) + 1, t.wall_ns)
        else:
            if prev is None or prev.state != "firing":
                return
            alert = dataclasses.replace(prev, state="resolved", step=t.step, time_ms=time_ms, value=t.value,
                                        message=t.message, from_step=t.from_step, to_step=t.to_step,
                                        ended_ms=time_ms, version=prev.version + 1, time_ns=t.wall_ns)
        self._record(alert, changes)

    def _record(self, alert: Alert, changes: Changes) -> None:
        self._alerts[alert.id] = alert
        changes.entries[SEP.join(("a", alert.id))] = json.dumps(alert.to_json())
        changes.alerts.append(alert)

    def _raised_by_code(self, b: DecodedBatch, changes: Changes) -> None:
        """A script's own alerts (:mod:`.code`); resolved at once when its run has ended already."""
        watch = self._runs.get((b.project, b.run))
        for alert in code.fired(b, self._alerts):
            self._record(alert, changes)
            if watch is not None and watch.state in code.ENDED:
                for done in code.ended([alert], b.project, b.run, watch.state, alert.step, alert.time_ns):
                    self._record(done, changes)
