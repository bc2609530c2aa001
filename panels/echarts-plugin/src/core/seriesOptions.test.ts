import { describe, expect, it } from 'vitest';
import type { ChartModel, ChartSeriesInput } from '../types/chart';
import { computeLayers } from './layers';
import { seriesIds, seriesOptions } from './seriesOptions';
import { LIGHT_THEME } from './theme';

function curve(id: string, n: number): ChartSeriesInput {
  const x = Array.from({ length: n }, (_, i) => i);
  return { id, name: id, color: '#4e79a7', data: { x, y: x.map((v) => v * 2), step: x, timeMs: x } };
}

function model(drawnRange: [number, number] | null, smoothing = 0): ChartModel {
  return {
    series: [curve('a', 100), curve('b', 100)],
    settings: { xMode: 'step', logY: false, ignoreOutliers: false, showEnvelope: false, smoothing, smoothingKind: 'ema', theme: LIGHT_THEME },
    widthPx: 600,
    xWindow: drawnRange && [drawnRange[0] + 10, drawnRange[1] - 10],
    drawnRange,
  };
}

/** A line's x values, read from the x, y, x, y … array ECharts is given. */
function xsOf(m: ChartModel, id: string): number[] {
  const series = seriesOptions(m, computeLayers(m), true).find((s) => s.id === id)!;
  const flat = series.data as unknown as Float64Array;
  return Array.from({ length: flat.length / 2 }, (_, i) => flat[2 * i]!);
}

describe('seriesOptions with a drawn range', () => {
  it('gives ECharts the ends and the range of a line, with a neighbour past each edge', () => {
    expect(xsOf(model([40.5, 60.5]), seriesIds('b').raw)).toEqual([0, ...Array.from({ length: 22 }, (_, i) => 40 + i), 99]);
  });

  it('keeps the first line whole: the zoom slider draws its shadow from it', () => {
    expect(xsOf(model([40.5, 60.5]), seriesIds('a').raw)).toHaveLength(100);
  });

  it('trims the smoothed line as the raw one', () => {
    const m = model([40.5, 60.5], 0.6);
    expect(xsOf(m, seriesIds('b').smooth)).toEqual(xsOf(m, seriesIds('b').raw));
  });

  it('draws whole lines without a range', () => {
    expect(xsOf(model(null), seriesIds('b').raw)).toHaveLength(100);
  });
});
