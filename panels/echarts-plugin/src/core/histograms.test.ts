import { describe, expect, it } from 'vitest';
import type { ApiHistogram } from '../types/api';
import { sampleHistogram } from '../testing/apiSamples';
import { histogramGrid, histogramHeatmapOption } from './histograms';
import { LIGHT_THEME } from './theme';

function hist(step: number, edges: (number | null)[], counts: number[]): ApiHistogram {
  return sampleHistogram({ step, time_ms: 1e12 + step, edges, counts });
}

const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('histogramGrid', () => {
  it('puts every step on the same bins and keeps each step’s total count', () => {
    const grid = histogramGrid([hist(10, [2, 3, 4], [5, 5]), hist(0, [0, 1, 2], [1, 3])], 4);
    expect(grid.steps).toEqual([0, 10]); // ordered by step
    expect(grid.edges).toEqual([0, 1, 2, 3, 4]);
    expect(grid.counts).toEqual([
      [1, 3, 0, 0],
      [0, 0, 5, 5],
    ]);
    expect(grid.maxCount).toBe(5);
  });

  it('spreads a wide bin over the common bins it covers, by overlap', () => {
    const grid = histogramGrid([hist(0, [0, 4], [8]), hist(1, [0, 1], [1])], 4);
    expect(grid.counts[0]).toEqual([2, 2, 2, 2]);
    expect(total(grid.counts[0]!)).toBe(8);
  });

  it('handles a histogram whose values were all equal', () => {
    const grid = histogramGrid([hist(0, [3, 3], [7])], 5);
    expect(grid.edges[0]).toBe(2.5);
    expect(grid.edges[5]).toBe(3.5);
    expect(total(grid.counts[0]!)).toBe(7);
  });

  it('skips observations it cannot place', () => {
    const grid = histogramGrid([hist(0, [null, 1], [1]), hist(1, [0, 1], [1, 2]), hist(2, [0, 1], [4])], 2);
    expect(grid.steps).toEqual([2]);
    expect(grid.skipped).toBe(2);
    expect(histogramGrid([]).steps).toEqual([]);
  });
});

describe('histogramHeatmapOption', () => {
  it('draws steps along x, bins up y and only the cells with counts', () => {
    const grid = histogramGrid([hist(0, [0, 1, 2], [1, 0]), hist(5, [0, 1, 2], [0, 2])], 2);
    const option = histogramHeatmapOption(grid, LIGHT_THEME, 'weights');
    expect((option.xAxis as { data: string[] }).data).toEqual(['0', '5']);
    expect((option.yAxis as { data: string[] }).data).toHaveLength(2);
    const series = (option.series as { type: string; data: number[][] }[])[0]!;
    expect(series.type).toBe('heatmap');
    expect(series.data).toEqual([
      [0, 0, 1],
      [1, 1, 2],
    ]);
    expect((option.visualMap as { max: number }).max).toBe(2);
    const formatter = (option.tooltip as { formatter: (p: unknown) => string }).formatter;
    expect(formatter({ value: [1, 1, 2] })).toContain('step 5');
  });
});
