import { describe, expect, it } from 'vitest';
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
    expect(cardSummary([a, b], null, [1, 3])).toEqual({ points: { a: 3, b: 1 }, total: 4, raw: false, groups: null });
    expect(cardSummary([a], null, null)).toEqual({ points: { a: 5 }, total: 5, raw: true, groups: null });
    expect(cardSummary([], null, null).raw).toBe(false);
  });

  it('gives the number of runs of each group when grouping', () => {
    const groups = [{ id: 'g', name: 'lr=1 (2 runs)', color: '#000', memberIds: ['a', 'b'] }];
    expect(cardSummary([curve('a', [1]), curve('b', [1])], groups, null).groups).toEqual({ 'lr=1 (2 runs)': 2 });
  });
});

describe('curveSnapshot', () => {
  it('reads the finite y range inside the visible x range only', () => {
    const c = curve('a', [0, 1, 2, 3], [100, Number.NaN, 5, -7]);
    expect(curveSnapshot(c, [1, 2])).toMatchObject({ points: 2, drawn: 4, yMin: 5, yMax: 5, raw: true });
    expect(curveSnapshot(c, null)).toMatchObject({ points: 4, yMin: -7, yMax: 100 });
  });
});

describe('groupSnapshots', () => {
  it('reads the mean line and band the last drawing held, with the member runs by name', () => {
    const groups = [{ id: 'g', name: 'lr=1', color: '#000', memberIds: ['a', 'x'] }];
    const drawn = [{ id: 'g', name: 'lr=1', color: '#000', data: series([0, 1, 2], [1, 2, 3]), band: { x: [0, 1, 2], lo: [0, 1, 2], hi: [2, 3, 9] } }];
    const names = (id: string) => (id === 'a' ? 'run a' : id);
    expect(groupSnapshots(groups, 'minmax', drawn, names, [0, 1])).toEqual([
      { name: 'lr=1', runs: ['run a', 'x'], points: 2, yMin: 1, yMax: 2, band: 'minmax', bandMin: 0, bandMax: 3 },
    ]);
    expect(groupSnapshots(groups, 'std', [], names, null)[0]).toMatchObject({ points: 0, yMin: null, bandMin: null });
  });
});
