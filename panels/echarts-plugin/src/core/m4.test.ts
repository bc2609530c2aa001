import { describe, expect, it } from 'vitest';
import type { SeriesData } from '../types/chart';
import golden from '../../../../tests/golden/m4/vectors.json';
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

/** One case of the M4 golden vectors (tests/golden/m4/vectors.json; the definition: tests/m4_golden.py). */
interface GoldenCase {
  name: string;
  points: [number, number, number | string][];
  queries: {
    x: 'step' | 'time';
    start: number | null;
    end: number | null;
    width: number;
    raw: boolean;
    points: number[];
    before: number | null;
    after: number | null;
  }[];
}

describe('m4 on the golden vectors', () => {
  const cases = (golden as unknown as { cases: GoldenCase[] }).cases;

  it('answers every query of every case as the definition does, neighbours kept as they are', () => {
    let checked = 0;
    let m4Answers = 0;
    for (const c of cases) {
      const value = (i: number) => Number(c.points[i]![2]); // "NaN", "Infinity", "-Infinity" or a number
      for (const q of c.queries) {
        if (q.start === null || q.end === null) continue; // no points: nothing to draw
        const x = (i: number) => (q.x === 'step' ? c.points[i]![0] : c.points[i]![1] / 1e6);
        const keyOrder = c.points
          .map((_, i) => i)
          .sort((a, b) => c.points[a]![0] - c.points[b]![0] || c.points[a]![1] - c.points[b]![1]);
        if (q.x === 'time') keyOrder.sort((a, b) => c.points[a]![1] - c.points[b]![1]);
        const inside = keyOrder.filter((i) => x(i) >= q.start! && x(i) <= q.end!);
        const around = (i: number | null) => (i === null ? [] : [i]);
        const given = [...around(q.before), ...inside, ...around(q.after)];
        const series = (idx: number[]): SeriesData => ({
          x: idx.map(x),
          y: idx.map(value),
          step: idx.map((i) => c.points[i]![0]),
          timeMs: idx.map((i) => c.points[i]![1] / 1e6),
        });
        const got = m4(series(given), q.width, q.start, q.end);
        const want = series([...around(q.before), ...q.points, ...around(q.after)]);
        expect(got, `${c.name} ${JSON.stringify(q)}`).toEqual(want);
        checked++;
        if (!q.raw) m4Answers++;
      }
    }
    expect(checked).toBeGreaterThan(150);
    expect(m4Answers).toBeGreaterThan(60);
  });
});
