import { describe, expect, it } from 'vitest';
import { summarizeSeries } from './drawnSeries';

describe('summarizeSeries', () => {
  it('counts each series’ points, its line opacity, band area, mark lines and mark areas', () => {
    const drawn = summarizeSeries({
      series: [
        { id: 'a|raw', type: 'line', name: 'a', data: [[0, 1], [1, null], [2, 3]], lineStyle: { opacity: 0.3 }, markLine: { data: [{}, {}] }, markArea: { data: [[{}, {}]] } },
        { id: 'a|env-hi', type: 'line', name: 'a', data: [], areaStyle: { opacity: 0.14 } },
      ],
    });
    expect(drawn).toEqual([
      { id: 'a|raw', type: 'line', name: 'a', points: 3, lineOpacity: 0.3, area: false, markLines: 2, markAreas: 1 },
      { id: 'a|env-hi', type: 'line', name: 'a', points: 0, lineOpacity: null, area: true, markLines: 0, markAreas: 0 },
    ]);
  });

  it('counts the points of a line given as x, y, x, y … in a typed array by its dimensions', () => {
    const [line] = summarizeSeries({
      series: [{ id: 'a|raw', type: 'line', dimensions: ['x', 'y'], data: new Float64Array([0, 1, 1, NaN, 2, 3]) }],
    });
    expect(line!.points).toBe(3);
  });

  it('reads a chart without an option as no series, and fills what a series leaves out', () => {
    expect(summarizeSeries(undefined)).toEqual([]);
    expect(summarizeSeries({})).toEqual([]);
    expect(summarizeSeries({ series: [{}] })).toEqual([
      { id: '', type: '', name: '', points: 0, lineOpacity: null, area: false, markLines: 0, markAreas: 0 },
    ]);
  });
});
