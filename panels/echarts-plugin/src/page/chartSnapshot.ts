/**
 * What a chart tells of itself (`window.__curvestream` in testHooks.ts, and the
 * card's data attributes): what it drew, per curve and group, in numbers that tests
 * and benchmarks read instead of pixels.
 */
import type { GroupBandKind } from '../core/groups';
import { rangeIndices } from '../core/series';
import type { ApiGroups, XMode } from '../types/api';
import type { ChartSeriesInput } from '../types/chart';
import { groupId, groupName } from './chartModel';
import { drawnData, drawnPoints, drawnRaw, type Curve } from './curveLoading';

export interface CurveSnapshot {
  name: string;
  project: string;
  run: string;
  /** Points drawn inside the visible x range (all of them when not zoomed). */
  points: number;
  /** Points held for the whole chart, outside the view included. */
  drawn: number;
  raw: boolean;
  /** Lowest and highest finite value drawn inside the visible x range; null when none. */
  yMin: number | null;
  yMax: number | null;
}

/** One curve's points as drawn (NaN and ±Infinity as JSON cannot carry them: structuredClone keeps them). */
export interface CurvePoints {
  project: string;
  run: string;
  raw: boolean;
  x: number[];
  y: number[];
}

export interface GroupSnapshot {
  name: string;
  /** Names of the runs averaged. */
  runs: string[];
  /** Points of the mean line (and of the band) inside the visible x range. */
  points: number;
  yMin: number | null;
  yMax: number | null;
  band: GroupBandKind;
  /** Lowest low edge and highest high edge of the band inside the visible x range. */
  bandMin: number | null;
  bandMax: number | null;
}

/** The bands a grouped chart drew, with the pixel columns the bridge computed them for (tests compare them per column). */
export interface GroupBands {
  start: number | null;
  end: number | null;
  width: number;
  x: XMode;
  band: GroupBandKind;
  groups: { name: string; runs: { project: string; run: string }[]; column: number[]; x: number[]; lo: number[]; hi: number[] }[];
}

export interface ChartSnapshot {
  key: string;
  state: ChartState;
  xMode: XMode;
  window: [number, number] | null;
  raw: boolean;
  smoothing: boolean;
  envelope: boolean;
  logY: boolean;
  notes: string[];
  series: CurveSnapshot[];
  /** Alert markers on the curves: at x (the step where the alert fired, in x units), with its window. */
  markers: { series: string; kind: string; x: number; window: [number, number] | null }[];
  /** The groups drawn instead of single runs; empty when not grouping. */
  groups: GroupSnapshot[];
  /** How many times the chart was drawn (options set: data, or the window alone); off-screen charts wait instead. */
  renders: number;
}

export type ChartState = 'idle' | 'loading' | 'ready' | 'error';

/** Lowest and highest finite value of `ys[from..to)`; nulls when none. */
export function finiteExtent(ys: readonly number[], from: number, to: number): [number | null, number | null] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = from; i < to; i++) {
    const y = ys[i]!;
    if (!Number.isFinite(y)) continue;
    if (y < lo) lo = y;
    if (y > hi) hi = y;
  }
  return hi >= lo ? [lo, hi] : [null, null];
}

/** Index range of the points inside the visible x range (all of them when not zoomed). */
function visibleRange(xs: readonly number[], window: readonly [number, number] | null): [number, number] {
  return window ? rangeIndices(xs, window[0], window[1]) : [0, xs.length];
}

/** One curve as the chart draws it now: read when asked (it scans the visible values), never per drawing. */
export function curveSnapshot(curve: Curve, window: readonly [number, number] | null): CurveSnapshot {
  const data = drawnData(curve);
  const [from, to] = visibleRange(data.x, window);
  const [yMin, yMax] = finiteExtent(data.y, from, to);
  return {
    name: curve.name,
    project: curve.ref.project,
    run: curve.ref.run,
    points: to - from,
    drawn: data.x.length,
    raw: drawnRaw(curve),
    yMin,
    yMax,
  };
}

/** The groups as drawn by the last model (its series are the groups' means and bands). */
export function groupSnapshots(
  answer: ApiGroups,
  band: GroupBandKind,
  drawn: readonly ChartSeriesInput[],
  window: readonly [number, number] | null,
): GroupSnapshot[] {
  const inputs = new Map(drawn.map((s) => [s.id, s]));
  return answer.groups.flatMap((g) => {
    const input = inputs.get(groupId(answer.group_by, g.value));
    if (!input) return [];
    const [from, to] = visibleRange(input.data.x, window);
    const [yMin, yMax] = finiteExtent(input.data.y, from, to);
    const bandData = input.band;
    const [bandFrom, bandTo] = bandData ? visibleRange(bandData.x, window) : [0, 0];
    return [{
      name: groupName(g),
      runs: g.runs.map((r) => r.run),
      points: to - from,
      yMin,
      yMax,
      band,
      bandMin: bandData ? finiteExtent(bandData.lo, bandFrom, bandTo)[0] : null,
      bandMax: bandData ? finiteExtent(bandData.hi, bandFrom, bandTo)[1] : null,
    }];
  });
}

/** What a chart card writes on itself at every drawing: counts by binary search only, no scan of the values. */
export interface CardSummary {
  /** Points inside the visible x range, per curve name. */
  points: Record<string, number>;
  total: number;
  raw: boolean;
  /** Runs per group name; null when not grouping. */
  groups: Record<string, number> | null;
}

/** `groups`: the groups' series drawn (null: one curve per run), `answer` the bridge's groups they come from. */
export function cardSummary(
  curves: readonly Curve[],
  groups: readonly ChartSeriesInput[] | null,
  answer: ApiGroups | null,
  window: readonly [number, number] | null,
): CardSummary {
  const points: Record<string, number> = {};
  let total = 0;
  for (const curve of curves) {
    const n = drawnPoints(curve, window);
    points[curve.name] = n;
    total += n;
  }
  for (const g of groups ?? []) {
    const [from, to] = visibleRange(g.data.x, window);
    points[g.name] = to - from;
    total += to - from;
  }
  return {
    points,
    total,
    raw: groups === null && curves.length > 0 && curves.every(drawnRaw),
    groups: groups ? Object.fromEntries((answer?.groups ?? []).filter((g) => g.runs.length > 0).map((g) => [groupName(g), g.runs.length])) : null,
  };
}

/**
 * The card's data attributes and mode badge, from its summary: cheap counts,
 * written at every drawing (benchmarks watch them).
 */
export function writeCardSummary(
  card: HTMLElement,
  badge: HTMLElement,
  summary: CardSummary,
  layers: { smoothingOn: boolean; envelopeOn: boolean } | null,
): void {
  const { dataset } = card;
  dataset.points = JSON.stringify(summary.points);
  dataset.raw = String(summary.raw);
  dataset.smoothing = layers?.smoothingOn ? 'on' : 'off';
  dataset.envelope = String(layers?.envelopeOn ?? false);
  if (summary.groups) dataset.groups = JSON.stringify(summary.groups);
  else delete dataset.groups;
  const { total, raw } = summary;
  badge.textContent = total === 0 ? '' : raw ? 'raw' : 'M4';
  badge.className = `badge mode ${raw ? 'raw' : 'm4'}`;
  badge.title = raw
    ? `all ${total} points of the visible range are drawn`
    : `${total} points drawn: first, last, min and max of every pixel column (M4), the same line as the raw data`;
}
