import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesce, debounce, onceATask, throttle } from './timers';

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

describe('throttle', () => {
  it('calls once per burst, in a later task, without waiting when the last call was long ago', () => {
    const fn = vi.fn();
    const t = throttle(fn, 50);
    t();
    t();
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(0);
    expect(fn).toHaveBeenCalledOnce();
    vi.advanceTimersByTime(100);
    t();
    vi.advanceTimersByTime(0);
    expect(fn).toHaveBeenCalledTimes(2);
  });

  it('calls at most once per interval under a steady stream, and is not postponed by it', () => {
    const fn = vi.fn();
    const t = throttle(fn, 50);
    for (let ms = 0; ms < 200; ms += 10) {
      t();
      vi.advanceTimersByTime(10);
    }
    vi.advanceTimersByTime(50);
    // calls at 0, 50, 100, 150 (and the last burst's at 200)
    expect(fn.mock.calls.length).toBeGreaterThanOrEqual(4);
    expect(fn.mock.calls.length).toBeLessThanOrEqual(5);
  });

  it('waits out the interval after a call, then calls once', () => {
    const fn = vi.fn();
    const t = throttle(fn, 50);
    t();
    vi.advanceTimersByTime(0);
    vi.advanceTimersByTime(10);
    t();
    vi.advanceTimersByTime(39);
    expect(fn).toHaveBeenCalledOnce();
    vi.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(2);
  });

  it('can be cancelled', () => {
    const fn = vi.fn();
    const t = throttle(fn, 50);
    t();
    t.cancel();
    vi.advanceTimersByTime(100);
    expect(fn).not.toHaveBeenCalled();
  });
});

describe('onceATask', () => {
  it('calls once when the task ends however many calls came in it, and again for calls in a later task', async () => {
    const fn = vi.fn();
    const each = onceATask(fn);
    each();
    each();
    each();
    expect(fn).not.toHaveBeenCalled();
    await Promise.resolve();
    expect(fn).toHaveBeenCalledOnce();
    each();
    await Promise.resolve();
    expect(fn).toHaveBeenCalledTimes(2);
  });

  it('can be cancelled, and called again after', async () => {
    const fn = vi.fn();
    const each = onceATask(fn);
    each();
    each.cancel();
    await Promise.resolve();
    expect(fn).not.toHaveBeenCalled();
    each();
    each.cancel();
    each();
    await Promise.resolve();
    expect(fn).toHaveBeenCalledOnce();
  });
});
