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
  return {
    model: {
      series,
      settings: content.settings,
      widthPx: content.widthPx,
      xWindow: content.window,
      // the page draws again when a zoom leaves this range (ChartPanel.applyZoomToChart)
      drawnRange: drawnRangeOf(content.window, xExtentOf(series.map((s) => s.data))),
      title: content.key,
    },
    groupNonFinite: grouped?.nonFinite ?? 0,
  };
}
