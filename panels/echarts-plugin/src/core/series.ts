import type { ApiPoint, ApiSeriesResponse, XMode } from '../types/api';
import type { SeriesData } from '../types/chart';
import { parseApiNumber, parseApiNumbers } from './numbers';

export function emptySeries(): SeriesData {
  return { x: [], y: [], step: [], timeMs: [] };
}

export function seriesLength(data: SeriesData): number {
  return data.x.length;
}

/** One point of a series response's `before`/`after`, parsed. */
export interface SeriesPoint {
  x: number;
  y: number;
  step: number;
  timeMs: number;
}

/** A series response with its values parsed and its neighbours kept apart. */
export interface ParsedSeries {
  xMode: XMode;
  start: number | null;
  end: number | null;
  raw: boolean;
  /** Points in the queried range (not only those returned). */
  total: number;
  /** The returned points of the range (M4 or raw). */
  points: SeriesData;
  before: SeriesPoint | null;
  after: SeriesPoint | null;
}

function parsePoint(point: ApiPoint | null | undefined): SeriesPoint | null {
  if (!point) return null;
  return { x: point.x, y: parseApiNumber(point.y), step: point.step, timeMs: point.time_ms };
}

export function parseSeriesResponse(response: ApiSeriesResponse): ParsedSeries {
  const p = response.points;
  const n = p.x.length;
  if (p.y.length !== n || p.step.length !== n || p.time_ms.length !== n) {
    throw new Error(
      `series ${response.key}: points arrays differ in length (x ${n}, y ${p.y.length}, ` +
        `step ${p.step.length}, time_ms ${p.time_ms.length})`,
    );
  }
  return {
    xMode: response.x,
    start: response.start ?? null,
    end: response.end ?? null,
    raw: Boolean(response.raw),
    total: response.total ?? n,
    points: { x: p.x.slice(), y: parseApiNumbers(p.y), step: p.step.slice(), timeMs: p.time_ms.slice() },
    before: parsePoint(response.before),
    after: parsePoint(response.after),
  };
}

/** The points plus the neighbours outside the range, so a zoomed line runs to the chart's edges. */
export function withNeighbours(parsed: ParsedSeries): SeriesData {
  const { points, before, after } = parsed;
  if (!before && !after) return points;
  const column = (k: keyof SeriesData) => {
    const out = before ? [before[k]].concat(points[k]) : points[k].slice();
    if (after) out.push(after[k]);
    return out;
  };
  return { x: column('x'), y: column('y'), step: column('step'), timeMs: column('timeMs') };
}

/** First index whose x is >= value (x sorted ascending). */
export function lowerBound(xs: readonly number[], value: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index whose x is > value (x sorted ascending). */
export function upperBound(xs: readonly number[], value: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Replace the part of a coarse overview that a detailed query covers.
 *
 * `detail` is a zoomed query's points with its before/after neighbours. The
 * neighbours are the nearest raw points outside the range, so no raw point lies
 * strictly between them and the range: overview points left of the first detail
 * point and right of the last one never change what is drawn inside the view.
 * Keeping them lets a pan show the coarse curve at once, until the next query.
 */
export function spliceDetail(overview: SeriesData, detail: SeriesData): SeriesData {
  const n = detail.x.length;
  if (n === 0) return overview;
  const first = detail.x[0]!;
  const last = detail.x[n - 1]!;
  const left = lowerBound(overview.x, first);
  const right = upperBound(overview.x, last);
  // slices and concat copy whole arrays at once (a push per value cost ~5× more)
  const column = (k: keyof SeriesData) => overview[k].slice(0, left).concat(detail[k], overview[k].slice(right));
  return { x: column('x'), y: column('y'), step: column('step'), timeMs: column('timeMs') };
}

/** Index range [from, to) of the points whose x lies in [start, end]. */
export function rangeIndices(xs: readonly number[], start: number, end: number): [number, number] {
  return [lowerBound(xs, start), upperBound(xs, end)];
}

/** Number of points with x in [start, end]. */
export function countInRange(data: SeriesData, start: number, end: number): number {
  const [from, to] = rangeIndices(data.x, start, end);
  return Math.max(0, to - from);
}

/**
 * The wall time (ms) that `relative` x counts from, read off any point whose
 * x is relative seconds. Null when the series is empty.
 */
export function relativeOriginMs(data: SeriesData): number | null {
  if (data.x.length === 0) return null;
  return data.timeMs[0]! - data.x[0]! * 1000;
}

/** The x of a point for an x mode; relative needs the run's first-point time. */
export function xFor(mode: XMode, step: number, timeMs: number, originMs: number | null): number {
  switch (mode) {
    case 'step':
      return step;
    case 'time':
      return timeMs;
    case 'relative':
      return (timeMs - (originMs ?? timeMs)) / 1000;
  }
}

/** Mean x distance between raw points: `total` points spread over [first, last]. */
export function meanSpacing(first: number, last: number, total: number): number | undefined {
  if (!(total > 1) || !Number.isFinite(first) || !Number.isFinite(last) || last <= first) return undefined;
  return (last - first) / (total - 1);
}

/** Smallest and largest x over several sorted x arrays, or null when all are empty: the one x-extent of every host. */
export function extentOf(xs: readonly (readonly number[])[]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of xs) {
    if (x.length === 0) continue;
    lo = Math.min(lo, x[0]!);
    hi = Math.max(hi, x[x.length - 1]!);
  }
  return hi >= lo ? [lo, hi] : null;
}

/** Smallest and largest x of a series, or null when empty. */
export function xExtent(data: SeriesData): [number, number] | null {
  return extentOf([data.x]);
}
