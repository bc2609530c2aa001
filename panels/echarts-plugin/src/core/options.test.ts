import { describe, expect, it } from 'vitest';
import type { ChartModel, ChartSeriesInput, ChartSettings } from '../types/chart';
import { computeLayers } from './layers';
import { buildChartOption, buildDataUpdate, GRID, plotWidthPx, ZOOM_IDS, zoomWindowOption } from './options';
import { drawnSeriesIds, seriesIds } from './seriesOptions';
import { LIGHT_THEME } from './theme';

const settings: ChartSettings = {
  xMode: 'step',
  logY: false,
  ignoreOutliers: false,
  smoothing: 0,
  smoothingKind: 'ema',
  showEnvelope: true,
  theme: LIGHT_THEME,
};

function curve(id: string, ys: number[]): ChartSeriesInput {
  const x = ys.map((_, i) => i * 10);
  return { id, name: `run ${id}`, color: '#4e79a7', data: { x, y: ys, step: x, timeMs: x.map((v) => 1e12 + v) } };
}

function model(overrides: Partial<ChartModel> = {}, s: Partial<ChartSettings> = {}): ChartModel {
  return {
    series: [curve('a', [1, 2, NaN, 4, Infinity, -Infinity, 3]), curve('b', [0.5, 0.25, 0.125])],
    settings: { ...settings, ...s },
    widthPx: 600,
    title: 'train/loss',
    ...overrides,
  };
}

type AnySeries = { id: string; type: string; data: unknown[]; sampling?: string; [k: string]: unknown };

/** A line's points as [x, y] pairs (null: a gap), read from the typed array ECharts is given. */
function linePairs(series: AnySeries): [number, number | null][] {
  expect(series.data).toBeInstanceOf(Float64Array);
  expect(series.dimensions).toEqual(['x', 'y']);
  const flat = series.data as unknown as Float64Array;
  const out: [number, number | null][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number.isNaN(flat[i + 1]!) ? null : flat[i + 1]!]);
  return out;
}

function seriesById(option: ReturnType<typeof buildChartOption>, id: string): AnySeries {
  const list = option.series as AnySeries[];
  const found = list.find((s) => s.id === id);
  if (!found) throw new Error(`no series ${id}`);
  return found;
}

describe('plotWidthPx', () => {
  it('asks for the plot width in device pixels', () => {
    expect(plotWidthPx(600 + GRID.left + GRID.right, 2)).toBe(1200);
    expect(plotWidthPx(10, 1)).toBe(1);
    expect(plotWidthPx(1e6, 3)).toBe(20000);
    expect(plotWidthPx(400, NaN)).toBe(400 - GRID.left - GRID.right);
  });
});

