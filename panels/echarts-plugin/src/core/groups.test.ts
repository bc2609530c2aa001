import { describe, expect, it } from 'vitest';
import type { ApiRun } from '../types/api';
import { sampleRun } from '../testing/apiSamples';
import type { SeriesData } from '../types/chart';
import {
  aggregateBand,
  aggregateCurves,
  aggregateMeanSeries,
  configValueText,
  groupByConfigKey,
  groupRuns,
  groupValue,
} from './groups';

function curve(xs: number[], ys: number[]): SeriesData {
  return { x: xs, y: ys, step: xs.slice(), timeMs: xs.map((x) => 1e12 + x * 1000) };
}

function run(name: string, config: Record<string, unknown>, group = ''): ApiRun {
  return sampleRun({ project: 'p', run: name, state: 'finished', config, group });
}

describe('groupRuns', () => {
  const runs = [
    run('a', { lr: 0.1, opt: 'adam' }, 'sweep'),
    run('b', { lr: 0.01 }, 'sweep'),
    run('c', { lr: 0.1 }),
    run('d', { lr: 1e-3 }),
    run('e', {}),
  ];
  const refs = runs.map((r) => ({ project: r.project, run: r.run }));

  it('splits the selected runs by a config value, numbers in value order, runs without it last', () => {
    const groups = groupRuns(refs, runs, groupByConfigKey('lr'));
    expect(groups.map((g) => g.label)).toEqual(['lr=0.001', 'lr=0.01', 'lr=0.1', 'no lr']);
    expect(groups[2]!.members.map((m) => m.run)).toEqual(['a', 'c']);
    expect(new Set(groups.map((g) => g.id)).size).toBe(4);
  });

  it('groups by the run group, and only what is selected', () => {
    const groups = groupRuns(refs.slice(0, 3), runs, 'group');
    expect(groups.map((g) => [g.label, g.members.map((m) => m.run)])).toEqual([
      ['group=sweep', ['a', 'b']],
      ['no group', ['c']],
    ]);
  });

  it('reads values as text: strings as they are, the rest as JSON', () => {
    expect(groupValue(run('x', { opt: 'adam' }), groupByConfigKey('opt'))).toBe('adam');
    expect(groupValue(run('x', { layers: [1, 2] }), groupByConfigKey('layers'))).toBe('[1,2]');
    expect(groupValue(run('x', {}), groupByConfigKey('opt'))).toBeNull();
    expect(groupValue(undefined, 'group')).toBeNull();
    expect(configValueText(true)).toBe('true');
  });
});

describe('aggregateCurves', () => {
  it('gives mean, min, max and std where runs share their x', () => {
    const agg = aggregateCurves([curve([0, 1, 2], [1, 2, 3]), curve([0, 1, 2], [3, 4, 5])]);
    expect(agg.x).toEqual([0, 1, 2]);
    expect(agg.mean).toEqual([2, 3, 4]);
    expect(agg.min).toEqual([1, 2, 3]);
    expect(agg.max).toEqual([3, 4, 5]);
    expect(agg.std).toEqual([1, 1, 1]);
    expect(agg.count).toEqual([2, 2, 2]);
  });

  it('aligns runs logged at different x by interpolating between their own points', () => {
    // run b has points at 0 and 2 only: at x=1 it counts as the middle of its line
    const agg = aggregateCurves([curve([0, 1, 2], [0, 0, 0]), curve([0, 2], [10, 20])]);
    expect(agg.x).toEqual([0, 1, 2]);
    expect(agg.mean).toEqual([5, 7.5, 10]);
    expect(agg.max).toEqual([10, 15, 20]);
  });

  it('never extends a run past its last point', () => {
    const agg = aggregateCurves([curve([0, 1, 2, 3], [1, 1, 1, 1]), curve([0, 1], [3, 3])]);
    expect(agg.count).toEqual([2, 2, 1, 1]);
    expect(agg.mean).toEqual([2, 2, 1, 1]);
  });

  it('leaves non-finite values out of the statistics and counts them', () => {
    const agg = aggregateCurves([curve([0, 1, 2], [1, NaN, 3]), curve([0, 1, 2], [3, 5, Infinity])]);
    expect(agg.mean).toEqual([2, 5, 3]);
    expect(agg.count).toEqual([2, 1, 1]);
    expect(agg.nonFinite).toBe(2);
  });

  it('keeps a spike of one member in the min-max band', () => {
    const ys = Array.from({ length: 100 }, () => 1);
    const spiky = ys.slice();
    spiky[40] = 1000;
    const xs = ys.map((_, i) => i);
    const agg = aggregateCurves([curve(xs, ys), curve(xs, spiky), curve(xs, ys)]);
    const band = aggregateBand(agg, 'minmax');
    expect(Math.max(...band.hi)).toBe(1000);
    expect(Math.min(...band.lo)).toBe(1);
  });

  it('is exact for large values with a small spread', () => {
    const agg = aggregateCurves([curve([0], [1e9 + 1]), curve([0], [1e9 + 3])]);
    expect(agg.std[0]).toBe(1);
  });

  it('handles no members and empty members', () => {
    expect(aggregateCurves([]).x).toEqual([]);
    expect(aggregateCurves([curve([], [])]).x).toEqual([]);
  });
});

describe('aggregateBand and aggregateMeanSeries', () => {
  const agg = aggregateCurves([curve([0, 1], [1, 2]), curve([0, 1], [3, 6])]);

  it('draws min-max or mean ± std', () => {
    expect(aggregateBand(agg, 'minmax')).toEqual({ x: [0, 1], lo: [1, 2], hi: [3, 6] });
    expect(aggregateBand(agg, 'std')).toEqual({ x: [0, 1], lo: [1, 2], hi: [3, 6] });
    const three = aggregateCurves([curve([0], [0]), curve([0], [0]), curve([0], [3])]);
    const band = aggregateBand(three, 'std');
    expect(band.lo[0]).toBeCloseTo(1 - Math.sqrt(2));
    expect(band.hi[0]).toBeCloseTo(1 + Math.sqrt(2));
  });

  it('gives the mean as a curve with step and time', () => {
    const mean = aggregateMeanSeries(agg);
    expect(mean).toEqual({ x: [0, 1], y: [2, 4], step: [0, 1], timeMs: [1e12, 1e12 + 1000] });
  });
});
