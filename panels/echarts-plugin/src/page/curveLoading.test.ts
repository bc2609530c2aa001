import { describe, expect, it } from 'vitest';
import { LIVE_POINTS_PER_COLUMN } from '../constants/defaults';
import { countInRange } from '../core/series';
import type { ApiSeriesResponse, LiveSeriesFrame } from '../types/api';
import type { SeriesQuery } from './api';
import {
  drawnData,
  drawnPoints,
  drawnRaw,
  emptySeriesResponse,
  isLoading,
  loadCurve,
  loadCurves,
  newCurve,
  planLoad,
  queryBounds,
  receiveLive,
  resetCurve,
  type ChartView,
  type Curve,
  type FetchMany,
  type FetchSeries,
} from './curveLoading';
import { parseSeriesResponse, type ParsedSeries } from '../core/series';

const ref = { project: 'p', run: 'r' };

function curve(): Curve {
  return newCurve({ ref, id: 'p/r', name: 'r', color: '#123', originMs: null });
}

/** A bridge answer of steps `xs` (y = x / 10), `raw` or M4; `after` set when the range ends before the series does. */
function answer(query: SeriesQuery, xs: number[], opts: { raw?: boolean; after?: number } = {}): ApiSeriesResponse {
  const point = (x: number) => ({ x, y: x / 10, step: x, time_ms: 1000 * x });
  return {
    ...emptySeriesResponse(ref, 'loss', query),
    raw: opts.raw ?? true,
    total: xs.length,
    points: { x: xs, y: xs.map((x) => x / 10), step: xs, time_ms: xs.map((x) => 1000 * x) },
    after: opts.after === undefined ? null : point(opts.after),
  };
}

interface Asked {
  query: SeriesQuery;
  signal: AbortSignal;
  answer(response: ApiSeriesResponse): void;
  fail(error: Error): void;
}

/** A bridge whose answers the test gives, in the order it chooses. */
function bridge(): { fetch: FetchSeries; asked: Asked[]; next(): Promise<Asked> } {
  const asked: Asked[] = [];
  const waiting: ((a: Asked) => void)[] = [];
  const fetch: FetchSeries = (_curve, query, signal) =>
    new Promise<ApiSeriesResponse>((resolve, reject) => {
      const a = { query, signal, answer: resolve, fail: reject };
      asked.push(a);
      waiting.shift()?.(a);
    });
  let taken = 0;
  const next = () =>
    new Promise<Asked>((resolve) => {
      const a = asked[taken];
      taken++;
      if (a) resolve(a);
      else waiting.push(resolve);
    });
  return { fetch, asked, next };
}

const frame = (steps: number[]): LiveSeriesFrame => ({
  key: 'loss',
  step: steps,
  time_ms: steps.map((s) => 1000 * s),
  y: steps.map((s) => s / 10),
});

describe('planLoad', () => {
  const view: ChartView = { mode: 'step', widthPx: 640, window: [10.5, 20.2] };

  it('asks a curve never loaded for the whole series at the plot width, then the window in whole steps', () => {
    expect(planLoad(curve(), view, false)).toEqual({
      overview: { x: 'step', width: 640 },
      detail: { x: 'step', width: 640, start: 10, end: 21 },
    });
  });

  it('asks a loaded curve only for the window, unless the whole series is asked for', () => {
    const c = curve();
    c.loaded = true;
    expect(planLoad(c, view, false).overview).toBeNull();
    expect(planLoad(c, view, true).overview).toEqual({ x: 'step', width: 640 });
    expect(planLoad(c, { ...view, window: null }, false)).toEqual({ overview: null, detail: null });
  });

  it('keeps fractions of relative seconds, rounds steps and milliseconds outwards', () => {
    expect(queryBounds('relative', [1.25, 2.5])).toEqual([1.25, 2.5]);
    expect(queryBounds('time', [1000.4, 2000.2])).toEqual([1000, 2001]);
  });
});

