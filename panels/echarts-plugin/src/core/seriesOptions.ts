/** The ECharts series of every curve of a chart: raw line, smoothed line, band, non-finite markers. */
import type { LineSeriesOption, ScatterSeriesOption } from 'echarts/charts';
import type { ChartModel } from '../types/chart';
import { markerOptions } from './alerts';
import type { Envelope } from './envelope';
import type { ChartLayers, SeriesLayers } from './layers';
import { keptIndices } from './lineRange';
import type { YRange } from './yRange';

/** The ECharts series ids of one curve's layers (`drawnSeriesIds`: those drawn). */
export function seriesIds(id: string) {
  return {
    raw: `${id}|raw`,
    smooth: `${id}|smooth`,
    envelopeLow: `${id}|env-lo`,
    envelopeHigh: `${id}|env-hi`,
    nonFinite: `${id}|non-finite`,
  };
}

/**
 * The raw line is 1 CSS pixel wide (Grafana's default too). A browser that
 * rasterizes in software (no GPU raster: many remote desktops, headless
 * Chromium) draws a 1-pixel line as a hairline; at 1.5 it strokes the outline
 * of every segment instead, and a dense noisy curve of 8,000 points took
 * 5× longer to paint (bench/README.md, zoomed views of 10 × 10M points).
 */
export const RAW_LINE_WIDTH = 1;

type Pair = [number, number | null];

/**
 * Which layers of a curve are drawn: the raw line always, the others only when
 * they hold something (smoothing on, a band, non-finite values). ECharts' work
 * in a `setOption` grows with the number of series, empty or not: ten curves
 * with all five layers took it about twice as long to set up as with one.
 */
export function drawnLayers(s: SeriesLayers): { smooth: boolean; band: boolean; markers: boolean } {
  const { nan, posInf, negInf } = s.nonFinite;
  return { smooth: s.smoothed !== null, band: s.envelope !== null, markers: nan + posInf + negInf > 0 };
}

/** The ids of the series drawn for these layers, in the order `seriesOptions` lists them. */
export function drawnSeriesIds(layers: ChartLayers): string[] {
  const out: string[] = [];
  for (const s of layers.series) {
    const ids = seriesIds(s.input.id);
    const drawn = drawnLayers(s);
    out.push(ids.raw);
    if (drawn.smooth) out.push(ids.smooth);
    if (drawn.band) out.push(ids.envelopeLow, ids.envelopeHigh);
    if (drawn.markers) out.push(ids.nonFinite);
  }
  return out;
}

/** How a line's points are given to ECharts: x, y, x, y … in one typed array (see `linePoints`). */
export const LINE_DIMENSIONS = ['x', 'y'];

/** A value as ECharts should draw it: NaN (a gap) for non-finite values and, on log, for values ≤ 0. */
function drawable(y: number, log: boolean): number {
  if (!Number.isFinite(y)) return NaN;
  if (log && y <= 0) return NaN;
  return y;
}

/**
 * A line's points as x, y, x, y … in a Float64Array: ECharts copies such an array
 * into its storage in one pass, where an array of [x, y] pairs costs it several
 * times as long per point (a first draw of 10 overlaid runs is mostly that). A NaN
 * y is a gap, drawn exactly as a null one.
 */
export function linePoints(xs: readonly number[], ys: readonly number[], log: boolean, keep: readonly number[] | null = null): Float64Array {
  const n = keep ? keep.length : xs.length;
  const out = new Float64Array(2 * n);
  for (let k = 0; k < n; k++) {
    const i = keep ? keep[k]! : k;
    out[2 * k] = xs[i]!;
    out[2 * k + 1] = drawable(ys[i]!, log);
  }
  return out;
}

/** ECharts takes a typed array as a series' data (with `dimensions`), though its types list only arrays. */
function lineData(points: Float64Array): LineSeriesOption['data'] {
  return points as unknown as LineSeriesOption['data'];
}

interface MarkerItem {
  value: [number, number];
  name: string;
  symbol: string;
  symbolRotate: number;
}

/** Non-finite points as markers on the plot's edge: +Inf top, -Inf bottom, NaN top (diamond). */
function markerItems(layers: SeriesLayers, yRange: YRange): MarkerItem[] {
  const { x, y } = layers.input.data;
  const out: MarkerItem[] = [];
  for (let i = 0; i < y.length; i++) {
    const v = y[i]!;
    if (Number.isFinite(v)) continue;
    if (Number.isNaN(v)) out.push({ value: [x[i]!, yRange.max], name: 'NaN', symbol: 'diamond', symbolRotate: 0 });
    else if (v > 0) out.push({ value: [x[i]!, yRange.max], name: '+Inf', symbol: 'triangle', symbolRotate: 0 });
    else out.push({ value: [x[i]!, yRange.min], name: '-Inf', symbol: 'triangle', symbolRotate: 180 });
  }
  return out;
}