describe('buildChartOption', () => {
  it('lists the raw line first, so the zoom slider shadows the data', () => {
    const option = buildChartOption(model());
    expect((option.series as AnySeries[])[0]!.id).toBe(seriesIds('a').raw);
  });

  it('shows the tooltip where the pointer moves, not on the wheel that zooms', () => {
    const tooltip = buildChartOption(model()).tooltip as { triggerOn?: string };
    expect(tooltip.triggerOn).toBe('mousemove');
  });

  it('draws lines without symbols and without ECharts sampling', () => {
    const option = buildChartOption(model());
    const raw = seriesById(option, seriesIds('a').raw);
    expect(raw.type).toBe('line');
    expect(raw.showSymbol).toBe(false);
    expect(raw.sampling).toBe('none');
    expect(option.animation).toBe(false);
  });

  it('shows a curve with a single value as a dot, and as a line once it has two', () => {
    const one = seriesById(buildChartOption(model({ series: [curve('a', [NaN, 3])] })), seriesIds('a').raw);
    expect([one.showSymbol, one.symbol]).toEqual([true, 'circle']);
    const two = seriesById(buildDataUpdate(model({ series: [curve('a', [2, 3])] })), seriesIds('a').raw);
    expect([two.showSymbol, two.symbol]).toEqual([false, 'none']);
  });

  it('gives every series of a run the run name, so the legend toggles them together', () => {
    const option = buildChartOption(model());
    const names = (option.series as AnySeries[]).filter((s) => s.id.startsWith('a|')).map((s) => s.name);
    expect(new Set(names)).toEqual(new Set(['run a']));
    expect((option.legend as { data: string[] }).data).toEqual(['run a', 'run b']);
  });

  it('leaves gaps for non-finite values and marks them at the plot edges', () => {
    const option = buildChartOption(model());
    const raw = linePairs(seriesById(option, seriesIds('a').raw));
    expect(raw).toHaveLength(7);
    expect(raw[0]).toEqual([0, 1]);
    expect(raw[2]).toEqual([20, null]);
    expect(raw[4]).toEqual([40, null]);
    const markers = seriesById(option, seriesIds('a').nonFinite).data as { value: [number, number]; name: string }[];
    const yAxis = option.yAxis as { min: number; max: number };
    expect(markers.map((m) => m.name)).toEqual(['NaN', '+Inf', '-Inf']);
    expect(markers[0]!.value).toEqual([20, yAxis.max]);
    expect(markers[1]!.value).toEqual([40, yAxis.max]);
    expect(markers[2]!.value).toEqual([50, yAxis.min]);
    expect(computeLayers(model()).notes[0]).toBe('NaN, +Inf and -Inf marked at the plot edge');
  });

  it('draws the raw line one pixel wide, smoothed or not (a hairline: cheap to rasterize in software)', () => {
    for (const smoothing of [0, 0.6]) {
      for (const withStyle of [true, false]) {
        const option = withStyle ? buildChartOption(model({}, { smoothing })) : buildDataUpdate(model({}, { smoothing }));
        expect((seriesById(option, seriesIds('a').raw).lineStyle as { width: number }).width).toBe(1);
      }
    }
  });

  it('draws the smoothed line over a faint raw line, with a min/max band', () => {
    const m = model({}, { smoothing: 0.6 });
    const option = buildChartOption(m);
    const ids = seriesIds('a');
    const raw = seriesById(option, ids.raw);
    const smooth = seriesById(option, ids.smooth);
    expect((raw.lineStyle as { opacity: number }).opacity).toBeLessThan(1);
    expect(linePairs(raw)).toHaveLength(7);
    expect(linePairs(smooth)).toHaveLength(7);
    expect(smooth.z as number).toBeGreaterThan(raw.z as number);
    const low = seriesById(option, ids.envelopeLow);
    const high = seriesById(option, ids.envelopeHigh);
    expect(low.stack).toBe(high.stack);
    expect(high.stackStrategy).toBe('all');
    expect(high.areaStyle).toBeDefined();
    const layers = computeLayers(m);
    expect(layers.envelopeOn).toBe(true);
    const lows = (low.data as [number, number][]).map((p) => p[1]);
    const tops = (high.data as [number, number][]).map((p, i) => p[1] + lows[i]!);
    expect(Math.max(...tops)).toBe(4);
    expect(Math.min(...lows)).toBe(1);
  });

  it('has no series for a band or a smoothed line when smoothing is off, nor for markers without non-finite values', () => {
    const ids = (buildChartOption(model()).series as AnySeries[]).map((s) => s.id);
    expect(ids).toEqual([seriesIds('a').raw, seriesIds('a').nonFinite, seriesIds('b').raw]);
    const smoothed = (buildChartOption(model({}, { smoothing: 0.6, showEnvelope: false })).series as AnySeries[]).map((s) => s.id);
    expect(smoothed).toEqual([seriesIds('a').raw, seriesIds('a').smooth, seriesIds('a').nonFinite, seriesIds('b').raw, seriesIds('b').smooth]);
  });

  it('uses the time-weighted EMA when asked', () => {
    const base = model({}, { smoothing: 0.9, smoothingKind: 'ema' });
    const timed = model({}, { smoothing: 0.9, smoothingKind: 'time' });
    timed.series[1]!.dxRef = 100; // coarse reference: much less smoothing
    const a = computeLayers(base).series[1]!.smoothed!;
    const b = computeLayers(timed).series[1]!.smoothed!;
    expect(b[2]).not.toBeCloseTo(a[2]!, 6);
  });

  it('hides values ≤ 0 on a log axis and says so', () => {
    const m = model({ series: [curve('a', [-1, 0, 1, 10, 100])] }, { logY: true });
    const option = buildChartOption(m);
    expect((option.yAxis as { type: string }).type).toBe('log');
    const raw = linePairs(seriesById(option, seriesIds('a').raw));
    expect(raw.slice(0, 2).map((p) => p[1])).toEqual([null, null]);
    expect((option.yAxis as { min: number }).min).toBeGreaterThan(0);
    expect(computeLayers(m).notes).toContain('2 values ≤ 0 hidden (log scale)');
  });

  it('keeps a spike out of the y range when outliers are ignored', () => {
    const ys = Array.from({ length: 500 }, (_, i) => 1 + (i % 5) * 0.01);
    ys[250] = 1000;
    const full = buildChartOption(model({ series: [curve('a', ys)] }));
    const robust = buildChartOption(model({ series: [curve('a', ys)] }, { ignoreOutliers: true }));
    expect((full.yAxis as { max: number }).max).toBeGreaterThan(1000);
    expect((robust.yAxis as { max: number }).max).toBeLessThan(2);
    // the spike is still in the data, only clipped by the axis
    expect(linePairs(seriesById(robust, seriesIds('a').raw))[250]![1]).toBe(1000);
  });

  it('fits the y range to the visible window', () => {
    const m = model({ series: [curve('a', [100, 100, 1, 2, 3])], xWindow: [20, 40] });
    const y = buildChartOption(m).yAxis as { min: number; max: number };
    expect(y.max).toBeLessThan(10);
  });

  it('sets the zoom from the window, in x units', () => {
    const option = buildChartOption(model({ xWindow: [10, 30] }));
    const zooms = option.dataZoom as { type: string; startValue?: number; endValue?: number; filterMode: string }[];
    expect(zooms.map((z) => z.type)).toEqual(['inside', 'slider']);
    expect(zooms[0]).toMatchObject({ startValue: 10, endValue: 30, filterMode: 'none' });
  });

  it('draws the zoom slider unless told not to, and gives its room back to the plot without it', () => {
    const withSlider = buildChartOption(model());
    const without = buildChartOption(model({ xWindow: [10, 30] }, { zoomSlider: false }));
    expect((withSlider.dataZoom as { id: string }[]).map((z) => z.id)).toEqual([ZOOM_IDS.inside, ZOOM_IDS.slider]);
    expect(without.dataZoom).toEqual([
      { id: ZOOM_IDS.inside, type: 'inside', xAxisIndex: 0, filterMode: 'none', startValue: 10, endValue: 30 },
    ]);
    expect((withSlider.grid as { bottom: number }).bottom).toBe(GRID.bottom);
    expect((without.grid as { bottom: number }).bottom).toBe(GRID.bottomNoSlider);
  });

  it('moves the zoom of only the zoom components the chart has', () => {
    expect(zoomWindowOption({}, [10, 30]).dataZoom).toEqual([
      { id: ZOOM_IDS.inside, startValue: 10, endValue: 30 },
      { id: ZOOM_IDS.slider, startValue: 10, endValue: 30 },
    ]);
    expect(zoomWindowOption({ zoomSlider: false }, null).dataZoom).toEqual([{ id: ZOOM_IDS.inside, start: 0, end: 100 }]);
  });

  it('writes times in the browser’s zone unless told another', () => {
    const at = Date.UTC(2025, 11, 2, 9, 30);
    const timeModel = (timeZone?: string) =>
      model(
        { series: [{ ...curve('a', [1, 2]), data: { x: [at, at + 1000], y: [1, 2], step: [7, 8], timeMs: [at, at + 1000] } }] },
        { xMode: 'time', ...(timeZone ? { timeZone } : {}) },
      );
    const tooltipAt = (option: ReturnType<typeof buildChartOption>) =>
      (option.tooltip as { formatter: (p: unknown) => string }).formatter([{ axisValue: at }]);
    const labelOf = (option: ReturnType<typeof buildChartOption>) =>
      (option.xAxis as { axisLabel: { formatter?: (v: number) => string } }).axisLabel.formatter;

    const browser = buildChartOption(timeModel());
    expect(browser.useUTC).toBe(false);
    expect(labelOf(browser)).toBeUndefined(); // ECharts' own local-time labels

    const utc = buildChartOption(timeModel('utc'));
    expect(utc.useUTC).toBe(true);
    expect(labelOf(utc)).toBeUndefined(); // ECharts' own labels, in UTC
    expect(tooltipAt(utc)).toContain('2025-12-02 09:30:00');
    expect(tooltipAt(buildDataUpdate(timeModel('utc')) as ReturnType<typeof buildChartOption>)).toContain('step 7 · 2025-12-02 09:30:00');

    const kolkata = buildChartOption(timeModel('Asia/Kolkata'));
    expect(kolkata.useUTC).toBe(true); // ticks on UTC boundaries, labels on the zone's clock
    expect(labelOf(kolkata)!(at)).toBe('15:00');
    expect(tooltipAt(kolkata)).toContain('2025-12-02 15:00:00');
  });

  it('picks the x axis type from the x mode', () => {
    expect((buildChartOption(model({}, { xMode: 'time' })).xAxis as { type: string }).type).toBe('time');
    const rel = buildChartOption(model({}, { xMode: 'relative' })).xAxis as {
      type: string;
      axisLabel: { formatter: (v: number) => string };
    };
    expect(rel.type).toBe('value');
    expect(rel.axisLabel.formatter(90)).toBe('1m 30s');
  });

  it('shows every curve in the tooltip, sorted by value', () => {
    const option = buildChartOption(model());
    const formatter = (option.tooltip as { formatter: (p: unknown) => string }).formatter;
    const html = formatter([{ axisValue: 10 }]);
    expect(html).toContain('train/loss');
    expect(html.indexOf('run a')).toBeLessThan(html.indexOf('run b'));
  });
});

