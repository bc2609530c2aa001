/**
 * What a chart tells of itself (`window.__curvestream` in testHooks.ts, and the
 * card's data attributes): what it drew, per curve and group, in numbers that tests
 * and benchmarks read instead of pixels.
 */
import type { GroupBandKind } from '../core/groups';
import type { XMode } from '../types/api';

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
  /** The groups drawn instead of single runs; empty when not grouping. */
  groups: GroupSnapshot[];
  /** How many times the chart was drawn (options set); off-screen charts wait instead. */
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
