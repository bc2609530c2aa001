/** What one chart of the page draws: a curve per run, or a mean line and band per group of runs. */
import { alertMarkers } from '../core/alerts';
import { aggregateBand, aggregateCurves, aggregateMeanSeries, type GroupBandKind } from '../core/groups';
import { drawnRangeOf, xExtentOf } from '../core/lineRange';
import type { ApiAlert } from '../types/api';
import type { ChartModel, ChartSeriesInput, ChartSettings } from '../types/chart';
import { drawnData, type Curve } from './curveLoading';

/** Several runs drawn as one mean line with a band (a sweep's runs with the same config value). */
export interface GroupSpec {
  id: string;
  name: string;
  color: string;
  /** Curve ids (run keys) of the group's runs. */
  memberIds: string[];
}

export interface ChartContent {
  key: string;
  curves: ReadonlyMap<string, Curve>;
  /** Null: one curve per run. */
  groups: readonly GroupSpec[] | null;
  band: GroupBandKind;
  settings: ChartSettings;
  widthPx: number;
  window: [number, number] | null;
  /** Alerts of the page's runs: marked on their curves (not on group means). */
  alerts?: readonly ApiAlert[];
}

function groupInputs(content: ChartContent, groups: readonly GroupSpec[]): { series: ChartSeriesInput[]; nonFinite: number } {
  let nonFinite = 0;
  const series = groups.map((g) => {
    const members = g.memberIds.flatMap((id) => {
      const curve = content.curves.get(id);
      return curve ? [curve] : [];
    });
    const aggregate = aggregateCurves(members.map(drawnData));
    nonFinite += aggregate.nonFinite;
    const spacings = members.flatMap((c) => (c.dxRef === undefined ? [] : [c.dxRef]));
    return {
      id: g.id,
      name: g.name,
      color: g.color,
      data: aggregateMeanSeries(aggregate),
      band: aggregateBand(aggregate, content.band),
      ...(spacings.length ? { dxRef: spacings.reduce((a, b) => a + b, 0) / spacings.length } : {}),
    };
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
  const grouped = content.groups ? groupInputs(content, content.groups) : null;
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
    },
    groupNonFinite: grouped?.nonFinite ?? 0,
  };
}
