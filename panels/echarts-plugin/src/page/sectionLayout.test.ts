import { describe, expect, it } from 'vitest';
import { keySearch, sectionOf } from './keySearch';
import { blockHeight, blocksOf, gridColumns, missingRange } from './sectionLayout';

describe('gridColumns', () => {
  it('fits as many 520 px cards as repeat(auto-fit, minmax(520px, 1fr)) does, at least one', () => {
    expect(gridColumns(1076)).toBe(2); // two cards and a gap inside the padding: 2 × 520 + 12 + 2 × 12
    expect(gridColumns(1075)).toBe(1);
    expect(gridColumns(1620)).toBe(3);
    expect(gridColumns(300)).toBe(1);
  });
});

describe('blocksOf and blockHeight', () => {
  it('cuts a section into blocks of whole rows, the last one shorter', () => {
    expect(blocksOf({ offset: 40, keys: 13 }, 6)).toEqual([
      { offset: 40, count: 6 },
      { offset: 46, count: 6 },
      { offset: 52, count: 1 },
    ]);
    expect(blockHeight(6, 2, 333)).toBe(3 * 345);
    expect(blockHeight(1, 2, 333)).toBe(345);
  });
});

describe('missingRange', () => {
  it('spans the keys of a block not known yet, or nothing', () => {
    const known = new Set([10, 11, 14]);
    expect(missingRange(10, 6, (i) => known.has(i))).toEqual({ offset: 12, count: 4 });
    expect(missingRange(10, 2, (i) => known.has(i))).toBeNull();
  });
});

describe('keySearch and sectionOf', () => {
  it('reads /…/ as a regular expression, * ? [ as a glob, anything else as words', () => {
    expect(keySearch(' /^layer\\.1/ ')).toEqual({ q: '^layer\\.1', match: 'regex' });
    expect(keySearch('layer.1*/w')).toEqual({ q: 'layer.1*/w', match: 'glob' });
    expect(keySearch('attn q')).toEqual({ q: 'attn q', match: 'words' });
    expect(keySearch('/')).toEqual({ q: '/', match: 'words' });
  });

  it('puts a key in the section before its first /', () => {
    expect(sectionOf('layer.12/attn/q')).toBe('layer.12');
    expect(sectionOf('loss')).toBe('');
  });
});
