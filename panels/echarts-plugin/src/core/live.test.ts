import { describe, expect, it } from 'vitest';
import type { LiveSeriesFrame } from '../types/api';
import { appendLivePoints, liveFrameToSeries } from './live';

const frame: LiveSeriesFrame = {
  key: 'loss',
  step: [3, 4],
  time_ms: [13_000, 14_000],
  y: [0.5, 'NaN'],
};

function held(xs: number[]) {
  return { x: xs.slice(), y: xs.map((x) => x / 10), step: xs.slice(), timeMs: xs.map((x) => 10_000 + x * 1000) };
}

describe('liveFrameToSeries', () => {
  it('converts to the chart x units and keeps NaN', () => {
    const byStep = liveFrameToSeries(frame, 'step', null);
    expect(byStep.x).toEqual([3, 4]);
    expect(byStep.y[1]).toBeNaN();
    expect(liveFrameToSeries(frame, 'time', null).x).toEqual([13_000, 14_000]);
    expect(liveFrameToSeries(frame, 'relative', 10_000).x).toEqual([3, 4]);
  });

  it('sorts a frame whose steps went backwards', () => {
    const s = liveFrameToSeries({ key: 'k', step: [5, 2], time_ms: [1, 2], y: [1, 2] }, 'step', null);
    expect(s.x).toEqual([2, 5]);
    expect(s.y).toEqual([2, 1]);
  });
});

describe('appendLivePoints', () => {
  it('appends new points at the end without touching the input', () => {
    const current = held([0, 1, 2]);
    const { data, appended } = appendLivePoints(current, liveFrameToSeries(frame, 'step', null));
    expect(appended).toBe(2);
    expect(data.x).toEqual([0, 1, 2, 3, 4]);
    expect(data.y[4]).toBeNaN();
    expect(current.x).toEqual([0, 1, 2]);
  });

  it('skips points it already holds', () => {
    const current = held([0, 1, 2, 3]);
    const again = { x: [3], y: [0.3], step: [3], timeMs: [13_000] };
    const result = appendLivePoints(current, again);
    expect(result.appended).toBe(0);
    expect(result.data).toBe(current);
  });

  it('inserts a late point in x order', () => {
    const current = held([0, 2, 4]);
    const late = { x: [1], y: [9], step: [1], timeMs: [11_000] };
    const { data } = appendLivePoints(current, late);
    expect(data.x).toEqual([0, 1, 2, 4]);
    expect(data.y[1]).toBe(9);
  });

  it('keeps two distinct points at the same step', () => {
    const current = held([0, 1]);
    const sameStep = { x: [1], y: [5], step: [1], timeMs: [99_000] };
    expect(appendLivePoints(current, sameStep).data.x).toEqual([0, 1, 1]);
  });

  it('starts an empty curve', () => {
    const { data, appended } = appendLivePoints(held([]), liveFrameToSeries(frame, 'step', null));
    expect(appended).toBe(2);
    expect(data.step).toEqual([3, 4]);
  });
});
