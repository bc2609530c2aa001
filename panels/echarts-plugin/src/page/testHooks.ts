import type { RunRef } from '../core/runs';
import type { DrawnSeries } from '../host/drawnSeries';
import type { ChartSnapshot, CurvePoints, GroupBands } from './chartSnapshot';
import type { LiveState } from './liveSocket';

/** What browser tests can read without looking at canvas pixels: copies, never live objects. */
export interface CurvestreamTestView {
  readonly version: 1;
  /** One entry per chart, in page order. */
  readonly charts: ChartSnapshot[];
  chart(key: string): ChartSnapshot | null;
  /** The series ECharts holds for a chart now (ids `<curve>|raw`, `|smooth`, `|env-lo`, `|env-hi`, `|non-finite`). */
  drawnSeries(key: string): DrawnSeries[] | null;
  /** Each curve's points as the chart holds them (the whole x range, before smoothing): to compare with raw points. */
  curvePoints(key: string): CurvePoints[] | null;
  /** A grouped chart's bands as drawn, with the bridge's pixel columns; null when not grouping (or no such chart). */
  groupBands(key: string): GroupBands | null;
  /** Where a chart draws the data point (x, y), in viewport CSS px (to point at a curve or band like a user). */
  pixelOf(key: string, x: number, y: number): [number, number] | null;
  /** The chart sections (key prefixes) in page order, with the charts that exist in each now. */
  readonly sections: SectionView[];
  readonly selected: RunRef[];
  readonly runs: { project: string; run: string; state: string }[];
  readonly live: LiveState;
  readonly zoom: [number, number] | null;
}

export interface SectionView {
  name: string;
  keys: number;
  folded: boolean;
  charts: string[];
}

/** Everything is computed when read: a chart's snapshot scans its values, so nothing is kept up to date per drawing. */
export interface TestHookSource {
  charts(): ChartSnapshot[];
  chart(key: string): ChartSnapshot | null;
  drawnSeries(key: string): DrawnSeries[] | null;
  curvePoints(key: string): CurvePoints[] | null;
  groupBands(key: string): GroupBands | null;
  pixelOf(key: string, x: number, y: number): [number, number] | null;
  sections(): SectionView[];
  selected(): RunRef[];
  runs(): { project: string; run: string; state: string }[];
  live(): LiveState;
  zoom(): [number, number] | null;
}

function frozenCopy<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Installs `window.__curvestream`. */
export function installTestHooks(source: TestHookSource): void {
  const view: CurvestreamTestView = {
    version: 1,
    get charts() {
      return frozenCopy(source.charts());
    },
    chart(key: string) {
      return frozenCopy(source.chart(key));
    },
    drawnSeries(key: string) {
      return frozenCopy(source.drawnSeries(key));
    },
    curvePoints(key: string) {
      return frozenCopy(source.curvePoints(key));
    },
    groupBands(key: string) {
      return frozenCopy(source.groupBands(key));
    },
    pixelOf(key: string, x: number, y: number) {
      return frozenCopy(source.pixelOf(key, x, y));
    },
    get sections() {
      return frozenCopy(source.sections());
    },
    get selected() {
      return frozenCopy(source.selected());
    },
    get runs() {
      return frozenCopy(source.runs());
    },
    get live() {
      return source.live();
    },
    get zoom() {
      return frozenCopy(source.zoom());
    },
  };
  Object.defineProperty(window, '__curvestream', { value: Object.freeze(view), configurable: false, writable: false });
}
