import { describe, expect, it } from 'vitest';
import { computeYRange, quantileSorted } from './yRange';

describe('quantileSorted', () => {
  it('interpolates between neighbours', () => {
    expect(quantileSorted([0, 10], 0.5)).toBe(5);
    expect(quantileSorted([1, 2, 3, 4, 5], 0)).toBe(1);
    expect(quantileSorted([1, 2, 3, 4, 5], 1)).toBe(5);
    expect(quantileSorted([], 0.5)).toBeNaN();
  });
});

describe('computeYRange', () => {
  it('spans min..max with a small margin', () => {
    const r = computeYRange([[0, 10], [5]], { log: false, ignoreOutliers: false, padFraction: 0.1 });
    expect(r.min).toBeCloseTo(-1);
    expect(r.max).toBeCloseTo(11);
    expect(r.empty).toBe(false);
  });

  it('never lets non-finite values into the bounds', () => {
    const r = computeYRange([[1, NaN, Infinity, -Infinity, 2]], { log: false, ignoreOutliers: false, padFraction: 0 });
    expect([r.min, r.max]).toEqual([1, 2]);
  });

  it('can ignore a spike by using percentiles', () => {
    const values = Array.from({ length: 1000 }, (_, i) => (i % 10) / 10);
    values[500] = 1e6;
    const full = computeYRange([values], { log: false, ignoreOutliers: false });
    const robust = computeYRange([values], { log: false, ignoreOutliers: true });
    expect(full.max).toBeGreaterThan(1e5);
    expect(robust.max).toBeLessThan(1.2);
    expect(robust.outliersClipped).toBeGreaterThan(0);
  });

  it('drops values ≤ 0 from a log axis and counts them', () => {
    const r = computeYRange([[-1, 0, 0.01, 100]], { log: true, ignoreOutliers: false, padFraction: 0 });
    expect(r.nonPositiveHidden).toBe(2);
    expect(r.min).toBeCloseTo(0.01);
    expect(r.max).toBeCloseTo(100);
  });

  it('pads a log axis in decades, keeping the minimum positive', () => {
    const r = computeYRange([[1, 1000]], { log: true, ignoreOutliers: false, padFraction: 0.1 });
    expect(r.min).toBeCloseTo(Math.pow(10, -0.3));
    expect(r.max).toBeCloseTo(Math.pow(10, 3.3));
  });

  it('gives a flat curve some room', () => {
    const r = computeYRange([[5, 5, 5]], { log: false, ignoreOutliers: true });
    expect(r.min).toBeLessThan(5);
    expect(r.max).toBeGreaterThan(5);
    const zero = computeYRange([[0, 0]], { log: false, ignoreOutliers: false });
    expect([zero.min, zero.max]).toEqual([-1, 1]);
  });

  it('gives placeholder bounds when nothing can be drawn', () => {
    const r = computeYRange([[NaN], []], { log: false, ignoreOutliers: false });
    expect(r.empty).toBe(true);
    expect(r.max).toBeGreaterThan(r.min);
    const logEmpty = computeYRange([[-5]], { log: true, ignoreOutliers: false });
    expect(logEmpty.empty).toBe(true);
    expect(logEmpty.min).toBeGreaterThan(0);
  });
});
