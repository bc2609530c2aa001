import { describe, expect, it } from 'vitest';
import { dropOlderThan, planSourceChange, snapshotTimes } from './streaming';

describe('planSourceChange', () => {
  const before = snapshotTimes([1000, 2000, 3000]);

  it('reads everything the first time, and for a query result that is not live', () => {
    expect(planSourceChange(undefined, [1000], true)).toEqual({ kind: 'reload' });
    expect(planSourceChange(before, [1000, 2000, 3000, 4000], false)).toEqual({ kind: 'reload' });
  });

  it('reads only the new rows of a live frame that grew at the end', () => {
    expect(planSourceChange(before, [1000, 2000, 3000, 4000, 5000], true)).toEqual({ kind: 'append', from: 3 });
  });

  it('sees an unchanged live frame as unchanged', () => {
    expect(planSourceChange(before, [1000, 2000, 3000], true)).toEqual({ kind: 'unchanged' });
  });

  it('follows a bounded buffer that dropped rows at the front while growing', () => {
    expect(planSourceChange(before, [2000, 3000, 4000, 5000], true)).toEqual({ kind: 'slide', from: 2, firstTime: 2000 });
    expect(planSourceChange(before, [3000, 4000], true)).toEqual({ kind: 'slide', from: 1, firstTime: 3000 });
  });

  it('reads everything again when old rows changed or vanished', () => {
    expect(planSourceChange(before, [1000, 2000], true)).toEqual({ kind: 'reload' });
    expect(planSourceChange(before, [1000, 2000, 3500, 4000], true)).toEqual({ kind: 'reload' });
    expect(planSourceChange(before, [500, 1000, 2000, 3000], true)).toEqual({ kind: 'reload' });
    expect(planSourceChange(before, [4000, 5000], true)).toEqual({ kind: 'reload' });
  });
});

describe('dropOlderThan', () => {
  it('keeps points from the given time on, whatever the x order', () => {
    const data = { x: [1, 2, 3], y: [10, 20, 30], step: [1, 2, 3], timeMs: [300, 100, 200] };
    expect(dropOlderThan(data, 200)).toEqual({ x: [1, 3], y: [10, 30], step: [1, 3], timeMs: [300, 200] });
    expect(dropOlderThan(data, 100)).toBe(data);
  });
});
