import { describe, expect, it } from 'vitest';
import type { ApiText } from '../types/api';
import { filterTexts, textLevel } from './texts';

function line(text: string, level: number, key = 'log', step = 0): ApiText {
  return { key, step, time_ms: 1e12 + step, level, text };
}

describe('textLevel', () => {
  it('names Python logging levels, plain text and levels in between', () => {
    expect([0, 10, 20, 30, 40, 50].map(textLevel)).toEqual(['text', 'debug', 'info', 'warning', 'error', 'critical']);
    expect(textLevel(25)).toBe('warning');
    expect(textLevel(5)).toBe('debug');
    expect(textLevel(-1)).toBe('text');
  });
});

describe('filterTexts', () => {
  const rows = [
    line('epoch 1 started', 20, 'log', 1),
    line('loss is NaN', 40, 'log', 2),
    line('a sample: "the cat"', 0, 'samples', 3),
    line('lr reduced', 30, 'log', 4),
  ];
  const all = { search: '', minLevel: 0, key: '' };

  it('keeps the order, oldest first', () => {
    expect(filterTexts(rows, all).map((r) => r.step)).toEqual([1, 2, 3, 4]);
  });

  it('filters by lowest level, leaving plain text out once a level is asked for', () => {
    expect(filterTexts(rows, { ...all, minLevel: 21 }).map((r) => r.step)).toEqual([2, 4]);
  });

  it('filters by key and by words in any case', () => {
    expect(filterTexts(rows, { ...all, key: 'samples' }).map((r) => r.step)).toEqual([3]);
    expect(filterTexts(rows, { ...all, search: 'NAN loss' }).map((r) => r.step)).toEqual([2]);
    expect(filterTexts(rows, { ...all, search: 'samples' }).map((r) => r.step)).toEqual([3]);
  });
});
