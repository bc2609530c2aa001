import { describe, expect, it } from 'vitest';
import { clampSmoothing, emaTensorBoard, emaTimeWeighted } from './smoothing';

/** TensorBoard's resmoothDataset, transcribed as plainly as possible. */
function tensorBoardReference(ys: number[], w: number): number[] {
  let last = ys.length > 0 ? 0 : NaN;
  let numAccum = 0;
  const isConstant = ys.every((v) => v == ys[0]);
  return ys.map((next) => {
    if (isConstant || !Number.isFinite(next)) return next;
    last = last * w + (1 - w) * next;
    numAccum++;
    let debiasWeight = 1;
    if (w !== 1) debiasWeight = 1 - Math.pow(w, numAccum);
    return last / debiasWeight;
  });
}

const noisy = Array.from({ length: 200 }, (_, i) => Math.exp(-i / 50) + 0.1 * Math.sin(i * 1.7));

describe('emaTensorBoard', () => {
  it('matches TensorBoard for several weights', () => {
    for (const w of [0, 0.3, 0.6, 0.9, 0.999]) {
      expect(emaTensorBoard(noisy, w)).toEqual(tensorBoardReference(noisy, w));
    }
  });

  it('is debiased: the first value is the first point, not a fraction of it', () => {
    expect(emaTensorBoard([10, 10.5], 0.9)[0]).toBeCloseTo(10, 12);
  });

  it('worked example', () => {
    // last1 = 0.5*1 = .5 -> /(1-.5) = 1; last2 = .25+.5*3 = 1.75 -> /(1-.25) = 2.333..
    const s = emaTensorBoard([1, 3], 0.5);
    expect(s[0]).toBeCloseTo(1, 12);
    expect(s[1]).toBeCloseTo(7 / 3, 12);
  });

  it('passes non-finite values through and keeps smoothing the rest', () => {
    const s = emaTensorBoard([1, NaN, Infinity, 3], 0.5);
    expect(s[1]).toBeNaN();
    expect(s[2]).toBe(Infinity);
    expect(s[3]).toBeCloseTo(7 / 3, 12);
  });

  it('leaves a constant series alone', () => {
    expect(emaTensorBoard([2, 2, 2], 0.9)).toEqual([2, 2, 2]);
  });

  it('clamps the weight to 0..0.999', () => {
    expect(clampSmoothing(-1)).toBe(0);
    expect(clampSmoothing(1)).toBe(0.999);
    expect(clampSmoothing(NaN)).toBe(0);
    expect(emaTensorBoard([1, 5], 0)).toEqual([1, 5]);
  });
});

describe('emaTimeWeighted', () => {
  it('equals the TensorBoard EMA on evenly spaced points', () => {
    const xs = noisy.map((_, i) => 100 + i * 5);
    const a = emaTimeWeighted(xs, noisy, 0.8, 5);
    const b = emaTensorBoard(noisy, 0.8);
    a.forEach((v, i) => expect(v).toBeCloseTo(b[i]!, 10));
  });

  it('lets a long gap forget more history than a short one', () => {
    const near = emaTimeWeighted([0, 1], [0, 10], 0.9, 1)[1]!;
    const far = emaTimeWeighted([0, 200], [0, 10], 0.9, 1)[1]!;
    expect(far).toBeGreaterThan(near);
    expect(far).toBeCloseTo(10, 1);
  });

  it('gives the same curve for raw points and for a subset sampled at the same x', () => {
    // a slowly varying signal: dropping points must not change the smoothing scale
    const xs = Array.from({ length: 1000 }, (_, i) => i);
    const ys = xs.map((x) => Math.sin(x / 100));
    const full = emaTimeWeighted(xs, ys, 0.99, 1);
    const subX = xs.filter((_, i) => i % 10 === 0);
    const subY = ys.filter((_, i) => i % 10 === 0);
    const sub = emaTimeWeighted(subX, subY, 0.99, 1);
    expect(Math.abs(sub[90]! - full[900]!)).toBeLessThan(0.02);
  });

  it('passes non-finite values through', () => {
    const s = emaTimeWeighted([0, 1, 2], [1, NaN, 1], 0.5, 1);
    expect(s[1]).toBeNaN();
    expect(s[2]).toBeCloseTo(1, 12);
  });

  it('falls back to the plain EMA without a reference spacing', () => {
    expect(emaTimeWeighted([0, 3], [1, 3], 0.5, undefined)).toEqual(emaTensorBoard([1, 3], 0.5));
  });
});
