import { describe, expect, it } from 'vitest';
import type { ApiSeriesResponse } from '../types/api';
import {
  countInRange,
  extentOf,
  lowerBound,
  meanSpacing,
  parseSeriesResponse,
  relativeOriginMs,
  spliceDetail,
  upperBound,
  withNeighbours,
  xFor,
} from './series';

function response(overrides: Partial<ApiSeriesResponse> = {}): ApiSeriesResponse {
  return {
    project: 'p',
    run: 'r',
    key: 'loss',
    x: 'step',
    start: 10,
    end: 13,
    width: 800,
    raw: true,
    total: 4,
    points: {
      x: [10, 11, 12, 13],
      y: [1, 'NaN', 'Infinity', '-Infinity'],
      step: [10, 11, 12, 13],
      time_ms: [1000, 1100, 1200, 1300],
    },
    before: { x: 9, y: 0.5, step: 9, time_ms: 900 },
    after: null,
    ...overrides,
  };
}

function series(xs: number[], tag = 0) {
  return { x: xs, y: xs.map((v) => v + tag), step: xs, timeMs: xs.map((v) => v * 100) };
}

describe('parseSeriesResponse', () => {
  it('keeps every non-finite value in place', () => {
    const parsed = parseSeriesResponse(response());
    expect(parsed.points.y[0]).toBe(1);
    expect(parsed.points.y[1]).toBeNaN();
    expect(parsed.points.y.slice(2)).toEqual([Infinity, -Infinity]);
    expect(parsed.raw).toBe(true);
    expect(parsed.total).toBe(4);
    expect(parsed.before).toEqual({ x: 9, y: 0.5, step: 9, timeMs: 900 });
    expect(parsed.after).toBeNull();
  });

  it('rejects a response whose arrays are not parallel', () => {
    const bad = response({ points: { x: [1, 2], y: [1], step: [1, 2], time_ms: [1, 2] } });
    expect(() => parseSeriesResponse(bad)).toThrow(/differ in length/);
  });

  it('adds the neighbours around the points so a zoomed line reaches the edges', () => {
    const data = withNeighbours(parseSeriesResponse(response({ after: { x: 20, y: 3, step: 20, time_ms: 2000 } })));
    expect(data.x).toEqual([9, 10, 11, 12, 13, 20]);
    expect(data.timeMs[0]).toBe(900);
  });
});

describe('bounds', () => {
  it('find insertion points in sorted x', () => {
    const xs = [1, 2, 2, 3];
    expect(lowerBound(xs, 2)).toBe(1);
    expect(upperBound(xs, 2)).toBe(3);
    expect(lowerBound(xs, 0)).toBe(0);
    expect(upperBound(xs, 9)).toBe(4);
  });

  it('count the points of a range, both ends included', () => {
    expect(countInRange(series([1, 2, 3, 4, 5]), 2, 4)).toBe(3);
    expect(countInRange(series([1, 2]), 5, 9)).toBe(0);
  });
});

describe('spliceDetail', () => {
  it('puts the detail between the overview parts outside it', () => {
    const overview = series([0, 10, 20, 30, 40], 0);
    const detail = series([10, 12, 14, 16, 21], 1000);
    const merged = spliceDetail(overview, detail);
    expect(merged.x).toEqual([0, 10, 12, 14, 16, 21, 30, 40]);
    // the detail's own values win inside its span
    expect(merged.y[1]).toBe(1010);
    expect(merged.y[6]).toBe(30);
  });

  it('returns the overview unchanged for an empty detail', () => {
    const overview = series([0, 1]);
    expect(spliceDetail(overview, series([]))).toBe(overview);
  });
});

describe('x of a point', () => {
  it('follows the x mode', () => {
    expect(xFor('step', 7, 5000, 1000)).toBe(7);
    expect(xFor('time', 7, 5000, 1000)).toBe(5000);
    expect(xFor('relative', 7, 5000, 1000)).toBe(4);
  });

  it('reads the relative origin off a relative series', () => {
    expect(relativeOriginMs({ x: [2.5], y: [0], step: [0], timeMs: [12_500] })).toBe(10_000);
    expect(relativeOriginMs(series([]))).toBeNull();
  });

  it('gives the mean raw spacing', () => {
    expect(meanSpacing(0, 100, 101)).toBe(1);
    expect(meanSpacing(0, 0, 1)).toBeUndefined();
  });
});

describe('extentOf', () => {
  it('finds the x extent over several series', () => {
    expect(extentOf([[3, 9], [], [1, 4]])).toEqual([1, 9]);
    expect(extentOf([[]])).toBeNull();
  });
});
