import type { ComposeOption } from 'echarts/core';
import type { LineSeriesOption, ScatterSeriesOption } from 'echarts/charts';
import type {
  DataZoomComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from 'echarts/components';
import type { XMode } from '../types/api';
import type { ChartModel, ChartSeriesInput, ChartSettings, ChartTheme, TimeZone } from '../types/chart';
import { markerOptions } from './alerts';
import { envelopeBucketsFor, minMaxEnvelope, type Envelope } from './envelope';
import { formatAxisTime, formatAxisValue, formatCompact, formatDuration } from './format';
import { extentOf, rangeIndices } from './series';
import { clampSmoothing, emaTensorBoard, emaTimeWeighted } from './smoothing';
import { formatTooltipHtml, tooltipRows } from './tooltip';
import { computeYRange, type YRange } from './yRange';

export type CurveChartOption = ComposeOption<
  | LineSeriesOption
  | ScatterSeriesOption
  | GridComponentOption
  | TooltipComponentOption
  | DataZoomComponentOption
  | LegendComponentOption
>;

/** Plot margins in CSS pixels: hosts use them to know the plot's width. */
export const GRID = { left: 60, right: 18, top: 34, topNoLegend: 14, bottom: 62, bottomNoSlider: 28 } as const;

/** The ids of the zoom components: a full option with or without the slider keeps the wheel zoom's state. */
export const ZOOM_IDS = { inside: 'zoom-inside', slider: 'zoom-slider' } as const;

/** The `width` to ask the bridge for: the plot's width in device pixels, within 1..20000. */
export function plotWidthPx(containerWidthCss: number, devicePixelRatio: number): number {
  const css = Math.max(1, containerWidthCss - GRID.left - GRID.right);
  const dpr = devicePixelRatio > 0 && Number.isFinite(devicePixelRatio) ? devicePixelRatio : 1;
  return Math.min(20000, Math.max(1, Math.round(css * dpr)));
}

/** The ECharts series ids drawn for one curve. */
export function seriesIds(id: string) {
  return {
    raw: `${id}|raw`,
    smooth: `${id}|smooth`,
    envelopeLow: `${id}|env-lo`,
    envelopeHigh: `${id}|env-hi`,
    nonFinite: `${id}|non-finite`,
  };
}

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

type Pair = [number, number | null];

/** A value as ECharts should draw it: null (a gap) for non-finite values and, on log, for values ≤ 0. */
function drawable(y: number, log: boolean): number | null {
  if (!Number.isFinite(y)) return null;
  if (log && y <= 0) return null;
  return y;
}

function linePairs(xs: readonly number[], ys: readonly number[], log: boolean): Pair[] {
  const out = new Array<Pair>(xs.length);
  for (let i = 0; i < xs.length; i++) out[i] = [xs[i]!, drawable(ys[i]!, log)];
  return out;
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
function lonePoint(pairs: readonly Pair[]): boolean {
  let drawn = 0;
  for (const [, y] of pairs) if (y !== null && ++drawn > 1) return false;
  return drawn === 1;
}

function xSpan(model: ChartModel): number {
  if (model.xWindow) return model.xWindow[1] - model.xWindow[0];
  const extent = extentOf(model.series.map((s) => s.data.x));
  return extent ? extent[1] - extent[0] : 0;
}

/** The tooltip formatter for the current data: every curve's nearest point at the hovered x. */
export function tooltipFormatter(model: ChartModel, layers: ChartLayers): (params: unknown) => string {
  const curves = layers.series.map((s) => ({
    id: s.input.id,
    name: s.input.name,
    color: s.input.color,
    data: s.input.data,
    smoothed: s.smoothed,
  }));
  const tolerance = xSpan(model) * 0.01;
  const options = {
    xMode: model.settings.xMode,
    smoothing: layers.smoothingOn,
    timeZone: model.settings.timeZone ?? 'browser',
    ...(model.title === undefined ? {} : { title: model.title }),
  };
  return (params: unknown) => {
    const first = (Array.isArray(params) ? params[0] : params) as { axisValue?: unknown } | undefined;
    const x = Number(first?.axisValue);
    if (!Number.isFinite(x)) return '';
    return formatTooltipHtml(x, tooltipRows(curves, x, tolerance), options);
  };
}

function xAxisOption(mode: XMode, theme: ChartTheme, zone: TimeZone): NonNullable<CurveChartOption['xAxis']> {
  const common = {
    min: 'dataMin' as const,
    max: 'dataMax' as const,
    axisLine: { lineStyle: { color: theme.axisLine } },
    axisTick: { lineStyle: { color: theme.axisLine } },
    splitLine: { show: true, lineStyle: { color: theme.splitLine } },
    axisLabel: { color: theme.mutedText, hideOverlap: true, showMinLabel: false, showMaxLabel: false },
  };
  if (mode === 'time') {
    // ECharts writes its own labels in local time or (useUTC) in UTC; another zone's labels are ours
    if (zone === 'browser' || zone === 'utc') return { ...common, type: 'time' };
    return { ...common, type: 'time', axisLabel: { ...common.axisLabel, formatter: (v: number) => formatAxisTime(v, zone) } };
  }
  const formatter = mode === 'relative' ? formatDuration : formatCompact;
  return { ...common, type: 'value', axisLabel: { ...common.axisLabel, formatter: (v: number) => formatter(v) } };
}

function yAxisOption(model: ChartModel, layers: ChartLayers): NonNullable<CurveChartOption['yAxis']> {
  const { theme, logY } = model.settings;
  return {
    type: logY ? 'log' : 'value',
    min: layers.yRange.min,
    max: layers.yRange.max,
    scale: true,
    axisLine: { show: false },
    splitLine: { lineStyle: { color: theme.splitLine } },
    axisLabel: {
      color: theme.mutedText,
      formatter: (v: number) => formatAxisValue(v),
      showMinLabel: false,
      showMaxLabel: false,
    },
  };
}

/**
 * The series of every curve: raw, smoothed, band, markers. Drawing order comes
 * from `z` (band under raw under smoothed under markers); the raw line is
 * listed first because the zoom slider draws its data shadow from the first series.
 */
function seriesOptions(model: ChartModel, layers: ChartLayers, withStyle: boolean): (LineSeriesOption | ScatterSeriesOption)[] {
  const log = model.settings.logY;
  const out: (LineSeriesOption | ScatterSeriesOption)[] = [];
  for (const s of layers.series) {
    const { id, name, color, data } = s.input;
    const ids = seriesIds(id);
    const band = envelopePairs(s.envelope, log, layers.yRange.min);
    const markers = markerItems(s, layers.yRange);
    const smooth = s.smoothed ? linePairs(data.x, s.smoothed, log) : [];
    const raw = linePairs(data.x, data.y, log);
    // markers given (even none) replace the marks drawn before; absent = the curve has no marker source
    const marks = s.input.markers === undefined ? {} : markerOptions(s.input.markers, log);
    // a line needs two points: a curve with a single value shows it as a dot
    const dots = lonePoint(raw);
    const rawSymbols = { symbol: dots ? 'circle' : 'none', showSymbol: dots, symbolSize: 5 };
    if (!withStyle) {
      out.push(
        {
          id: ids.raw,
          type: 'line',
          data: raw,
          lineStyle: { color, width: layers.smoothingOn ? 1 : 1.5, opacity: layers.smoothingOn ? 0.3 : 1 },
          ...rawSymbols,
          ...marks,
        },
        { id: ids.smooth, type: 'line', data: smooth },
        { id: ids.envelopeLow, type: 'line', data: band.low },
        { id: ids.envelopeHigh, type: 'line', data: band.high },
        { id: ids.nonFinite, type: 'scatter', data: markers, large: markers.length > 2000 },
      );
      continue;
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
    out.push(
      {
        ...line,
        id: ids.raw,
        data: raw,
        lineStyle: { color, width: layers.smoothingOn ? 1 : 1.5, opacity: layers.smoothingOn ? 0.3 : 1 },
        ...rawSymbols,
        ...marks,
      },
      { ...line, id: ids.smooth, data: smooth, lineStyle: { color, width: 2 }, z: 3 },
      {
        ...line,
        id: ids.envelopeLow,
        data: band.low,
        stack: `${id}|env`,
        stackStrategy: 'all',
        lineStyle: { opacity: 0 },
        silent: true,
        z: 1,
      },
      {
        ...line,
        id: ids.envelopeHigh,
        data: band.high,
        stack: `${id}|env`,
        stackStrategy: 'all',
        lineStyle: { opacity: 0 },
        areaStyle: { color, opacity: 0.14 },
        silent: true,
        z: 1,
      },
      {
        id: ids.nonFinite,
        type: 'scatter',
        name,
        color,
        data: markers,
        symbolSize: 8,
        large: markers.length > 2000,
        largeThreshold: 2000,
        progressiveThreshold: 5000,
        animation: false,
        emphasis: { disabled: true },
        itemStyle: { color, opacity: 1 },
        z: 4,
      },
    );
  }
  return out;
}

function tooltipOption(model: ChartModel, layers: ChartLayers): TooltipComponentOption {
  const { theme } = model.settings;
  return {
    trigger: 'axis',
    axisPointer: { type: 'line', snap: false, lineStyle: { color: theme.mutedText, width: 1 } },
    confine: true,
    transitionDuration: 0,
    backgroundColor: theme.tooltipBackground,
    borderColor: theme.tooltipBorder,
    textStyle: { color: theme.tooltipText, fontSize: 12 },
    extraCssText: 'max-width:520px;box-shadow:0 4px 14px rgba(0,0,0,.18);',
    formatter: tooltipFormatter(model, layers) as TooltipComponentOption['formatter'],
  };
}

function legendNames(model: ChartModel): string[] {
  return [...new Set(model.series.map((s) => s.name))];
}

function zoomRange(window: [number, number] | null | undefined) {
  return window ? { startValue: window[0], endValue: window[1] } : { start: 0, end: 100 };
}

function zoomOptions(settings: ChartSettings, window: [number, number] | null | undefined): DataZoomComponentOption[] {
  const { theme } = settings;
  const range = zoomRange(window);
  const inside: DataZoomComponentOption = { id: ZOOM_IDS.inside, type: 'inside', xAxisIndex: 0, filterMode: 'none', ...range };
  if (settings.zoomSlider === false) return [inside];
  return [
    inside,
    {
      id: ZOOM_IDS.slider,
      type: 'slider',
      xAxisIndex: 0,
      filterMode: 'none',
      height: 18,
      bottom: 10,
      left: GRID.left,
      right: GRID.right,
      showDetail: false,
      brushSelect: false,
      borderColor: theme.axisLine,
      fillerColor: theme.sliderFill,
      dataBackground: { lineStyle: { color: theme.mutedText, opacity: 0.5 }, areaStyle: { opacity: 0 } },
      textStyle: { color: theme.mutedText },
      ...range,
    },
  ];
}

/**
 * Show a window (null: everything) on a chart drawn from `settings`: merge
 * it with `setOption`. Only the zoom components the chart has are named.
 */
export function zoomWindowOption(settings: Pick<ChartSettings, 'zoomSlider'>, window: [number, number] | null): CurveChartOption {
  const range = zoomRange(window);
  const ids = settings.zoomSlider === false ? [ZOOM_IDS.inside] : [ZOOM_IDS.inside, ZOOM_IDS.slider];
  return { dataZoom: ids.map((id) => ({ id, ...range })) };
}

/**
 * The full option of a chart: axes, zoom, legend, tooltip and every curve's
 * series (min/max band, faint raw line, smoothed line, non-finite markers).
 * Set it once per structure change (runs, axis mode, settings), merged with
 * `replaceMerge: ['series', 'dataZoom']` (the slider may come or go), so the
 * chart keeps its zoom; later data goes through `buildDataUpdate`.
 */
export function buildChartOption(model: ChartModel, layers: ChartLayers = computeLayers(model)): CurveChartOption {
  const { settings } = model;
  const { theme } = settings;
  const zone = settings.timeZone ?? 'browser';
  const names = legendNames(model);
  const showLegend = names.length > 1;
  return {
    animation: false,
    // ECharts' time axis places its ticks (and writes its own labels) in UTC or in local time
    useUTC: zone !== 'browser',
    backgroundColor: 'transparent',
    textStyle: { color: theme.text },
    grid: {
      left: GRID.left,
      right: GRID.right,
      top: showLegend ? GRID.top : GRID.topNoLegend,
      bottom: settings.zoomSlider === false ? GRID.bottomNoSlider : GRID.bottom,
    },
    legend: {
      show: showLegend,
      type: 'scroll',
      data: names,
      top: 4,
      left: GRID.left,
      right: GRID.right,
      icon: 'roundRect',
      itemWidth: 14,
      itemHeight: 4,
      textStyle: { color: theme.mutedText, fontSize: 11 },
      pageTextStyle: { color: theme.mutedText },
    },
    tooltip: tooltipOption(model, layers),
    xAxis: xAxisOption(settings.xMode, theme, zone),
    yAxis: yAxisOption(model, layers),
    dataZoom: zoomOptions(settings, model.xWindow),
    series: seriesOptions(model, layers, true),
  };
}

/**
 * Only what new data changes: each series' data, the y bounds and the
 * tooltip's view of the data. Merge it with `setOption` (no `notMerge`): the
 * chart is not rebuilt and keeps its zoom.
 */
export function buildDataUpdate(model: ChartModel, layers: ChartLayers = computeLayers(model)): CurveChartOption {
  return {
    yAxis: { min: layers.yRange.min, max: layers.yRange.max },
    tooltip: { formatter: tooltipFormatter(model, layers) as TooltipComponentOption['formatter'] },
    series: seriesOptions(model, layers, false),
  };
}
