/** What one chart of the page draws: a curve per run, or a mean line and band per group of runs. */
import { alertMarkers } from '../core/alerts';
import type { GroupBandKind } from '../core/groups';
import { drawnRangeOf, xExtentOf } from '../core/lineRange';
import { parseApiNumbers } from '../core/numbers';
import type { ApiAlert, ApiGroup, ApiGroups } from '../types/api';
import type { Band, ChartModel, ChartSeriesInput, ChartSettings, SeriesData } from '../types/chart';
import { drawnData, type Curve } from './curveLoading';

/** Groups of runs as the bridge computed them (`GET /api/v1/groups/series`), drawn as a mean line and a band each. */
export interface GroupView {
  /** Null until the bridge answered. */
  answer: ApiGroups | null;
  band: GroupBandKind;
  colorOf(id: string): string;
}

/** A group's series id: stable for a grouping and a value. */
export function groupId(groupBy: string, value: string | null): string {
  return `group:${JSON.stringify([groupBy, value])}`;
}

/** A group's legend name: its label and how many runs it averages. */
export function groupName(group: Pick<ApiGroup, 'label' | 'runs'>): string {
  const n = group.runs.length;
  return `${group.label} (${n === 1 ? '1 run' : `${n} runs`})`;
}

/** The mean line of a group: a point per pixel column where its runs have points, at their values' mean step and time. */
export function groupMean(group: ApiGroup): SeriesData {
  const known = (v: number | null) => (v === null ? NaN : v);
  return {
    x: group.columns.x.slice(),
    y: parseApiNumbers(group.columns.mean),
    step: group.columns.step.map((s) => (s === null ? NaN : Math.round(s))),
    timeMs: group.columns.time_ms.map(known),
  };
}

/** A group's band: its runs' min–max per column, or the mean ± one standard deviation. */
export function groupBand(group: ApiGroup, kind: GroupBandKind): Band {
  const x = group.columns.x.slice();
  if (kind === 'minmax') return { x, lo: parseApiNumbers(group.columns.min), hi: parseApiNumbers(group.columns.max) };
  const mean = parseApiNumbers(group.columns.mean);
  const std = parseApiNumbers(group.columns.std);
  return { x, lo: mean.map((m, i) => m - std[i]!), hi: mean.map((m, i) => m + std[i]!) };
}

export interface ChartContent {
  key: string;
  curves: ReadonlyMap<string, Curve>;
  /** Null: one curve per run. */
  groups: GroupView | null;
  settings: ChartSettings;
  widthPx: number;
  window: [number, number] | null;
  /** Alerts of the page's runs: marked on their curves (not on group means). */
  alerts?: readonly ApiAlert[];
  /** The chart's own legend is off (the card shows one of its own: many curves). */
  legend?: boolean;
}

function groupInputs(view: GroupView): { series: ChartSeriesInput[]; nonFinite: number } {
  const answer = view.answer;
  if (!answer) return { series: [], nonFinite: 0 };
  let nonFinite = 0;
  const series = answer.groups.flatMap((g) => {
    if (g.runs.length === 0) return [];
    nonFinite += g.non_finite;
    const id = groupId(answer.group_by, g.value);
    return [{ id, name: groupName(g), color: view.colorOf(id), data: groupMean(g), band: groupBand(g, view.band) }];
  });
  return { series, nonFinite };
}

/**
 * The x range a chart shows: the window as the bridge answered it when every curve's answer to it
 * says the same (columns snapped to rollup buckets widen it: the lines are the raw ones over exactly
 * that range), else the window; null when not zoomed.
 */
export function shownWindow(content: ChartContent): [number, number] | null {
  const window = content.window;
  if (!window) return null;
  let range: [number, number] | null = null;
  for (const curve of content.curves.values()) {
    const detail = curve.detail;
    if (!detail || detail.window[0] !== window[0] || detail.window[1] !== window[1]) return window;
    if (range && (range[0] !== detail.range[0] || range[1] !== detail.range[1])) return window;
    range = detail.range;
  }
  return range ?? window;
}

/**
 * The x axis's extent when the bridge answered the whole series over a range wider than its
 * points (snapped columns): that range, grown to the points (live ones may lie past it); null otherwise.
 */
export function answeredExtent(
  curves: Iterable<Curve>,
  data: readonly { x: ArrayLike<number> }[],
): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const curve of curves) {
    if (!curve.overviewRange) continue;
    lo = Math.min(lo, curve.overviewRange[0]);
    hi = Math.max(hi, curve.overviewRange[1]);
  }
  const points = xExtentOf(data);
  if (!(lo <= hi) || !points || (lo >= points[0] && hi <= points[1])) return null;
  return [Math.min(lo, points[0]), Math.max(hi, points[1])];
}

/** The chart core's model of a chart; `groupNonFinite`: values the group means left out. */
export function chartModelOf(content: ChartContent): { model: ChartModel; groupNonFinite: number } {
  const grouped = content.groups ? groupInputs(content.groups) : null;
  const series =
    grouped?.series ??
    [...content.curves.values()].map((c) => ({
      id: c.id,
      name: c.name,
      color: c.color,
      data: drawnData(c),
      ...(c.dxRef === undefined ? {} : { dxRef: c.dxRef }),
      ...(content.alerts?.length
        ? { markers: alertMarkers(content.alerts, c.ref, content.key, drawnData(c), content.settings.xMode) }
        : {}),
    }));
  const window = shownWindow(content);
  const extent = answeredExtent(content.curves.values(), series.map((s) => s.data));
  return {
    model: {
      series,
      settings: content.settings,
      widthPx: content.widthPx,
      xWindow: window,
      xExtent: extent,
      // the page draws again when a zoom leaves this range (ChartPanel.applyZoomToChart)
      drawnRange: drawnRangeOf(window, xExtentOf(series.map((s) => s.data))),
      title: content.key,
      ...(content.legend === false ? { legend: false } : {}),
    },
    groupNonFinite: grouped?.nonFinite ?? 0,
  };
}
