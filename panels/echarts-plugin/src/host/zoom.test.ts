import { describe, expect, it } from 'vitest';
import { sameWindow, zoomEdgesReadable, zoomWindow } from './zoom';

describe('zoom', () => {
  it('reads a zoom inside the data as a window, clamped to the data', () => {
    expect(zoomWindow([200, 400], [0, 1000])).toEqual([200, 400]);
    expect(zoomWindow([-50, 400], [0, 1000])).toEqual([0, 400]);
  });

  it('reads a view of all the data as no zoom', () => {
    expect(zoomWindow([0, 1000], [0, 1000])).toBeNull();
    expect(zoomWindow([-1, 1001], [0, 1000])).toBeNull();
    expect(zoomWindow([5, 5], [0, 1000])).toBeNull();
    expect(zoomWindow([1, 2], null)).toBeNull();
  });

  it('tells edges that say nothing (no data, no width, not numbers) from a zoom out', () => {
    expect(zoomEdgesReadable([0, 1000], [0, 1000])).toBe(true);
    expect(zoomEdgesReadable([5, 5], [0, 1000])).toBe(false);
    expect(zoomEdgesReadable([400, 200], [0, 1000])).toBe(false);
    expect(zoomEdgesReadable([Number.NaN, 200], [0, 1000])).toBe(false);
    expect(zoomEdgesReadable([1, 2], null)).toBe(false);
  });

  it('compares windows by their x values, everything only with everything', () => {
    expect(sameWindow([1, 2], [1, 2])).toBe(true);
    expect(sameWindow([1, 2], [1, 3])).toBe(false);
    expect(sameWindow(null, null)).toBe(true);
    expect(sameWindow(null, [1, 2])).toBe(false);
    expect(sameWindow([1, 2], null)).toBe(false);
  });
});
