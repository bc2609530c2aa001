import type { ApiRun } from '../types/api';
import type { Band, SeriesData } from '../types/chart';
import { runKey, type RunRef } from './runs';

/** A config value as filters and groups show it: strings as they are, the rest as JSON. */
export function configValueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * How runs are grouped: `''` not at all, `'group'` by the run's group,
 * `'config:<key>'` by the value of a config key (a sweep's parameter).
 */
export type GroupBy = string;

const CONFIG_PREFIX = 'config:';

export function groupByConfigKey(key: string): GroupBy {
  return `${CONFIG_PREFIX}${key}`;
}

/** The config key of a `config:<key>` grouping, else null. */
export function configKeyOf(groupBy: GroupBy): string | null {
  return groupBy.startsWith(CONFIG_PREFIX) ? groupBy.slice(CONFIG_PREFIX.length) : null;
}

/** What a run is grouped by, as text; null when the run does not have it. */
export function groupValue(run: ApiRun | undefined, groupBy: GroupBy): string | null {
  if (!run) return null;
  if (groupBy === 'group') return run.group ? run.group : null;
  const key = configKeyOf(groupBy);
  if (key === null) return null;
  const config = run.config ?? {};
  return Object.prototype.hasOwnProperty.call(config, key) ? configValueText(config[key]) : null;
}

export interface RunGroup {
  /** Stable and unique among the groups: a series id. */
  id: string;
  /** Legend label, e.g. `lr=0.1`. */
  label: string;
  members: RunRef[];
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'variant' });

function compareValues(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1; // runs without the value go last
  if (b === null) return -1;
  const na = Number(a);
  const nb = Number(b);
  if (a.trim() !== '' && b.trim() !== '' && Number.isFinite(na) && Number.isFinite(nb)) return na - nb || collator.compare(a, b);
  return collator.compare(a, b);
}

/**
 * The selected runs split by a grouping, in value order (numbers by value),
 * runs without the value in one last group. Each run keeps its selection order.
 */
export function groupRuns(selected: readonly RunRef[], runs: readonly ApiRun[], groupBy: GroupBy): RunGroup[] {
  const byId = new Map(runs.map((r) => [runKey(r), r]));
  const groups = new Map<string | null, RunRef[]>();
  for (const ref of selected) {
    const value = groupValue(byId.get(runKey(ref)), groupBy);
    const list = groups.get(value);
    if (list) list.push(ref);
    else groups.set(value, [ref]);
  }
  const name = groupBy === 'group' ? 'group' : (configKeyOf(groupBy) ?? groupBy);
  return [...groups.entries()]
    .sort(([a], [b]) => compareValues(a, b))
    .map(([value, members]) => ({
      id: `group:${JSON.stringify([groupBy, value])}`,
      label: value === null ? `no ${name}` : `${name}=${value}`,
      members,
    }));
}

/** Statistics of a group's curves at every x where at least one member has a value. */
export interface GroupAggregate {
  x: number[];
  mean: number[];
  min: number[];
  max: number[];
  /** Population standard deviation over the members with a value at x. */
  std: number[];
  /** Members with a value at x. */
  count: number[];
  /** Step and time of the first member with a value at x (interpolated between its points). */
  step: number[];
  timeMs: number[];
  /** Non-finite member points (NaN, ±Inf) left out of the statistics. */
  nonFinite: number;
}

function sortedUnionOfX(members: readonly SeriesData[]): number[] {
  const all: number[] = [];
  for (const m of members) for (const x of m.x) all.push(x);
  all.sort((a, b) => a - b);
  const out: number[] = [];
  for (const x of all) if (out.length === 0 || out[out.length - 1] !== x) out.push(x);
  return out;
}

/** A member's value, step and time at x: its own point, or the line between its neighbours. */
interface Sample {
  y: number;
  step: number;
  timeMs: number;
}