describe('loadCurve', () => {
  const view: ChartView = { mode: 'step', widthPx: 100, window: null };

  it('takes the whole series, its raw flag and its mean spacing', async () => {
    const b = bridge();
    const c = curve();
    const done = loadCurve(c, view, true, b.fetch);
    expect(isLoading(c)).toBe(true);
    const a = await b.next();
    a.answer(answer(a.query, [0, 10, 20], { raw: false }));
    expect(await done).toBe(true);
    expect(isLoading(c)).toBe(false);
    expect(c.loaded).toBe(true);
    expect(drawnData(c).x).toEqual([0, 10, 20]);
    expect(drawnRaw(c)).toBe(false);
    expect(c.dxRef).toBe(10);
  });

  it('drops the answer of a query a newer one superseded, whatever order they answer in', async () => {
    const b = bridge();
    const c = curve();
    const older = loadCurve(c, view, true, b.fetch);
    const first = await b.next();
    const newer = loadCurve(c, view, true, b.fetch);
    const second = await b.next();
    expect(first.signal.aborted).toBe(true);
    second.answer(answer(second.query, [5, 6]));
    first.answer(answer(first.query, [1, 2, 3]));
    expect(await newer).toBe(true);
    expect(await older).toBe(false);
    expect(drawnData(c).x).toEqual([5, 6]);
  });

  it('splices the zoomed window at full detail into the coarse whole series', async () => {
    const b = bridge();
    const c = curve();
    const done = loadCurve(c, { ...view, window: [40, 60] }, false, b.fetch);
    const whole = await b.next();
    whole.answer(answer(whole.query, [0, 50, 100], { raw: false }));
    const window = await b.next();
    expect(window.query).toEqual({ x: 'step', width: 100, start: 40, end: 60 });
    window.answer({ ...answer(window.query, [40, 45, 50, 55, 60], { after: 61 }), before: { x: 39, y: 3.9, step: 39, time_ms: 39_000 } });
    expect(await done).toBe(true);
    expect(drawnData(c).x).toEqual([0, 39, 40, 45, 50, 55, 60, 61, 100]);
    expect(drawnRaw(c)).toBe(true);
  });

  it('keeps the ranges the bridge answered over: a snapped window and whole series wider than asked', async () => {
    const b = bridge();
    const c = curve();
    const done = loadCurve(c, { ...view, window: [40, 60] }, true, b.fetch);
    const whole = await b.next();
    whole.answer({ ...answer(whole.query, [0, 50, 100], { raw: false }), start: -3.5, end: 104.5 });
    const window = await b.next();
    window.answer({ ...answer(window.query, [40, 50, 60]), start: 39.5, end: 61.5 });
    expect(await done).toBe(true);
    expect(c.overviewRange).toEqual([-3.5, 104.5]);
    expect(c.detail).toMatchObject({ window: [40, 60], range: [39.5, 61.5] });
  });

  it('replays live points that came during the query onto its answer', async () => {
    const b = bridge();
    const c = curve();
    const done = loadCurve(c, view, true, b.fetch);
    const a = await b.next();
    expect(receiveLive(c, frame([3, 4]), view)).toBe(false); // nothing drawn yet: the answer brings them
    a.answer(answer(a.query, [0, 1, 2]));
    await done;
    expect(drawnData(c).x).toEqual([0, 1, 2, 3, 4]);
    expect(receiveLive(c, frame([5]), view)).toBe(true);
    expect(drawnData(c).x).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('keeps a failed query as the curve’s error, and a later answer clears it', async () => {
    const b = bridge();
    const c = curve();
    const failed = loadCurve(c, view, true, b.fetch);
    (await b.next()).fail(new Error('bridge down'));
    expect(await failed).toBe(true);
    expect(c.error).toBe('bridge down');
    expect(c.loaded).toBe(false);
    const retried = loadCurve(c, view, true, b.fetch);
    const a = await b.next();
    a.answer(answer(a.query, [1]));
    await retried;
    expect(c.error).toBeNull();
  });

  it('drops a running answer when the curve is reset (new x units)', async () => {
    const b = bridge();
    const c = curve();
    const done = loadCurve(c, view, true, b.fetch);
    const a = await b.next();
    resetCurve(c);
    expect(a.signal.aborted).toBe(true);
    a.answer(answer(a.query, [1, 2]));
    expect(await done).toBe(false);
    expect(drawnData(c).x).toEqual([]);
  });
});

describe('loadCurves', () => {
  interface AskedMany {
    curves: readonly Curve[];
    query: SeriesQuery;
    signal: AbortSignal;
    answer(xsPerCurve: number[][], opts?: { raw?: boolean }): void;
  }

  /** A bridge that answers a chart's one request per step, when the test says so. */
  function manyBridge(): { fetch: FetchMany; asked: AskedMany[] } {
    const asked: AskedMany[] = [];
    const fetch: FetchMany = (curves, query, signal) =>
      new Promise<ParsedSeries[]>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        asked.push({
          curves,
          query,
          signal,
          answer: (xs, opts = {}) => resolve(xs.map((x) => parseSeriesResponse(answer(query, x, opts)))),
        });
      });
    return { fetch, asked };
  }

  const many = (n: number) =>
    Array.from({ length: n }, (_, i) => newCurve({ ref: { project: 'p', run: `r${i}` }, id: `p/r${i}`, name: `r${i}`, color: '#123', originMs: null }));
  const settle = () => new Promise((r) => setTimeout(r, 0));

  it('asks once for the whole series of every curve, then once for the window of every curve', async () => {
    const b = manyBridge();
    const curves = many(10);
    const done = loadCurves(curves, { mode: 'step', widthPx: 100, window: [40, 60] }, true, b.fetch);
    await settle();
    expect(b.asked).toHaveLength(1);
    expect(b.asked[0]!.curves).toEqual(curves);
    expect(b.asked[0]!.query).toEqual({ x: 'step', width: 100 });
    b.asked[0]!.answer(curves.map(() => [0, 50, 100]), { raw: false });
    await settle();
    expect(b.asked).toHaveLength(2);
    expect(b.asked[1]!.query).toEqual({ x: 'step', width: 100, start: 40, end: 60 });
    b.asked[1]!.answer(curves.map((_, i) => [40 + i, 60]));
    expect(await done).toEqual(curves.map(() => true));
    expect(curves.map((c) => drawnData(c).x)).toEqual(curves.map((_, i) => [0, 40 + i, 60, 100]));
    expect(curves.some(isLoading)).toBe(false);
  });

  it('aborts a chart’s request once a newer zoom supersedes it for every curve, and draws only the newer answer', async () => {
    const b = manyBridge();
    const curves = many(3);
    for (const c of curves) c.loaded = true;
    const older = loadCurves(curves, { mode: 'step', widthPx: 100, window: [10, 20] }, false, b.fetch);
    await settle();
    const newer = loadCurves(curves, { mode: 'step', widthPx: 100, window: [12, 14] }, false, b.fetch);
    await settle();
    expect(b.asked.map((a) => a.signal.aborted)).toEqual([true, false]);
    b.asked[1]!.answer(curves.map(() => [12, 13, 14]));
    expect(await older).toEqual([false, false, false]);
    expect(await newer).toEqual([true, true, true]);
    expect(curves.map((c) => c.detail?.window)).toEqual(curves.map(() => [12, 14]));
  });

  it('keeps a request running while one of its curves still waits for it', async () => {
    const b = manyBridge();
    const curves = many(2);
    const chart = loadCurves(curves, { mode: 'step', widthPx: 100, window: null }, true, b.fetch);
    await settle();
    const one = loadCurves([curves[1]!], { mode: 'step', widthPx: 100, window: null }, true, b.fetch);
    await settle();
    expect(b.asked[0]!.signal.aborted).toBe(false);
    b.asked[0]!.answer([[1, 2], [1, 2]]);
    b.asked[1]!.answer([[7]]);
    expect(await chart).toEqual([true, false]);
    expect(await one).toEqual([true]);
    expect(drawnData(curves[0]!).x).toEqual([1, 2]);
    expect(drawnData(curves[1]!).x).toEqual([7]);
  });
});

