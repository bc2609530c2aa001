import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiClient, ApiError } from './api';

function fakeFetch(body: unknown, status = 200) {
  const calls: { url: string; headers: Record<string, string> }[] = [];
  vi.stubGlobal('fetch', async (url: URL, init: { headers: Record<string, string> }) => {
    calls.push({ url: url.toString(), headers: init.headers });
    return new Response(JSON.stringify(body), { status, statusText: status === 200 ? 'OK' : 'Nope' });
  });
  return calls;
}

afterEach(() => vi.unstubAllGlobals());

describe('ApiClient', () => {
  it('resolves the API against the page URL, so any base path works', () => {
    const api = new ApiClient('https://lab.example/curvestream/', () => null);
    expect(api.url('api/v1/runs').toString()).toBe('https://lab.example/curvestream/api/v1/runs');
    expect(api.liveUrl()).toBe('wss://lab.example/curvestream/api/v1/live');
    expect(new ApiClient('http://127.0.0.1:8080/', () => null).liveUrl()).toBe('ws://127.0.0.1:8080/api/v1/live');
  });

  it('puts the read token on the live socket URL, where no header can go', () => {
    const api = new ApiClient('http://h/', () => 's3cret');
    expect(api.liveUrl()).toBe('ws://h/api/v1/live?token=s3cret');
  });

  it('encodes names as single path segments and keys only in the query', async () => {
    const calls = fakeFetch({ project: 'p', run: 'r', key: 'k', x: 'step', points: { x: [], y: [], step: [], time_ms: [] } });
    const api = new ApiClient('http://h/', () => 'tok');
    await api.series({ project: 'vision/mnist', run: 'lr=0.1 bs=64' }, 'train/loss ü,"q"=1', {
      x: 'time',
      width: 800,
      start: 10,
      end: 20,
    });
    const url = new URL(calls[0]!.url);
    expect(url.pathname).toBe('/api/v1/runs/vision%2Fmnist/lr%3D0.1%20bs%3D64/series');
    expect(url.searchParams.get('key')).toBe('train/loss ü,"q"=1');
    expect(url.searchParams.get('x')).toBe('time');
    expect(url.searchParams.get('width')).toBe('800');
    expect(url.searchParams.get('start')).toBe('10');
    expect(calls[0]!.headers.Authorization).toBe('Bearer tok');
  });

  it('leaves out the range for a whole-series query', async () => {
    const calls = fakeFetch({});
    await new ApiClient('http://h/', () => null).series({ project: 'p', run: 'r' }, 'k', { x: 'step', width: 5 });
    const url = new URL(calls[0]!.url);
    expect(url.searchParams.has('start')).toBe(false);
    expect(url.searchParams.has('end')).toBe(false);
    expect(calls[0]!.headers.Authorization).toBeUndefined();
  });

  it('turns an error answer into an ApiError with the status and detail', async () => {
    fakeFetch({ detail: 'missing bearer token' }, 401);
    const error = await new ApiClient('http://h/', () => null).runs().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(401);
    expect((error as ApiError).message).toContain('missing bearer token');
  });

  it('asks for histograms of a key and texts of a run (any key when none is given, only newer ones with afterMs)', async () => {
    const calls = fakeFetch({ histograms: [{ step: 1 }], texts: [{ text: 'hi' }] });
    const api = new ApiClient('http://h/', () => null);
    const ref = { project: 'p', run: 'r/1' };
    expect(await api.histograms(ref, 'layer/w', 50)).toEqual([{ step: 1 }]);
    expect(await api.texts(ref, { limit: 500 })).toEqual([{ text: 'hi' }]);
    await api.texts(ref, { key: 'log', limit: 100, afterMs: 1764670000000.25 });
    const [h, t, after] = calls.map((c) => new URL(c.url));
    expect(h!.pathname).toBe('/api/v1/runs/p/r%2F1/histograms');
    expect(h!.searchParams.get('key')).toBe('layer/w');
    expect(h!.searchParams.get('limit')).toBe('50');
    expect(t!.pathname).toBe('/api/v1/runs/p/r%2F1/texts');
    expect(t!.searchParams.has('key')).toBe(false);
    expect(t!.searchParams.has('after_ms')).toBe(false);
    expect(after!.searchParams.get('key')).toBe('log');
    expect(after!.searchParams.get('after_ms')).toBe('1764670000000.25');
  });

  it('asks for one key of several runs in one request, as binary columns, and reads them as parsed series', async () => {
    // a bridge answer of two series with no points (layout: docs/http-api.md)
    const header = JSON.stringify({
      series: ['a', 'b/1'].map((run) => ({ project: 'p', run, key: 'k', x: 'step', start: null, end: null, width: 5, raw: true,
        total: 0, points: { n: 0, offset: 0 }, before: null, after: null })),
    });
    const text = new TextEncoder().encode(header);
    const body = new Uint8Array(8 + text.length + ((8 - ((8 + text.length) % 8)) % 8));
    body.set(new TextEncoder().encode('CSS1'));
    new DataView(body.buffer).setUint32(4, text.length, true);
    body.set(text, 8);
    const calls: { url: string; headers: Record<string, string> }[] = [];
    vi.stubGlobal('fetch', async (url: URL, init: { headers: Record<string, string> }) => {
      calls.push({ url: url.toString(), headers: init.headers });
      return new Response(body, { status: 200 });
    });
    const api = new ApiClient('http://h/', () => 'tok');
    const parsed = await api.seriesMany([{ project: 'p', run: 'a' }, { project: 'p', run: 'b/1' }], 'train/loss ü', { x: 'step', width: 5 });
    expect(parsed.map((p) => p.raw)).toEqual([true, true]);
    const url = new URL(calls[0]!.url);
    expect(url.pathname).toBe('/api/v1/series');
    expect(url.searchParams.getAll('run')).toEqual(['p/a', 'p/b%2F1']); // names encoded, then joined by '/'
    expect(url.searchParams.get('key')).toBe('train/loss ü');
    expect(calls[0]!.headers.Accept).toBe('application/vnd.curvestream.series');
    expect(calls[0]!.headers.Authorization).toBe('Bearer tok');
  });

  it('asks for several runs\' metrics in one request, one list per run in order, and none for no runs', async () => {
    const calls = fakeFetch({ runs: [{ project: 'p', run: 'a', metrics: [{ key: 'loss', count: 3 }] },
      { project: 'v/x', run: 'b 1', metrics: [] }] });
    const api = new ApiClient('http://h/', () => 'tok');
    const lists = await api.metricsMany([{ project: 'p', run: 'a' }, { project: 'v/x', run: 'b 1' }]);
    expect(lists).toEqual([[{ key: 'loss', count: 3 }], []]);
    const url = new URL(calls[0]!.url);
    expect(url.pathname).toBe('/api/v1/metrics');
    expect(url.searchParams.getAll('run')).toEqual(['p/a', 'v%2Fx/b%201']);
    expect(calls[0]!.headers.Authorization).toBe('Bearer tok');
    expect(await api.metricsMany([])).toEqual([]);
    expect(calls).toHaveLength(1);
  });

  it('refuses a metrics answer with another number of runs than asked', async () => {
    fakeFetch({ runs: [] });
    const error = await new ApiClient('http://h/', () => null).metricsMany([{ project: 'p', run: 'a' }]).catch((e: unknown) => e);
    expect(String(error)).toContain('1 runs asked, 0 answered');
  });
});
