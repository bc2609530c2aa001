import { describe, expect, it } from 'vitest';
import type { ApiText } from '../types/api';
import { filterTexts, mergeTexts, newestTextMs, textLevel } from './texts';

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

describe('mergeTexts', () => {
  const old = [line('a', 20, 'log', 1), line('b', 20, 'log', 2)];

  it('adds newer lines at the end and says so', () => {
    const merge = mergeTexts(old, [line('c', 20, 'log', 3), line('d', 30, 'log', 4)], 100);
    expect(merge.rows.map((r) => r.text)).toEqual(['a', 'b', 'c', 'd']);
    expect(merge.added.map((r) => r.text)).toEqual(['c', 'd']);
    expect(merge).toMatchObject({ atEnd: true, dropped: 0 });
  });

  it('keeps a line pushed live and fetched again once', () => {
    const pushed = mergeTexts(old, [line('c', 20, 'log', 3)], 100).rows;
    const fetched = mergeTexts(pushed, [line('b', 20, 'log', 2), line('c', 20, 'log', 3), line('d', 20, 'log', 4)], 100);
    expect(fetched.rows.map((r) => r.text)).toEqual(['a', 'b', 'c', 'd']);
    expect(fetched.added.map((r) => r.text)).toEqual(['d']);
    expect(mergeTexts(old, [line('b', 20, 'log', 2), line('b', 20, 'log', 2)], 100).added).toEqual([]);
  });

  it('keeps different lines of the same time', () => {
    const same = { ...line('b', 20, 'log', 2), text: 'b again' };
    expect(mergeTexts(old, [same], 100).rows.map((r) => r.text)).toEqual(['a', 'b', 'b again']);
  });

  it('puts an older line in its place by time', () => {
    const merge = mergeTexts(old, [line('between', 20, 'log', 1.5)], 100);
    expect(merge.rows.map((r) => r.text)).toEqual(['a', 'between', 'b']);
    expect(merge.atEnd).toBe(false);
  });

  it('keeps the newest lines within the limit', () => {
    const merge = mergeTexts(old, [line('c', 20, 'log', 3), line('d', 20, 'log', 4)], 3);
    expect(merge.rows.map((r) => r.text)).toEqual(['b', 'c', 'd']);
    expect(merge.dropped).toBe(1);
  });

  it('takes lines into an empty log', () => {
    const merge = mergeTexts([], [line('b', 20, 'log', 2), line('a', 20, 'log', 1)], 10);
    expect(merge.rows.map((r) => r.text)).toEqual(['a', 'b']);
    expect(merge.atEnd).toBe(true);
  });
});

describe('newestTextMs', () => {
  it('is the newest line’s time, or null', () => {
    expect(newestTextMs([line('a', 20, 'log', 1), line('b', 20, 'log', 7)])).toBe(1e12 + 7);
    expect(newestTextMs([])).toBeNull();
  });
});
