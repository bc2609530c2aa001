import { describe, expect, it } from 'vitest';
import { assignColors, PALETTE } from './palette';

describe('assignColors', () => {
  it('gives distinct colours in palette order', () => {
    const colours = assignColors(['a', 'b', 'c'], new Map());
    expect([...colours.values()]).toEqual(PALETTE.slice(0, 3));
  });

  it('lets a run keep its colour when others come and go', () => {
    const first = assignColors(['a', 'b', 'c'], new Map());
    const second = assignColors(['c', 'd'], first);
    expect(second.get('c')).toBe(first.get('c'));
    expect(second.get('d')).not.toBe(first.get('c'));
  });

  it('still colours every run when there are more runs than colours', () => {
    const ids = Array.from({ length: PALETTE.length + 3 }, (_, i) => `r${i}`);
    const colours = assignColors(ids, new Map());
    expect(colours.size).toBe(ids.length);
    for (const c of colours.values()) expect(PALETTE).toContain(c);
  });
});
