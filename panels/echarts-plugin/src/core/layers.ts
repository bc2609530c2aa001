/** Everything derived from a chart model before it becomes an ECharts option: smoothing, bands, y range, notes. */
import type { ChartModel, ChartSeriesInput } from '../types/chart';
import { envelopeBucketsFor, minMaxEnvelope, type Envelope } from './envelope';
import { rangeIndices } from './series';
import { clampSmoothing, emaTensorBoard, emaTimeWeighted } from './smoothing';
import { computeYRange, type YRange } from './yRange';

export interface NonFiniteCounts {
  nan: number;
  posInf: number;
  negInf: number;
}

export interface SeriesLayers {
  input: ChartSeriesInput;
  smoothed: number[] | null;
  envelope: Envelope | null;
  nonFinite: NonFiniteCounts;
}

/** Everything derived from a chart model before it becomes an ECharts option. */
export interface ChartLayers {
  series: SeriesLayers[];
  yRange: YRange;
  smoothingOn: boolean;
  envelopeOn: boolean;
  /** Short remarks for the host to show near the chart (hidden values, clipped outliers). */
  notes: string[];
}

function countNonFinite(ys: readonly number[]): NonFiniteCounts {
  const counts = { nan: 0, posInf: 0, negInf: 0 };
  for (const y of ys) {
    if (Number.isFinite(y)) continue;
    if (Number.isNaN(y)) counts.nan++;
    else if (y > 0) counts.posInf++;
    else counts.negInf++;
  }
  return counts;
}

function visibleSlice(xs: readonly number[], ys: number[], window: [number, number] | null | undefined): number[] {
  if (!window) return ys;
  const [from, to] = rangeIndices(xs, window[0], window[1]);
  return ys.slice(from, to);
}

/** The values the y axis must show: the curve's, and its precomputed band's edges. */
function visibleValues(input: ChartSeriesInput, window: [number, number] | null | undefined): number[][] {
  const out = [visibleSlice(input.data.x, input.data.y, window)];
  if (input.band) out.push(visibleSlice(input.band.x, input.band.lo, window), visibleSlice(input.band.x, input.band.hi, window));
  return out;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function computeLayers(model: ChartModel): ChartLayers {
  const { settings } = model;
  const weight = clampSmoothing(settings.smoothing);
  const smoothingOn = weight > 0;
  const smoothingEnvelope = smoothingOn && settings.showEnvelope;
  const envelopeOn = smoothingEnvelope || model.series.some((s) => s.band !== undefined);
  const buckets = envelopeBucketsFor(model.widthPx);

  const series = model.series.map((input): SeriesLayers => {
    const { data } = input;
    let smoothed: number[] | null = null;
    if (smoothingOn) {
      smoothed =
        settings.smoothingKind === 'time'
          ? emaTimeWeighted(data.x, data.y, weight, input.dxRef)
          : emaTensorBoard(data.y, weight);
    }
    return {
      input,
      smoothed,
      envelope: input.band ?? (smoothingEnvelope ? minMaxEnvelope(data, buckets) : null),
      nonFinite: countNonFinite(data.y),
    };
  });

  const yRange = computeYRange(
    model.series.flatMap((s) => visibleValues(s, model.xWindow)),
    { log: settings.logY, ignoreOutliers: settings.ignoreOutliers },
  );

  const notes: string[] = [];
  const kinds = [
    series.some((s) => s.nonFinite.nan > 0) ? 'NaN' : '',
    series.some((s) => s.nonFinite.posInf > 0) ? '+Inf' : '',
    series.some((s) => s.nonFinite.negInf > 0) ? '-Inf' : '',
  ].filter(Boolean);
  if (kinds.length) {
    const list = kinds.length === 1 ? kinds[0] : `${kinds.slice(0, -1).join(', ')} and ${kinds[kinds.length - 1]}`;
    notes.push(`${list} marked at the plot edge`);
  }
  if (settings.logY && yRange.nonPositiveHidden > 0) {
    notes.push(`${plural(yRange.nonPositiveHidden, 'value')} ≤ 0 hidden (log scale)`);
  }
  if (settings.ignoreOutliers && yRange.outliersClipped > 0) {
    notes.push(`${plural(yRange.outliersClipped, 'outlier')} beyond the y range`);
  }
  return { series, yRange, smoothingOn, envelopeOn, notes };
}
