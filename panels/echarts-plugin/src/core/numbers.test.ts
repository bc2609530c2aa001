import { describe, expect, it } from 'vitest';
import { parseApiNumber, parseApiNumbers, toApiNumber, valueKind } from './numbers';

describe('parseApiNumber', () => {
  it('keeps plain numbers', () => {
    expect(parseApiNumber(0.031)).toBe(0.031);
    expect(parseApiNumber(-2)).toBe(-2);
  });

  it('reads the non-finite strings the API sends', () => {
    expect(parseApiNumber('NaN')).toBeNaN();
    expect(parseApiNumber('Infinity')).toBe(Infinity);
    expect(parseApiNumber('-Infinity')).toBe(-Infinity);
  });

  it('turns unreadable values into NaN instead of dropping them', () => {
    expect(parseApiNumber(null)).toBeNaN();
    expect(parseApiNumber(undefined)).toBeNaN();
    expect(parseApiNumber('')).toBeNaN();
    expect(parseApiNumber('abc')).toBeNaN();
  });

  it('accepts numeric strings', () => {
    expect(parseApiNumber(' 1.5 ')).toBe(1.5);
  });

  it('parses whole arrays and keeps their length', () => {
    const parsed = parseApiNumbers([1, 'NaN', 'Infinity', '-Infinity', 2]);
    expect(parsed).toHaveLength(5);
    expect(parsed[1]).toBeNaN();
    expect(parsed.slice(2)).toEqual([Infinity, -Infinity, 2]);
  });
});

describe('toApiNumber', () => {
  it('round-trips every kind of value', () => {
    for (const v of [1.25, NaN, Infinity, -Infinity]) {
      expect(Object.is(parseApiNumber(toApiNumber(v)), v)).toBe(true);
    }
  });
});

describe('valueKind', () => {
  it('names each kind', () => {
    expect([1, NaN, Infinity, -Infinity].map(valueKind)).toEqual(['finite', 'nan', 'posinf', 'neginf']);
  });
});
