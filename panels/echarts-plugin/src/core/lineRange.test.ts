import { describe, expect, it } from 'vitest';
import { drawnRangeOf, keptIndices, rangeCovers, xExtentOf } from './lineRange';

describe('drawnRangeOf', () => {
  it('widens a window by its width on each side', () => {
    expect(drawnRangeOf([10, 20])).toEqual([0, 30]);
  });

  it('is null for everything', () => {
    expect(drawnRangeOf(null)).toBeNull();
    expect(drawnRangeOf(undefined)).toBeNull();
  });

  it('is null (lines drawn whole) when the widened window holds the whole extent, and only then', () => {
    expect(drawnRangeOf([10, 20], [0, 30])).toBeNull();
    expect(drawnRangeOf([10, 20], [2, 28])).toBeNull();
    expect(drawnRangeOf([10, 20], [-1, 30])).toEqual([0, 30]);
    expect(drawnRangeOf([10, 20], [0, 31])).toEqual([0, 30]);
    expect(drawnRangeOf([10, 20], null)).toEqual([0, 30]);
    // so a zoom back out to everything is covered by what is drawn
    expect(rangeCovers(drawnRangeOf([10, 20], [0, 30]), null)).toBe(true);
    expect(rangeCovers(drawnRangeOf([10, 20], [0, 31]), null)).toBe(false);
  });
});

describe('xExtentOf', () => {
  it('spans the first to the last x of every line, empty lines left out', () => {
    expect(xExtentOf([{ x: [3, 5, 9] }, { x: [] }, { x: [1, 4] }, { x: new Float64Array([6, 12]) }])).toEqual([1, 12]);
    expect(xExtentOf([{ x: [] }])).toBeNull();
    expect(xExtentOf([])).toBeNull();
  });
});

describe('rangeCovers', () => {
  it('covers a window inside the range, not one reaching past it', () => {
    expect(rangeCovers([0, 30], [5, 25])).toBe(true);
    expect(rangeCovers([0, 30], [0, 30])).toBe(true);
    expect(rangeCovers([0, 30], [-1, 25])).toBe(false);
    expect(rangeCovers([0, 30], [5, 31])).toBe(false);
  });

  it('lines drawn whole cover everything; trimmed ones never cover everything', () => {
    expect(rangeCovers(null, null)).toBe(true);
    expect(rangeCovers(null, [1, 2])).toBe(true);
    expect(rangeCovers([0, 30], null)).toBe(false);
  });
});

describe('keptIndices', () => {
  const xs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

  it('keeps the ends, the range and one neighbour outside each edge', () => {
    expect(keptIndices(xs, [4.5, 6])).toEqual([0, 4, 5, 6, 7, 9]);
    expect(keptIndices(xs, [4, 6])).toEqual([0, 3, 4, 5, 6, 7, 9]);
  });

  it('keeps a segment crossing the whole range', () => {
    expect(keptIndices(xs, [4.2, 4.8])).toEqual([0, 4, 5, 9]);
  });

  it('keeps points of equal x inside the range', () => {
    expect(keptIndices([0, 1, 2, 2, 2, 3, 4, 5], [2, 2])).toEqual([0, 1, 2, 3, 4, 5, 7]);
  });

  it('is null (every point) without a range, or when the range leaves nothing out', () => {
    expect(keptIndices(xs, null)).toBeNull();
    expect(keptIndices(xs, [1, 8])).toBeNull();
    expect(keptIndices(xs, [-5, 50])).toBeNull();
    expect(keptIndices([], [1, 2])).toBeNull();
  });

  it('keeps the first point once when the range starts near it', () => {
    expect(keptIndices(xs, [0.5, 2])).toEqual([0, 1, 2, 3, 9]);
    expect(keptIndices(xs, [7, 8.5])).toEqual([0, 6, 7, 8, 9]);
  });

  it('keeps only the ends and the nearest points when the range lies outside the line', () => {
    expect(keptIndices(xs, [20, 30])).toEqual([0, 9]);
    expect(keptIndices(xs, [-30, -20])).toEqual([0, 9]);
  });
});
