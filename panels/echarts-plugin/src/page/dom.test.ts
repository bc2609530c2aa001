import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesce, debounce } from './dom';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('debounce', () => {
  it('runs once, after the last call of a burst, with its arguments', () => {
    const fn = vi.fn();
    const d = debounce(fn, 150);
    d(1);
    vi.advanceTimersByTime(100);
    d(2);
    vi.advanceTimersByTime(149);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledOnce();
    expect(fn).toHaveBeenCalledWith(2);
  });

  it('can be cancelled', () => {
    const fn = vi.fn();
    const d = debounce(fn, 10);
    d();
    d.cancel();
    vi.advanceTimersByTime(50);
    expect(fn).not.toHaveBeenCalled();
  });
});

describe('coalesce', () => {
  it('is not postponed by a steady stream of calls', () => {
    const fn = vi.fn();
    const c = coalesce(fn, 50);
    for (let t = 0; t < 200; t += 10) {
      c();
      vi.advanceTimersByTime(10);
    }
    expect(fn.mock.calls.length).toBeGreaterThanOrEqual(3);
  });
});
