import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiClient } from './api';
import { startEarly, takeEarly } from './earlyFetch';

/** A fetch that records its calls and answers each with a JSON body naming the call's number. */
function countingFetch(bodyOf: (url: string) => unknown = () => ({})) {
  const calls: { url: string; headers: Record<string, string> }[] = [];
  const get = vi.fn(async (url: URL | string, init?: { headers?: Record<string, string> }) => {
    calls.push({ url: url.toString(), headers: init?.headers ?? {} });
    return new Response(JSON.stringify(bodyOf(url.toString())));
  });
  vi.stubGlobal('fetch', get);
  return calls;
}

afterEach(() => {
  vi.unstubAllGlobals();
  delete (globalThis as Record<string, unknown>).__curvestreamEarlyGets;
});

describe('early GETs', () => {
  it('hands a started answer to the first take of the same URL and headers, once', async () => {
    const calls = countingFetch();
    const url = new URL('http://h/api/v1/runs');
    startEarly(url, { Accept: 'application/json' });
    startEarly(url, { Accept: 'application/json' }); // started once
    expect(calls).toHaveLength(1);
    expect(takeEarly(new URL('http://h/api/v1/runs'), { Accept: 'application/json' })).toBeDefined();
    expect(takeEarly(url, { Accept: 'application/json' })).toBeUndefined();
  });

  it('starts nothing once the app has asked for itself (an early script that ran late)', () => {
    const calls = countingFetch();
    const url = new URL('http://h/api/v1/metrics?run=p%2Fr');
    expect(takeEarly(url, { Accept: 'application/json' })).toBeUndefined(); // the app asks, nothing was started
    startEarly(url, { Accept: 'application/json' });
    expect(calls).toHaveLength(0);
  });

  it('is not taken for other headers or another URL', () => {
    countingFetch();
    const url = new URL('http://h/api/v1/runs');
    startEarly(url, { Accept: 'application/json' });
    expect(takeEarly(url, { Accept: 'application/json', Authorization: 'Bearer t' })).toBeUndefined();
    expect(takeEarly(new URL('http://h/api/v1/runs?x=1'), { Accept: 'application/json' })).toBeUndefined();
    expect(takeEarly(url, { Accept: 'application/json' })).toBeDefined();
  });

  it('keeps a failure for its taker and raises no unhandled rejection meanwhile', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const url = new URL('http://h/api/v1/runs');
      startEarly(url, {}, () => Promise.reject(new TypeError('network down')));
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
      await expect(takeEarly(url, {})!).rejects.toThrow('network down');
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('ApiClient with early GETs', () => {
  const refs = [
    { project: 'p', run: 'a' },
    { project: 'p/q', run: 'lr=0.1 50%' },
  ];

  it('answers runs() and metricsMany() from the GETs started early, with no second request', async () => {
    const calls = countingFetch((url) =>
      url.includes('/metrics') ? { runs: [{ metrics: [{ key: 'loss' }] }, { metrics: [] }] } : { runs: [{ project: 'p', run: 'a' }] },
    );
    const early = new ApiClient('http://h/', () => 'tok');
    early.startRunsEarly();
    early.startMetricsManyEarly(refs);
    expect(calls).toHaveLength(2);

    const app = new ApiClient('http://h/', () => 'tok');
    const [runs, metrics] = await Promise.all([app.runs(), app.metricsMany(refs)]);
    expect(calls).toHaveLength(2);
    expect(runs).toEqual([{ project: 'p', run: 'a' }]);
    expect(metrics).toEqual([[{ key: 'loss' }], []]);
    // the next ones ask the bridge again
    await app.runs();
    expect(calls).toHaveLength(3);
  });

  it('asks anew when the token changed meanwhile, or for other runs', async () => {
    const calls = countingFetch(() => ({ runs: [{ metrics: [] }] }));
    new ApiClient('http://h/', () => null).startMetricsManyEarly(refs.slice(0, 1));
    new ApiClient('http://h/', () => null).startMetricsManyEarly([]); // nothing to ask for
    expect(calls).toHaveLength(1);
    await new ApiClient('http://h/', () => 'new-token').metricsMany(refs.slice(0, 1));
    expect(calls).toHaveLength(2);
    expect(calls[1]!.headers.Authorization).toBe('Bearer new-token');
  });
});
