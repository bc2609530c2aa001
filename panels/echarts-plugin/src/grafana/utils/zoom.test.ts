import { describe, expect, it } from 'vitest';
import { extentOf, timeRangeOf, zoomWindow } from './zoom';

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

  it('gives the dashboard whole milliseconds that cover the window', () => {
    expect(timeRangeOf([1000.4, 2000.2])).toEqual({ from: 1000, to: 2001 });
  });

  it('finds the x extent over several series', () => {
    expect(extentOf([[3, 9], [], [1, 4]])).toEqual([1, 9]);
    expect(extentOf([[]])).toBeNull();
  });
});