describe('a precomputed band (a group of runs)', () => {
  const band = { x: [0, 10, 20], lo: [0, 1, -5], hi: [2, 3, 50] };

  it('is drawn with smoothing off, in place of the min/max envelope, and widens the y range', () => {
    const m = model({ series: [{ ...curve('g', [1, 2, 3]), band }] });
    const option = buildChartOption(m);
    const ids = seriesIds('g');
    const lows = (seriesById(option, ids.envelopeLow).data as [number, number][]).map((p) => p[1]);
    const tops = (seriesById(option, ids.envelopeHigh).data as [number, number][]).map((p, i) => p[1] + lows[i]!);
    expect(lows).toEqual([0, 1, -5]);
    expect(tops).toEqual([2, 3, 50]);
    expect(computeLayers(m).envelopeOn).toBe(true);
    const y = option.yAxis as { min: number; max: number };
    expect(y.min).toBeLessThanOrEqual(-5);
    expect(y.max).toBeGreaterThanOrEqual(50);
  });

  it('stays the band when smoothing is on', () => {
    const m = model({ series: [{ ...curve('g', [1, 2, 3]), band }] }, { smoothing: 0.5 });
    const lows = (seriesById(buildChartOption(m), seriesIds('g').envelopeLow).data as [number, number][]).map((p) => p[1]);
    expect(lows).toEqual([0, 1, -5]);
  });
});

