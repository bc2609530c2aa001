import { describe, expect, it } from 'vitest';
import { timeRangeOf } from './zoom';

describe('zoom', () => {
  it('gives the dashboard whole milliseconds that cover the window', () => {
    expect(timeRangeOf([1000.4, 2000.2])).toEqual({ from: 1000, to: 2001 });
  });
});
