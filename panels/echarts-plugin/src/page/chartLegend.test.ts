import { describe, expect, it } from 'vitest';
import { lastFinite, matchingEntries, topEntries, type LegendEntry } from './chartLegend';

const entry = (name: string, last: number): LegendEntry => ({ id: name, name, color: '#000', last });
const entries = [entry('a', 3), entry('b', NaN), entry('c', 9), entry('lr=0.1 seed=2', 1), entry('d', 3)];

describe('topEntries', () => {
  it('orders by last value either way, runs without one last, ties by name; the first N', () => {
    expect(topEntries(entries, 'desc', 3).map((e) => e.name)).toEqual(['c', 'a', 'd']);
    expect(topEntries(entries, 'asc', null).map((e) => e.name)).toEqual(['lr=0.1 seed=2', 'a', 'd', 'c', 'b']);
  });
});

describe('matchingEntries', () => {
  it('keeps the names holding every word, any case', () => {
    expect(matchingEntries(entries, 'SEED=2 lr').map((e) => e.name)).toEqual(['lr=0.1 seed=2']);
    expect(matchingEntries(entries, ' ')).toHaveLength(entries.length);
  });
});

describe('lastFinite', () => {
  it('is the value the line ends at, NaN and ±Inf skipped', () => {
    expect(lastFinite({ y: [1, 2, NaN, Infinity] })).toBe(2);
    expect(Number.isNaN(lastFinite({ y: [NaN] }))).toBe(true);
  });
});
