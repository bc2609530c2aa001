import { describe, expect, it } from 'vitest';
import { envelopeBucketsFor, minMaxEnvelope } from './envelope';

function make(ys: number[]) {
  const x = ys.map((_, i) => i);
  return { x, y: ys, step: x, timeMs: x };
}

describe('minMaxEnvelope', () => {
  it('holds every spike of the data', () => {
    const ys = Array.from({ length: 100 }, () => 1);
    ys[42] = 9;
    ys[77] = -3;
    const env = minMaxEnvelope(make(ys), 10);
    expect(env.x).toHaveLength(10);
    expect(Math.max(...env.hi)).toBe(9);
    expect(Math.min(...env.lo)).toBe(-3);
    expect(env.hi[4]).toBe(9);
    expect(env.lo[7]).toBe(-3);
  });

  it('ignores non-finite values and skips buckets without finite ones', () => {
    const env = minMaxEnvelope(make([1, 2, NaN, NaN, Infinity, 5]), 3);
    expect(env.lo).toEqual([1, 5]);
    expect(env.hi).toEqual([2, 5]);
  });

  it('places a bucket at the middle of its points', () => {
    const env = minMaxEnvelope(make([0, 1, 2, 3]), 2);
    expect(env.x).toEqual([0.5, 2.5]);
  });

  it('handles empty and single-point data', () => {
    expect(minMaxEnvelope(make([]), 5).x).toEqual([]);
    expect(minMaxEnvelope(make([4]), 5)).toEqual({ x: [0], lo: [4], hi: [4] });
  });

  it('scales the bucket count with the plot width', () => {
    expect(envelopeBucketsFor(600)).toBe(100);
    expect(envelopeBucketsFor(10)).toBe(8);
  });
});
