import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from './backoff';

describe('backoffDelayMs', () => {
  it('doubles from the minimum', () => {
    const mid = () => 0.5;
    expect([0, 1, 2, 3].map((a) => backoffDelayMs(a, 500, 30_000, mid))).toEqual([500, 1000, 2000, 4000]);
  });

  it('stops at the maximum', () => {
    expect(backoffDelayMs(50, 500, 30_000, () => 1)).toBe(30_000);
  });

  it('jitters by at most 20% and never below the minimum', () => {
    expect(backoffDelayMs(3, 500, 30_000, () => 0)).toBe(3200);
    expect(backoffDelayMs(3, 500, 30_000, () => 1)).toBe(4800);
    expect(backoffDelayMs(0, 500, 30_000, () => 0)).toBe(500);
  });
});