describe('receiveLive', () => {
  it('downsamples the whole series once live points pass the budget of the plot width', () => {
    const c = curve();
    c.loaded = true;
    const widthPx = 4;
    const steps = Array.from({ length: LIVE_POINTS_PER_COLUMN * widthPx + 1 }, (_, i) => i);
    receiveLive(c, frame(steps), { mode: 'step', widthPx, window: null });
    expect(drawnRaw(c)).toBe(false);
    expect(drawnData(c).x.length).toBeLessThanOrEqual(4 * widthPx);
    expect(drawnData(c).x[drawnData(c).x.length - 1]).toBe(steps[steps.length - 1]);
  });

  it('grows a window that reached the series’ end up to the first point past it', async () => {
    const b = bridge();
    const c = curve();
    const view: ChartView = { mode: 'step', widthPx: 100, window: [5, 10] };
    const done = loadCurve(c, view, true, b.fetch);
    const whole = await b.next();
    whole.answer(answer(whole.query, [0, 5, 8]));
    const window = await b.next();
    window.answer(answer(window.query, [5, 8])); // no `after`: the window reached the end
    await done;
    receiveLive(c, frame([9, 11, 12]), view);
    expect(c.detail?.data.x).toEqual([5, 8, 9, 11]);
    expect(c.detail?.open).toBe(false);
    expect(drawnData(c).x).toEqual([0, 5, 8, 9, 11, 12]);
  });

  it('starts relative x at the run’s first point when nothing told it before', () => {
    const c = curve();
    c.loaded = true;
    receiveLive(c, frame([3, 4]), { mode: 'relative', widthPx: 100, window: null });
    expect(c.originMs).toBe(3000);
    expect(drawnData(c).x).toEqual([0, 1]);
  });
});

describe('emptySeriesResponse', () => {
  it('answers a run without the key with an empty raw curve for the same query', () => {
    expect(emptySeriesResponse(ref, 'loss', { x: 'time', width: 300, start: 1, end: 2 })).toMatchObject({
      key: 'loss',
      x: 'time',
      start: 1,
      end: 2,
      width: 300,
      raw: true,
      total: 0,
      points: { x: [], y: [], step: [], time_ms: [] },
    });
  });
});

describe('drawnPoints', () => {
  it('counts what the spliced curve holds in any window, without splicing', () => {
    const c = curve();
    const series = (xs: number[]) => ({ x: xs, y: xs, step: xs, timeMs: xs });
    c.overview = series([0, 10, 20, 30, 40, 50, 60]);
    const data = series([18, 20, 21, 22, 25, 30, 33, 40, 41]);
    c.detail = { window: [20, 40], range: [20, 40], data, raw: true, open: false };
    const drawn = drawnData(c);
    expect(drawnPoints(c, null)).toBe(drawn.x.length);
    for (const window of [[0, 60], [15, 45], [21, 22], [0, 19], [42, 60], [45, 55], [-5, 0], [61, 70]] as [number, number][]) {
      expect(drawnPoints(c, window)).toBe(countInRange(drawn, window[0], window[1]));
    }
    c.detail = null;
    expect(drawnPoints(c, [10, 30])).toBe(3);
  });
});