/** The band as two stacked lines: the low edge, then (high − low) stacked on it. */
function envelopePairs(envelope: Envelope | null, log: boolean, floor: number): { low: Pair[]; high: Pair[] } {
  const low: Pair[] = [];
  const high: Pair[] = [];
  if (!envelope) return { low, high };
  for (let i = 0; i < envelope.x.length; i++) {
    let lo = envelope.lo[i]!;
    const hi = envelope.hi[i]!;
    if (log) {
      if (hi <= 0) continue;
      if (lo <= 0) lo = floor;
    }
    low.push([envelope.x[i]!, lo]);
    high.push([envelope.x[i]!, hi - lo]);
  }
  return { low, high };
}

/** Only one value to draw: no line can show it. */
function lonePoint(ys: readonly number[], log: boolean): boolean {
  let drawn = 0;
  for (const y of ys) if (!Number.isNaN(drawable(y, log)) && ++drawn > 1) return false;
  return drawn === 1;
}

/**
 * The series of every curve: raw, and those of smoothed, band and markers that
 * are drawn (`drawnLayers`). Drawing order comes from `z` (band under raw under
 * smoothed under markers); the raw line is listed first because the zoom slider
 * draws its data shadow from the first series.
 */
export function seriesOptions(model: ChartModel, layers: ChartLayers, withStyle: boolean): (LineSeriesOption | ScatterSeriesOption)[] {
  const log = model.settings.logY;
  const out: (LineSeriesOption | ScatterSeriesOption)[] = [];
  layers.series.forEach((s, index) => {
    const { id, name, color, data } = s.input;
    const ids = seriesIds(id);
    const drawn = drawnLayers(s);
    // the zoom slider draws its data shadow from the first line: that one stays whole
    const keep = index === 0 ? null : keptIndices(data.x, model.drawnRange ?? null);
    const raw = lineData(linePoints(data.x, data.y, log, keep));
    // markers given (even none) replace the marks drawn before; absent = the curve has no marker source
    const marks = s.input.markers === undefined ? {} : markerOptions(s.input.markers, log);
    // a line needs two points: a curve with a single value shows it as a dot
    const dots = lonePoint(data.y, log);
    const rawSymbols = { symbol: dots ? 'circle' : 'none', showSymbol: dots, symbolSize: 5 };
    const rawLine = { lineStyle: { color, width: RAW_LINE_WIDTH, opacity: layers.smoothingOn ? 0.3 : 1 }, ...rawSymbols, ...marks };
    const smooth = () => lineData(linePoints(data.x, s.smoothed!, log, keep));
    const band = () => envelopePairs(s.envelope, log, layers.yRange.min);
    const markers = () => markerItems(s, layers.yRange);
    if (!withStyle) {
      out.push({ id: ids.raw, type: 'line', dimensions: LINE_DIMENSIONS, data: raw, ...rawLine });
      if (drawn.smooth) out.push({ id: ids.smooth, type: 'line', dimensions: LINE_DIMENSIONS, data: smooth() });
      if (drawn.band) {
        const { low, high } = band();
        out.push({ id: ids.envelopeLow, type: 'line', data: low }, { id: ids.envelopeHigh, type: 'line', data: high });
      }
      if (drawn.markers) {
        const items = markers();
        out.push({ id: ids.nonFinite, type: 'scatter', data: items, large: items.length > 2000 });
      }
      return;
    }
    const line = {
      type: 'line' as const,
      name,
      color,
      showSymbol: false,
      symbol: 'none',
      // The bridge already downsampled exactly (M4): ECharts' own sampling would drop spikes.
      sampling: 'none' as const,
      progressive: 0,
      connectNulls: false,
      animation: false,
      emphasis: { disabled: true },
      z: 2,
    };
    out.push({ ...line, id: ids.raw, dimensions: LINE_DIMENSIONS, data: raw, ...rawLine });
    if (drawn.smooth) {
      out.push({ ...line, id: ids.smooth, dimensions: LINE_DIMENSIONS, data: smooth(), lineStyle: { color, width: 2 }, z: 3 });
    }
    if (drawn.band) {
      const { low, high } = band();
      const edge = { ...line, stack: `${id}|env`, stackStrategy: 'all' as const, lineStyle: { opacity: 0 }, silent: true, z: 1 };
      out.push(
        { ...edge, id: ids.envelopeLow, data: low },
        { ...edge, id: ids.envelopeHigh, data: high, areaStyle: { color, opacity: 0.14 } },
      );
    }
    if (drawn.markers) {
      const items = markers();
      out.push({
        id: ids.nonFinite,
        type: 'scatter',
        name,
        color,
        data: items,
        symbolSize: 8,
        large: items.length > 2000,
        largeThreshold: 2000,
        progressiveThreshold: 5000,
        animation: false,
        emphasis: { disabled: true },
        itemStyle: { color, opacity: 1 },
        z: 4,
      });
    }
  });
  return out;
}
