"""M4 rollups in InfluxDB, written by the bridge (a continuous query cannot keep
where each extreme is).

Measurements (tag values percent-encoded, see :mod:`.lineproto`)::

    cs_rollup_step,metric,project,run,k=<level>,w=<writer>    m="<packed aggregate>"   <bucket start, in steps>
    cs_rollup_time,metric,project,run,k=<level>,w=<writer>,grafana_interval_ms=<:20:50:>
                                                              <aggregate fields>   <bucket start, in ns>
                    level 0 also: p="<base64 points of the bucket>" (empty: over PACK_POINTS)
    (cs_rollup_step rows have no p: see PACKED_AXES)
    cs_rollup_plan,metric,project,run,w=<writer>              bs=<log2 bottom steps>i,bt_ms=<bottom ms>i,
                                                              tt_ms=<top ms>i  <server time>

(the fields: :mod:`.rows`; the time levels and ``grafana_interval_ms``: :mod:`.ladder`).
Step buckets are ``2**bs * 8**k`` steps; time buckets the Grafana intervals
from ``bt_ms`` up to ``tt_ms`` (a plan without it: a day): the largest level
that fits in a shard group of the database's default retention policy, so that
a bucket's row and its points expire together (a day unless the policy keeps
points for less than two days: then shard groups, and the top level, are an hour).

One row per bucket, level and writer. InfluxDB keeps one point per series and
timestamp, so a writer merges a bucket's new points into the row it wrote
before and writes it again: the bucket it wrote last at each level is kept in
memory; an older bucket (a step going back, a batch arriving late, a restart)
is read first, unless a failed write may have changed its row since: then what
the row held before that write is (kept in memory, see :mod:`.committed`).
Rows of different writers never overwrite each other; queries merge them. A
bridge's writer id is its MQTT client id (unique among the
bridges of a broker, stable across its restarts), or ``?writer=<id>`` on the
store URL.

The bucket sizes of a series (its ``cs_rollup_plan``) are chosen once, from its
first points. Two bridges may see a new series at the same moment (a shared
subscription splits its first batches), so a writer that creates the plan
writes its ``cs_rollup_plan`` row first, without a timestamp (InfluxDB stamps it on
arrival, and each writer's row is its own series), then reads the rows back:
the earliest row is the plan of the series, for every writer and every query,
whoever lost the race adopts it before writing a rollup row.

A query reads the points of the few bottom buckets a pixel-column edge cuts
from ``p`` rather than from ``cs_scalar``: a statement costs InfluxDB a scan
of the series' points still in its write cache, and a bottom rollup series
holds a dozen times fewer of them than the raw one.

"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import numpy as np

from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.influx.committed import Committed, committed_rows
from curvestream_bridge.store.influx.ladder import interval_tag, plan_of_bottom, time_plan
from curvestream_bridge.store.influx.lineproto import decode_tag, encode_tag
from curvestream_bridge.store.influx.partials import Level, series_partials
from curvestream_bridge.store.influx.rows import (
    POINT,
    SELECT_FIELDS,
    SeriesKey,
    Statements,
    bucket_runs,
    field_texts,
    pack_points,
    packs_of,
    rows_of,
    series_tags,
    series_where,
    tag_literal,
)
from curvestream_bridge.store.m4.agg import M4Agg, merge
from curvestream_bridge.store.m4.levels import MIN_POINTS, LevelPlan, choose_base

__all__ = ["OpenBuckets", "BOTTOM_TARGET_POINTS", "RollupWriter", "MEASUREMENT", "PLAN_MEASUREMENT", "PACKED_AXES"]

log = logging.getLogger("curvestream.bridge.influx")

BOTTOM_TARGET_POINTS = 16
"""Raw points are expensive to read back from InfluxDB (JSON), so its bottom buckets are small."""

MEASUREMENT = {"step": "cs_rollup_step", "time": "cs_rollup_time"}
META_AXES = ("step",)
"""The rollups kept in the meta retention policy (see :mod:`.http`): the step
rollups are stamped with step numbers, which no retention policy can judge
(they would all be older than any finite one). The time rollups live beside
the points (Grafana reads them) and expire with them."""
PACKED_AXES = ("time",)
"""The rollups whose bottom rows carry their points (``p``). Each point is in
``cs_scalar`` already; a second packed copy per axis was most of what rollups
cost on ingest. The step rollups' queries read the points of the buckets a
column edge cuts from cs_scalar, within the wall-time extent of the bucket."""
PLAN_MEASUREMENT = "cs_rollup_plan"


@dataclasses.dataclass
class OpenBuckets:
    """What one writer last wrote for a series and axis: per level, the
    highest bucket and its aggregate (and at level 0 its points, None when
    there were too many to keep)."""

    last: dict[int, tuple[int, M4Agg, np.ndarray | None]]

    def copy(self) -> OpenBuckets:
        return OpenBuckets(dict(self.last))


def _bucket_points(plan: LevelPlan, steps: np.ndarray, walls: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """The points of a batch by bottom bucket."""
    pts = np.empty(len(steps), dtype=POINT)
    pts["step"], pts["wall"], pts["value"] = steps, walls, values
    b = plan.bottom_bucket(steps if plan.axis == "step" else walls)
    order = np.argsort(b, kind="stable")
    b, pts = b[order], pts[order]
    starts = np.flatnonzero(np.concatenate(([True], b[1:] != b[:-1]))) if len(b) else np.zeros(0, np.int64)
    return {int(q): part for q, part in zip(b[starts], np.split(pts, starts[1:]))}


def _joined(*parts: np.ndarray | None) -> np.ndarray | None:
    """Points of one bucket from several sources, each once (None: one source had too many to keep)."""
    present = [p for p in parts if p is not None]
    if len(present) < len(parts):
        return None
    pts = np.concatenate(present)
    _, idx = np.unique(pts["wall"], return_index=True)
    return pts[idx]


class RollupWriter:
    """Turns the scalar columns of a write into rollup lines (reading what it
    must merge with); ``commit()`` once the lines are stored."""

    def __init__(self, writer_id: str, meta: Callable[[str], str] = lambda m: f'"{m}"',
                 time_top_ms: Callable[[], int | None] = lambda: None) -> None:
        self.writer = writer_id
        self.meta = meta  # how a FROM clause names a meta measurement (see .http)
        self.time_top_ms = time_top_ms  # the top time level a new series' plan may have (see .ladder.top_for_shards)
        self.plans: dict[SeriesKey, dict[str, LevelPlan]] = {}
        self.counts: dict[SeriesKey, int] = {}  # points of series that have no rollups yet
        self.open: dict[tuple[SeriesKey, str], OpenBuckets] = {}
        self.unrolled: set[SeriesKey] = set()  # our plan is stored, the points stored before it are not rolled up yet
        self.made: set[SeriesKey] = set()  # plans we made whose first rollup rows are not known stored yet
        self._staged: tuple[dict, dict, dict, set, set, dict] | None = None  # a write's, until commit()
        self.before: dict[tuple[SeriesKey, str, int], Committed] = {}  # see .committed

    def forget_run(self, project: str, run: str) -> None:
        """A deleted run: nothing of its series is kept (what is written of it later starts afresh)."""
        def of_run(key: SeriesKey) -> bool:
            return key[0] == project and key[1] == run

        for table in (self.plans, self.counts):
            for key in [k for k in table if of_run(k)]:
                del table[key]
        for open_key in [k for k in self.open if of_run(k[0])]:
            del self.open[open_key]
        for before_key in [k for k in self.before if of_run(k[0])]:
            del self.before[before_key]
        self.unrolled = {k for k in self.unrolled if not of_run(k)}
        self.made = {k for k in self.made if not of_run(k)}

    def source(self, axis: str) -> str:
        """The rollups of ``axis`` as a FROM clause names them."""
        return self.meta(MEASUREMENT[axis]) if axis in META_AXES else f'"{MEASUREMENT[axis]}"'

    def plan(self, key: SeriesKey, run: Statements) -> dict[str, LevelPlan] | None:
        """The levels of a series (read from cs_rollup_plan the first time)."""
        if key not in self.plans:
            self._load_plans([key], run)
        return self.plans.get(key)

    def _load_plans(self, keys: list[SeriesKey], run: Statements) -> None:
        self.plans.update(self._stored_plans(keys, run))

    def _stored_plans(self, keys: list[SeriesKey], run: Statements) -> dict[SeriesKey, dict[str, LevelPlan]]:
        """The plan of each series that has one: its earliest cs_rollup_plan row (of any writer)."""
        source = self.meta(PLAN_MEASUREMENT)
        results = run([f'SELECT "bs", "bt_ms", "tt_ms" FROM {source} WHERE {series_where(k)} '
                       f'ORDER BY time ASC LIMIT 1' for k in keys])
        plans = {}
        for key, result in zip(keys, results):
            if result and result[0]["values"]:
                _, bs, bt_ms, tt_ms = result[0]["values"][0]
                plans[key] = {"step": LevelPlan("step", int(bs)),
                              "time": plan_of_bottom(int(bt_ms), int(tt_ms) if tt_ms is not None else None)}
        return plans

    def _claim_plans(self, proposed: dict[SeriesKey, dict[str, LevelPlan]], run: Statements,
                     post: Callable[[list[str]], None]) -> dict[SeriesKey, dict[str, LevelPlan]]:
        """Write our proposals, then read back what each series' plan is (ours, or an
        earlier writer's)."""
        post([f"{PLAN_MEASUREMENT},{series_tags(k)},w={encode_tag(self.writer)} "
              f"bs={p['step'].base}i,bt_ms={p['time'].size(0) // 1_000_000}i,"
              f"tt_ms={p['time'].size(p['time'].top) // 1_000_000}i" for k, p in proposed.items()])
        stored = self._stored_plans(list(proposed), run)
        missing = [k for k in proposed if k not in stored]
        if missing:  # a write is readable when /write answers: only a server losing it gets here
            raise StoreUnavailable(f"rollup plans of {len(missing)} series not readable after writing them")
        return stored

    def lines(self, columns: dict[SeriesKey, list[tuple[np.ndarray, np.ndarray, np.ndarray]]],
              run: Statements, raw_points: Callable[[SeriesKey], tuple[np.ndarray, ...]],
              post: Callable[[list[str]], None]) -> tuple[list[str], list[str], list[str], list[str]]:
        """The rollup lines of a write: those of the database's default retention
        policy, and those of the meta policy (``META_AXES``), then apart the lines
        of the top level in each (to be stored after all others: a reader takes a
        series' top rows for the version of the rows below, :mod:`.rowcache`). A
        write whose lines were made but not committed before this one failed (see
        :mod:`.committed`)."""
        self._failed()
        work, plans_new, counts_new, rolled_up = self._plan_work(columns, run, raw_points, post)
        lines: dict[str, list[str]] = {"time": [], "step": []}
        tops: dict[str, list[str]] = {"time": [], "step": []}
        # A series whose plan we made starts from no rows, also when the write that made
        # it failed: rows it left behind hold its points, which this write rolls up again.
        fresh = {key for key, *_ in work if key in plans_new or key in self.made}
        self.made |= set(plans_new)
        open_new = self._open_for([(k, a) for k, plans, *_ in work for a in plans if k not in fresh], run)
        for key, plans, *_ in work:
            if key in fresh:
                for axis in plans:
                    open_new[(key, axis)] = OpenBuckets({})
        reads: list[tuple[SeriesKey, str, int, np.ndarray]] = []
        pending: list[tuple[SeriesKey, str, int, int, np.ndarray, M4Agg, list[np.ndarray | None]]] = []
        parts, levels = {}, {}
        for axis in ("step", "time"):
            parts[axis], levels[axis] = series_partials([plans[axis] for _, plans, *_ in work],
                                                        *([w[i] for w in work] for i in (2, 3, 4)))
        for i, (key, plans, steps, walls, values) in enumerate(work):
            for axis, plan in plans.items():
                packed = axis in PACKED_AXES
                new_points = _bucket_points(plan, steps, walls, values) if packed else {}
                for k in plan.levels:  # the partials are merged into below
                    buckets, agg = parts[axis][(i, k)]
                    pts: list[np.ndarray | None] = [new_points[int(b)] for b in buckets] if k == 0 and packed else []
                    last = open_new[(key, axis)].last.get(k)
                    if last is not None:
                        older = buckets < last[0]
                        known = self.before.get((key, axis, k))
                        if known is not None:  # remembered: the stored rows may hold a failed write's points
                            older &= ~np.isin(buckets, known.buckets)
                        if older.any():
                            reads.append((key, axis, k, buckets[older]))
                    pending.append((key, axis, k, i, buckets, agg, pts))
        stored = self._read_rows(reads, plans_of={k: p for k, p, *_ in work}, run=run)
        before: dict[tuple[SeriesKey, str, int], Committed] = {}
        merges: dict[str, list[tuple[int, np.ndarray, M4Agg]]] = {"time": [], "step": []}
        for key, axis, k, i, buckets, _agg, pts in pending:
            old = before[(key, axis, k)] = committed_rows(buckets, stored.get((key, axis, k)),
                                                          open_new[(key, axis)].last.get(k),
                                                          self.before.get((key, axis, k)))
            if len(old.rows):
                at = np.searchsorted(buckets, old.rows)
                merges[axis].append((k, levels[axis][k][1][i] + at, old.agg))
                if pts:
                    for j, p in zip(at.tolist(), old.points):
                        pts[j] = _joined(pts[j], p)
        for axis, jobs in merges.items():
            _merge_all(levels[axis], jobs, axis)
        # the rows of every series of a level are views of one array: their texts made by one call
        texts_of = {(axis, k): field_texts(agg, numeric=axis == "time")
                    for axis in levels for k, (agg, _) in levels[axis].items()}
        named: dict[SeriesKey, str] = {}
        writer = encode_tag(self.writer)
        for key, axis, k, i, buckets, agg, pts in pending:
            bounds = levels[axis][k][1]
            texts = texts_of[(axis, k)][bounds[i]:bounds[i + 1]]
            ob = open_new[(key, axis)]
            last = ob.last.get(k)
            top = len(buckets) - 1  # buckets are sorted
            if last is None or buckets[top] >= last[0]:
                ob.last[k] = (int(buckets[top]), agg.take(np.array([top])), pts[top] if pts else None)
            plan = (self.plans.get(key) or plans_new[key])[axis]
            if key not in named:
                named[key] = f"{series_tags(key)},k="
            tags = f"{MEASUREMENT[axis]},{named[key]}{k},w={writer}"
            if axis == "time":
                tags += f",grafana_interval_ms={interval_tag(plan, k)}"
            size = plan.size(k)
            out = tops[axis] if k == plan.top else lines[axis]
            if k == 0 and axis in PACKED_AXES:
                out.extend(f'{tags} {text},p="{"" if p is None else pack_points(p)}" {int(b) * size}'
                           for b, text, p in zip(buckets.tolist(), texts, pts))
            else:
                out.extend(f'{tags} {text} {int(b) * size}' for b, text in zip(buckets.tolist(), texts))
        self._staged = (plans_new, counts_new, open_new, rolled_up, fresh, before)
        def split(by_axis: dict[str, list[str]]) -> tuple[list[str], list[str]]:
            return ([line for axis, part in by_axis.items() if axis not in META_AXES for line in part],
                    [line for axis in META_AXES for line in by_axis[axis]])

        return (*split(lines), *split(tops))

    def _plan_work(self, columns: dict[SeriesKey, list[tuple[np.ndarray, np.ndarray, np.ndarray]]],
                   run: Statements, raw_points: Callable[[SeriesKey], tuple[np.ndarray, ...]],
                   post: Callable[[list[str]], None]) -> tuple[list, dict, dict, set]:
        """Each series of the write with its plan and the points to roll up: its
        batches', and the points stored before the plan when this write makes it.
        Returns (work, plans made, counts of series still without rollups, series
        whose stored points this write rolls up)."""
        unknown = [k for k in columns if k not in self.plans]
        if unknown:
            self._load_plans(unknown, run)
        uncounted = [k for k in columns if k not in self.plans and k not in self.counts]
        if uncounted:
            results = run([f'SELECT count("step") FROM "cs_scalar" WHERE {series_where(k)}' for k in uncounted])
            for key, result in zip(uncounted, results):
                self.counts[key] = int(result[0]["values"][0][1]) if result and result[0]["values"] else 0
        stored: dict[SeriesKey, tuple[np.ndarray, ...]] = {}

        def with_stored(key: SeriesKey, pts: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
            if key not in stored:
                stored[key] = raw_points(key)
            new = ~np.isin(pts[1], stored[key][1])  # a failed try of this write may have stored some of them
            return tuple(np.concatenate([o, n[new]]) for o, n in zip(stored[key], pts))

        counts_new: dict[SeriesKey, int] = {}
        proposed: dict[SeriesKey, dict[str, LevelPlan]] = {}
        planned: list[tuple[SeriesKey, dict[str, LevelPlan], tuple[np.ndarray, ...]]] = []
        for key, cols in columns.items():
            pts = tuple(np.concatenate([c[i] for c in cols]) for i in range(3))
            plans = self.plans.get(key)
            if plans is None:
                count = self.counts.get(key, 0) + len(pts[0])
                if count < MIN_POINTS:
                    counts_new[key] = count
                    continue
                steps, walls, _ = with_stored(key, pts) if self.counts.get(key, 0) else pts
                first = np.argsort(walls, kind="stable")[:4096]
                plans = proposed[key] = {
                    "step": LevelPlan("step", choose_base("step", steps[first], BOTTOM_TARGET_POINTS)),
                    "time": time_plan(walls[first], BOTTOM_TARGET_POINTS, self.time_top_ms())}
            planned.append((key, plans, pts))
        claimed = self._claim_plans(proposed, run, post) if proposed else {}
        plans_new: dict[SeriesKey, dict[str, LevelPlan]] = {}
        rolled_up: set[SeriesKey] = set()
        work = []
        for key, plans, pts in planned:
            if key in proposed and claimed[key] != plans:
                # another writer made the plan first, and rolled up what was stored before it
                log.info("rollups of %s: adopting the plan another writer made first", key)
                plans = self.plans[key] = claimed[key]
                self.counts.pop(key, None)
            elif key in proposed:
                plans_new[key] = plans
                if self.counts.get(key, 0):
                    self.unrolled.add(key)  # until this write is stored: a retry rolls them up again
            if key in self.unrolled:
                pts = with_stored(key, pts)
                rolled_up.add(key)
            work.append((key, plans, *pts))
        return work, plans_new, counts_new, rolled_up

    def commit(self) -> None:
        """The lines of the last ``lines()`` are stored."""
        if self._staged is None:
            return
        plans_new, counts_new, open_new, rolled_up, fresh, before = self._staged
        self.made -= fresh
        self.unrolled -= rolled_up
        self.plans.update(plans_new)
        for key in plans_new:
            self.counts.pop(key, None)
        self.counts.update(counts_new)
        self.open.update(open_new)
        for group, rows in before.items():  # the stored rows of these buckets are committed ones again
            known = self.before.pop(group, None)
            if known is not None and len(rest := known.without(rows.buckets)):
                self.before[group] = rest
        self._staged = None

    def _failed(self) -> None:
        """The lines of the last ``lines()`` may be stored in part, and their batches will come again:
        remember what the rows of their buckets held before."""
        if self._staged is None:
            return
        for group, rows in self._staged[-1].items():
            known = self.before.get(group)
            self.before[group] = rows if known is None else known.plus(rows)
        self._staged = None

    def _open_for(
        self, wanted: list[tuple[SeriesKey, str]], run: Statements
    ) -> dict[tuple[SeriesKey, str], OpenBuckets]:
        """Copies of the open buckets of these series (read the first time)."""
        missing = [w for w in wanted if w not in self.open]
        if missing:
            stmts = []
            for key, axis in missing:
                where = f'{series_where(key)} AND "w" = {tag_literal(self.writer)}'
                stmts.append(f'SELECT {SELECT_FIELDS} FROM {self.source(axis)} WHERE {where} GROUP BY "k" '
                             f'ORDER BY time DESC LIMIT 1')
                stmts.append(f'SELECT "p" FROM {self.source(axis)} WHERE {where} AND "k" = \'0\' '
                             f'ORDER BY time DESC LIMIT 1')
            results = run(stmts)
            for i, (key, axis) in enumerate(missing):
                ob = OpenBuckets({})
                plan = self.plans[key][axis]
                for s in results[2 * i]:
                    k = int(decode_tag(s["tags"]["k"]))
                    buckets, agg = rows_of([s], plan.size(k))
                    ob.last[k] = (int(buckets[0]), agg, None)
                if 0 in ob.last and axis in PACKED_AXES:
                    _, packs = packs_of(results[2 * i + 1], plan.size(0))
                    ob.last[0] = (ob.last[0][0], ob.last[0][1], packs[0] if packs else None)
                self.open[(key, axis)] = ob
        return {w: self.open[w].copy() for w in wanted}

    def _read_rows(self, reads: list[tuple[SeriesKey, str, int, np.ndarray]], plans_of: dict, run: Statements
                   ) -> dict[tuple[SeriesKey, str, int], tuple[np.ndarray, M4Agg, list[np.ndarray | None]]]:
        """This writer's stored rows of these buckets (and at level 0 their points)."""
        stmts: list[str] = []
        keys: list[tuple[SeriesKey, str, int, int, int, int | None]] = []  # ..., index of the fields, of "p"
        for key, axis, k, buckets in reads:
            size = plans_of[key][axis].size(k)
            for lo, hi in bucket_runs(np.unique(buckets), gap=0):
                where = (f'{series_where(key)} AND "k" = \'{k}\' AND "w" = {tag_literal(self.writer)} AND '
                         f'time >= {lo * size} AND time < {(hi + 1) * size}')
                stmts.append(f'SELECT {SELECT_FIELDS} FROM {self.source(axis)} WHERE {where}')
                with_points = k == 0 and axis in PACKED_AXES
                if with_points:
                    stmts.append(f'SELECT "p" FROM {self.source(axis)} WHERE {where}')
                keys.append((key, axis, k, size, len(stmts) - (2 if with_points else 1),
                             len(stmts) - 1 if with_points else None))
        results = run(stmts) if stmts else []
        found: dict[tuple[SeriesKey, str, int], list[tuple[np.ndarray, M4Agg, list[np.ndarray | None]]]] = {}
        for key, axis, k, size, at_m, at_p in keys:
            if results[at_m]:
                buckets, agg = rows_of(results[at_m], size)
                packs: list[np.ndarray | None] = \
                    packs_of(results[at_p], size)[1] if at_p is not None else [None] * len(buckets)
                found.setdefault((key, axis, k), []).append((buckets, agg, packs))
        return {g: (np.concatenate([p[0] for p in parts]), M4Agg.concat([p[1] for p in parts]),
                    [x for p in parts for x in p[2]]) for g, parts in found.items()}


def _merge_all(levels: dict[int, Level], jobs: list[tuple[int, np.ndarray, M4Agg]], axis: str) -> None:
    """Merges, for each job ``(k, at, old)``, the rows ``old`` into the rows ``at`` of
    level ``k``'s aggregates (one old row per position), in place: one merge for all
    the series and levels of a write, whatever their number."""
    if not jobs:
        return
    by_level: dict[int, list[tuple[np.ndarray, M4Agg]]] = {}
    for k, at, old in jobs:
        by_level.setdefault(k, []).append((at, old))
    targets = [(k, np.concatenate([at for at, _ in group])) for k, group in by_level.items()]
    new = M4Agg.concat([levels[k][0].take(at) for k, at in targets])
    old = M4Agg.concat([o for group in by_level.values() for _, o in group])
    n = len(new)
    merged = merge(M4Agg.concat([new, old]), np.tile(np.arange(n, dtype=np.int64), 2), n, axis)
    start = 0
    for k, at in targets:
        levels[k][0].put(at, merged.take(slice(start, start + len(at))))
        start += len(at)
