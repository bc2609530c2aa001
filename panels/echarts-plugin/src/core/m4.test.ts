import { describe, expect, it } from 'vitest';
import type { SeriesData } from '../types/chart';
import { m4 } from './m4';

function make(ys: number[]): SeriesData {
  const x = ys.map((_, i) => i);
  return { x, y: ys, step: x, timeMs: x.map((v) => v * 10) };
}

describe('m4', () => {
  it('returns small series untouched', () => {
    const data = make([1, 2, 3]);
    expect(m4(data, 10)).toBe(data);
  });

  it('keeps first, last, min and max of every column', () => {
    // 2 columns of 50 points each
    const ys = Array.from({ length: 100 }, (_, i) => Math.sin(i) * 0.1);
    ys[17] = 5; // spike in column 0
    ys[63] = -4; // dip in column 1
    const out = m4(make(ys), 2);
    expect(out.x.length).toBeLessThanOrEqual(8);
    expect(out.x).toContain(0);
    expect(out.x).toContain(99);
    expect(out.x).toContain(17);
    expect(out.x).toContain(63);
    expect(out.y).toContain(5);
    expect(out.y).toContain(-4);
    // still sorted and parallel
    expect([...out.x].sort((a, b) => a - b)).toEqual(out.x);
    expect(out.timeMs).toEqual(out.x.map((v) => v * 10));
  });

  it('never drops non-finite values', () => {
    const ys = Array.from({ length: 1000 }, () => 1);
    ys[100] = NaN;
    ys[500] = Infinity;
    ys[501] = Infinity;
    ys[502] = Infinity;
    ys[900] = -Infinity;
    const out = m4(make(ys), 10);
    expect(out.x).toContain(100);
    expect(out.x).toContain(500);
    expect(out.x).toContain(502);
    expect(out.x).toContain(900);
    expect(out.y.filter((v) => Number.isNaN(v))).toHaveLength(1);
  });

  it('keeps points outside the given range as they are', () => {
    const ys = Array.from({ length: 200 }, (_, i) => i % 7);
    const out = m4(make(ys), 5, 100, 199);
    expect(out.x.slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(out.x.length).toBeLessThanOrEqual(100 + 20);
  });
});