/** Walks one member along ascending x values. */
class MemberCursor {
  private j = 0;
  constructor(private readonly data: SeriesData) {}

  /** The sample at x; null outside the member's x extent or next to a non-finite value. `nonFinite` is set at such a point. */
  at(x: number): { sample: Sample | null; nonFinite: boolean } {
    const { x: xs, y, step, timeMs } = this.data;
    const n = xs.length;
    while (this.j < n && xs[this.j]! < x) this.j++;
    if (this.j < n && xs[this.j] === x) {
      let k = this.j;
      while (k + 1 < n && xs[k + 1] === x) k++; // a step logged twice: the later value counts
      const v = y[k]!;
      if (!Number.isFinite(v)) return { sample: null, nonFinite: true };
      return { sample: { y: v, step: step[k]!, timeMs: timeMs[k]! }, nonFinite: false };
    }
    if (this.j === 0 || this.j >= n) return { sample: null, nonFinite: false };
    const a = this.j - 1;
    const b = this.j;
    const ya = y[a]!;
    const yb = y[b]!;
    if (!Number.isFinite(ya) || !Number.isFinite(yb)) return { sample: null, nonFinite: false };
    const t = (x - xs[a]!) / (xs[b]! - xs[a]!);
    return {
      sample: {
        y: ya + (yb - ya) * t,
        step: Math.round(step[a]! + (step[b]! - step[a]!) * t),
        timeMs: timeMs[a]! + (timeMs[b]! - timeMs[a]!) * t,
      },
      nonFinite: false,
    };
  }
}

/**
 * Mean, min, max and standard deviation of several curves aligned by x.
 * Every x of every member is a point of the result; a member counts at x when
 * it has a point there or points on both sides (linear interpolation), never
 * beyond its own first and last point, so a run that stopped early does not
 * drag the mean. Non-finite values are left out and counted.
 */
export function aggregateCurves(members: readonly SeriesData[]): GroupAggregate {
  const out: GroupAggregate = { x: [], mean: [], min: [], max: [], std: [], count: [], step: [], timeMs: [], nonFinite: 0 };
  const cursors = members.map((m) => new MemberCursor(m));
  const values: number[] = [];
  for (const x of sortedUnionOfX(members)) {
    values.length = 0;
    let first: Sample | null = null;
    for (const cursor of cursors) {
      const { sample, nonFinite } = cursor.at(x);
      if (nonFinite) out.nonFinite++;
      if (!sample) continue;
      first ??= sample;
      values.push(sample.y);
    }
    if (!first) continue;
    const n = values.length;
    let sum = 0;
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of values) {
      sum += v;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    const mean = sum / n;
    // two passes: exact for large values with a small spread
    let squares = 0;
    for (const v of values) squares += (v - mean) * (v - mean);
    out.x.push(x);
    out.mean.push(mean);
    out.min.push(lo);
    out.max.push(hi);
    out.std.push(Math.sqrt(squares / n));
    out.count.push(n);
    out.step.push(first.step);
    out.timeMs.push(first.timeMs);
  }
  return out;
}

/** What a group's band shows: the members' min–max, or the mean ± one standard deviation. */
export type GroupBandKind = 'minmax' | 'std';

export function aggregateBand(aggregate: GroupAggregate, kind: GroupBandKind): Band {
  if (kind === 'minmax') return { x: aggregate.x.slice(), lo: aggregate.min.slice(), hi: aggregate.max.slice() };
  return {
    x: aggregate.x.slice(),
    lo: aggregate.mean.map((m, i) => m - aggregate.std[i]!),
    hi: aggregate.mean.map((m, i) => m + aggregate.std[i]!),
  };
}

/** The mean line as a curve the chart core draws like any run. */
export function aggregateMeanSeries(aggregate: GroupAggregate): SeriesData {
  return { x: aggregate.x.slice(), y: aggregate.mean.slice(), step: aggregate.step.slice(), timeMs: aggregate.timeMs.slice() };
}
