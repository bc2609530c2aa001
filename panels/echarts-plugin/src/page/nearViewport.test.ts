import { describe, expect, it } from 'vitest';
import { isNearViewport, loadChartsNearViewport, NEAR_VIEWPORT_PX } from './nearViewport';

const box = (top: number, height = 300) => ({ top, bottom: top + height, width: 600, height });

describe('isNearViewport', () => {
  it('takes a box inside the viewport or within the margin around it, not one farther away', () => {
    expect(isNearViewport(box(100), 800)).toBe(true);
    expect(isNearViewport(box(800 + NEAR_VIEWPORT_PX), 800)).toBe(true);
    expect(isNearViewport(box(800 + NEAR_VIEWPORT_PX + 1), 800)).toBe(false);
    expect(isNearViewport(box(-300 - NEAR_VIEWPORT_PX), 800)).toBe(true);
    expect(isNearViewport(box(-300 - NEAR_VIEWPORT_PX - 1), 800)).toBe(false);
  });

  it('never takes a hidden element (no box)', () => {
    expect(isNearViewport({ top: 0, bottom: 0, width: 0, height: 0 }, 800)).toBe(false);
  });
});

describe('loadChartsNearViewport', () => {
  it('reads every chart\'s position before it starts loading any, and loads only those near', () => {
    const events: string[] = [];
    const chart = (name: string, near: boolean) => ({
      nearViewport: () => (events.push(`read ${name}`), near),
      loadNow: () => events.push(`load ${name}`),
    });
    loadChartsNearViewport([chart('a', true), chart('b', false), chart('c', true)]);
    expect(events).toEqual(['read a', 'read b', 'read c', 'load a', 'load c']);
  });
});
