import type { ComposeOption } from 'echarts/core';
import type { HeatmapSeriesOption } from 'echarts/charts';
import type {
  DataZoomComponentOption,
  GridComponentOption,
  TooltipComponentOption,
  VisualMapComponentOption,
} from 'echarts/components';
import type { ApiHistogram } from '../types/api';
import type { ChartTheme } from '../types/chart';
import { escapeHtml, formatAxisValue, formatStep, formatValue } from './format';
import { parseApiNumbers } from './numbers';

/**
 * Histograms over steps on one common set of bins: one column per logged
 * histogram, `counts[column][bin]`. Each step's own bins (they differ from
 * step to step) are spread onto the common ones by overlap.
 */
export interface HistogramGrid {
  steps: number[];
  timeMs: number[];
  /** Common bin edges, bins + 1 of them, ascending. */
  edges: number[];
  counts: number[][];
  maxCount: number;
  /** Observations left out: edges not finite, or not one more than counts. */
  skipped: number;
}

interface CleanHistogram {
  step: number;
  timeMs: number;
  edges: number[];
  counts: number[];
}

function clean(rows: readonly ApiHistogram[]): { kept: CleanHistogram[]; skipped: number } {
  const kept: CleanHistogram[] = [];
  let skipped = 0;
  for (const row of rows) {
    const edges = parseApiNumbers(row.edges ?? []);
    const counts = (row.counts ?? []).map(Number);
    const ok =
      counts.length > 0 &&
      edges.length === counts.length + 1 &&
      edges.every((e, i) => Number.isFinite(e) && (i === 0 || e >= edges[i - 1]!)) &&
      counts.every((c) => Number.isFinite(c) && c >= 0);
    if (ok) kept.push({ step: row.step, timeMs: row.time_ms, edges, counts });
    else skipped++;
  }
  kept.sort((a, b) => a.step - b.step || a.timeMs - b.timeMs);
  return { kept, skipped };
}

/** Spread one step's counts onto the common bins, in proportion to the overlap of each of its bins. */
function rebin(h: CleanHistogram, lo: number, width: number, bins: number): number[] {
  const out = new Array<number>(bins).fill(0);
  const binOf = (v: number) => Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / width)));
  for (let i = 0; i < h.counts.length; i++) {
    const c = h.counts[i]!;
    if (c === 0) continue;
    const a = h.edges[i]!;
    const b = h.edges[i + 1]!;
    if (!(b > a)) {
      out[binOf(a)]! += c;
      continue;
    }
    for (let t = binOf(a); t <= binOf(b); t++) {
      const overlap = Math.min(b, lo + (t + 1) * width) - Math.max(a, lo + t * width);
      if (overlap > 0) out[t]! += (c * overlap) / (b - a);
    }
  }
  return out;
}

export function histogramGrid(rows: readonly ApiHistogram[], bins = 48): HistogramGrid {
  const { kept, skipped } = clean(rows);
  const grid: HistogramGrid = { steps: [], timeMs: [], edges: [], counts: [], maxCount: 0, skipped };
  if (kept.length === 0) return grid;
  let lo = Infinity;
  let hi = -Infinity;
  for (const h of kept) {
    lo = Math.min(lo, h.edges[0]!);
    hi = Math.max(hi, h.edges[h.edges.length - 1]!);
  }
  if (!(hi > lo)) {
    // every value the same: one unit-wide range around it
    lo -= 0.5;
    hi += 0.5;
  }
  const n = Math.max(1, Math.floor(bins));
  const width = (hi - lo) / n;
  grid.edges = Array.from({ length: n + 1 }, (_, i) => (i === n ? hi : lo + i * width));
  for (const h of kept) {
    const counts = rebin(h, lo, width, n);
    grid.steps.push(h.step);
    grid.timeMs.push(h.timeMs);
    grid.counts.push(counts);
    for (const c of counts) if (c > grid.maxCount) grid.maxCount = c;
  }
  return grid;
}

export type HistogramChartOption = ComposeOption<
  HeatmapSeriesOption | GridComponentOption | TooltipComponentOption | VisualMapComponentOption | DataZoomComponentOption
>;

/**
 * A heatmap of a histogram grid: steps along x, values up y, colour = count.
 * Cells with no count are left empty.
 */
export function histogramHeatmapOption(grid: HistogramGrid, theme: ChartTheme, title = ''): HistogramChartOption {
  const data: [number, number, number][] = [];
  grid.counts.forEach((column, x) =>
    column.forEach((c, y) => {
      if (c > 0) data.push([x, y, c]);
    }),
  );
  const binLabel = (i: number) => formatAxisValue((grid.edges[i]! + grid.edges[i + 1]!) / 2);
  const dark = theme.name === 'dark';
  return {
    animation: false,
    backgroundColor: 'transparent',
    textStyle: { color: theme.text },
    grid: { left: 64, right: 70, top: 14, bottom: 58 },
    tooltip: {
      confine: true,
      backgroundColor: theme.tooltipBackground,
      borderColor: theme.tooltipBorder,
      textStyle: { color: theme.tooltipText, fontSize: 12 },
      formatter: ((params: { value?: [number, number, number] }) => {
        const [x, y, c] = params.value ?? [0, 0, 0];
        const range = `[${formatValue(grid.edges[y]!)}, ${formatValue(grid.edges[y + 1]!)})`;
        const head = title ? `<div class="cs-tt-title">${escapeHtml(title)}</div>` : '';
        return `${head}step ${escapeHtml(formatStep(grid.steps[x]!))}<br>${escapeHtml(range)}: ${escapeHtml(formatValue(c))}`;
      }) as TooltipComponentOption['formatter'],
    },
    xAxis: {
      type: 'category',
      data: grid.steps.map((s) => formatStep(s)),
      name: 'step',
      nameLocation: 'middle',
      nameGap: 26,
      axisLine: { lineStyle: { color: theme.axisLine } },
      axisLabel: { color: theme.mutedText, hideOverlap: true },
      splitArea: { show: false },
    },
    yAxis: {
      type: 'category',
      data: grid.counts.length ? grid.edges.slice(0, -1).map((_, i) => binLabel(i)) : [],
      axisLine: { lineStyle: { color: theme.axisLine } },
      // about eight labels: ECharts' own spacing of category labels overlaps on a y axis
      axisLabel: { color: theme.mutedText, interval: Math.max(0, Math.ceil((grid.edges.length - 1) / 8) - 1) },
      axisTick: { show: false },
    },
    visualMap: {
      type: 'continuous',
      min: 0,
      max: grid.maxCount > 0 ? grid.maxCount : 1,
      calculable: false,
      orient: 'vertical',
      right: 6,
      top: 'middle',
      itemHeight: 120,
      textStyle: { color: theme.mutedText, fontSize: 10 },
      inRange: { color: dark ? ['#1b2a3a', '#3b6fb6', '#f2b134', '#fff3c4'] : ['#eef4fb', '#74a9cf', '#0868ac', '#08306b'] },
    },
    dataZoom: [{ type: 'inside', xAxisIndex: 0 }],
    series: [{ type: 'heatmap', data, progressive: 0, emphasis: { disabled: true } }],
  };
}
