/** The chart's ECharts options: axes, zoom, legend, tooltip around the series of seriesOptions.ts. */
import type { ComposeOption } from 'echarts/core';
import type { LineSeriesOption, ScatterSeriesOption } from 'echarts/charts';
import type {
  DataZoomComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from 'echarts/components';
import type { XMode } from '../types/api';
import type { ChartModel, ChartSettings, ChartTheme, TimeZone } from '../types/chart';
import { formatAxisTime, formatAxisValue, formatCompact, formatDuration } from './format';
import { computeLayers, type ChartLayers } from './layers';
import { extentOf } from './series';
import { seriesOptions } from './seriesOptions';
import { formatTooltipHtml, tooltipRows } from './tooltip';

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

/** The x axis's bounds: the model's extent, else the data's. */
function xBounds(model: ChartModel) {
  return { min: model.xExtent?.[0] ?? ('dataMin' as const), max: model.xExtent?.[1] ?? ('dataMax' as const) };
}

function xAxisOption(
  model: ChartModel,
  mode: XMode,
  theme: ChartTheme,
  zone: TimeZone,
): NonNullable<CurveChartOption['xAxis']> {
  const common = {
    ...xBounds(model),
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

function tooltipOption(model: ChartModel, layers: ChartLayers): TooltipComponentOption {
  const { theme } = model.settings;
  return {
    trigger: 'axis',
    // not on the wheel nor a click (ECharts' default: all three): a wheel zooms, and the values under the pointer
    // change with the window, so the tooltip goes with a zoom until the pointer moves again (a tap moves it)
    triggerOn: 'mousemove',
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
  const showLegend = model.legend !== false && names.length > 1;
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
    xAxis: xAxisOption(model, settings.xMode, theme, zone),
    yAxis: yAxisOption(model, layers),
    dataZoom: zoomOptions(settings, model.xWindow),
    series: seriesOptions(model, layers, true),
  };
}

/**
 * Only what new data changes: each series' data, the y bounds (and the x
 * bounds when the model sets them) and the tooltip's view of the data. Merge it with `setOption` (no `notMerge`): the
 * chart is not rebuilt and keeps its zoom.
 */
export function buildDataUpdate(model: ChartModel, layers: ChartLayers = computeLayers(model)): CurveChartOption {
  return {
    // a host that sets the x extent (null: the data's) sets it with every drawing
    ...(model.xExtent !== undefined ? { xAxis: xBounds(model) } : {}),
    yAxis: { min: layers.yRange.min, max: layers.yRange.max },
    tooltip: { formatter: tooltipFormatter(model, layers) as TooltipComponentOption['formatter'] },
    series: seriesOptions(model, layers, false),
  };
}