describe('markers', () => {
  const markers = [{ x: 20, y: 3, kind: 'spike' as const, label: 'spike', detail: 'spike at step 20' }];

  it('are drawn on the raw line, in the full option and in data updates', () => {
    const m = model({ series: [{ ...curve('a', [1, 2, 3]), markers }] });
    for (const option of [buildChartOption(m), buildDataUpdate(m)]) {
      const raw = seriesById(option, seriesIds('a').raw) as AnySeries & { markLine: { data: { xAxis: number }[] } };
      expect(raw.markLine.data.map((d) => d.xAxis)).toEqual([20]);
    }
  });

  it('are left alone for curves without a marker source', () => {
    expect(seriesById(buildChartOption(model()), seriesIds('a').raw).markLine).toBeUndefined();
  });
});

describe('buildDataUpdate', () => {
  it('sets the x bounds the model gives, the data\'s when it gives null', () => {
    expect(buildDataUpdate({ ...model(), xExtent: [-0.5, 99.5] }).xAxis).toEqual({ min: -0.5, max: 99.5 });
    expect(buildDataUpdate({ ...model(), xExtent: null }).xAxis).toEqual({ min: 'dataMin', max: 'dataMax' });
    expect(buildChartOption({ ...model(), xExtent: [-0.5, 99.5] }).xAxis).toMatchObject({ min: -0.5, max: 99.5 });
  });

  it('carries only data, y bounds and the tooltip: no zoom, no axes types', () => {
    const update = buildDataUpdate(model());
    expect(Object.keys(update).sort()).toEqual(['series', 'tooltip', 'yAxis']);
    const ids = (update.series as AnySeries[]).map((s) => s.id);
    expect(ids).toEqual([seriesIds('a').raw, seriesIds('a').nonFinite, seriesIds('b').raw]);
    for (const s of update.series as AnySeries[]) {
      expect(s.name).toBeUndefined();
      expect(s.stack).toBeUndefined();
    }
  });

  it('addresses the same series ids as the full option, and drawnSeriesIds names them', () => {
    for (const s of [{}, { smoothing: 0.6 }, { smoothing: 0.6, showEnvelope: false }]) {
      const m = model({}, s);
      const full = (buildChartOption(m).series as AnySeries[]).map((x) => x.id);
      const data = (buildDataUpdate(m).series as AnySeries[]).map((x) => x.id);
      expect(data).toEqual(full);
      expect(drawnSeriesIds(computeLayers(m))).toEqual(full);
    }
  });
});
