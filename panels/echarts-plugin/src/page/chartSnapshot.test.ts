import { describe, expect, it } from 'vitest';
import type { ApiGroup, ApiGroups } from '../types/api';
import { groupId } from './chartModel';
import { cardSummary, curveSnapshot, groupSnapshots } from './chartSnapshot';
import { newCurve, type Curve } from './curveLoading';

const series = (xs: number[], ys: number[] = xs) => ({ x: xs, y: ys, step: xs, timeMs: xs });

function curve(run: string, xs: number[], ys?: number[], raw = true): Curve {
  const c = newCurve({ ref: { project: 'p', run }, id: run, name: run, color: '#000', originMs: null });
  c.overview = series(xs, ys);
  c.overviewRaw = raw;
  c.loaded = true;
  return c;
}

describe('cardSummary', () => {
  it('counts each curve’s points in the visible range and calls the chart raw only when every curve is', () => {
    const a = curve('a', [0, 1, 2, 3, 4]);
    const b = curve('b', [0, 2, 4], undefined, false);
    expect(cardSummary([a, b], null, null, [1, 3])).toEqual({ points: { a: 3, b: 1 }, total: 4, raw: false, groups: null });
    expect(cardSummary([a], null, null, null)).toEqual({ points: { a: 5 }, total: 5, raw: true, groups: null });
    expect(cardSummary([], null, null, null).raw).toBe(false);
  });

  it('counts each group’s mean points and gives the number of runs of each group when grouping', () => {
    const drawn = [{ id: groupId('config:lr', '1'), name: 'lr=1 (2 runs)', color: '#000', data: series([0, 1, 2]) }];
    const summary = cardSummary([], drawn, answer([group('1', ['a', 'b']), group('2', [])]), [1, 2]);
    expect(summary).toEqual({ points: { 'lr=1 (2 runs)': 2 }, total: 2, raw: false, groups: { 'lr=1 (2 runs)': 2 } });
  });
});

describe('curveSnapshot', () => {
  it('reads the finite y range inside the visible x range only', () => {
    const c = curve('a', [0, 1, 2, 3], [100, Number.NaN, 5, -7]);
    expect(curveSnapshot(c, [1, 2])).toMatchObject({ points: 2, drawn: 4, yMin: 5, yMax: 5, raw: true });
    expect(curveSnapshot(c, null)).toMatchObject({ points: 4, yMin: -7, yMax: 100 });
  });
});

function group(value: string, runs: string[]): ApiGroup {
  return {
    value,
    label: `lr=${value}`,
    runs: runs.map((run) => ({ project: 'p', run })),
    non_finite: 0,
    columns: { column: [], x: [], step: [], time_ms: [], mean: [], std: [], min: [], max: [], count: [] },
  };
}

function answer(groups: ApiGroup[]): ApiGroups {
  return { key: 'loss', x: 'step', group_by: 'config:lr', start: 0, end: 2, width: 3, groups };
}

describe('groupSnapshots', () => {
  it('reads the mean line and band the last drawing held, with the group’s runs by name', () => {
    const id = groupId('config:lr', '1');
    const drawn = [{ id, name: 'lr=1 (2 runs)', color: '#000', data: series([0, 1, 2], [1, 2, 3]), band: { x: [0, 1, 2], lo: [0, 1, 2], hi: [2, 3, 9] } }];
    expect(groupSnapshots(answer([group('1', ['run a', 'x'])]), 'minmax', drawn, [0, 1])).toEqual([
      { name: 'lr=1 (2 runs)', runs: ['run a', 'x'], points: 2, yMin: 1, yMax: 2, band: 'minmax', bandMin: 0, bandMax: 3 },
    ]);
    expect(groupSnapshots(answer([group('1', ['a'])]), 'std', [], null)).toEqual([]);
  });
});
