import { describe, expect, it } from 'vitest';
import type { RunRef } from '../core/runs';
import type { ApiMetric } from '../types/api';
import { sampleMetric } from '../testing/apiSamples';
import { RunMetrics } from './runMetrics';

const a = { project: 'p', run: 'a' };
const b = { project: 'p', run: 'b' };
const c = { project: 'q', run: 'a/b' };

function metric(key: string): ApiMetric {
  return sampleMetric({ key, kind: 'scalar', count: 1 });
}

/** A fake many-runs endpoint: each call recorded, answered when `answer` is called (or at once). */
function endpoint(atOnce = true) {
  const calls: RunRef[][] = [];
  const waiting: (() => void)[] = [];
  const fetchMetrics = (refs: readonly RunRef[]) => {
    calls.push([...refs]);
    const lists = refs.map((r) => [metric(`${r.run}/loss`)]);
    if (atOnce) return Promise.resolve(lists);
    return new Promise<ApiMetric[][]>((resolve) => waiting.push(() => resolve(lists)));
  };
  return { calls, fetchMetrics, answer: () => waiting.shift()?.() };
}

describe('RunMetrics', () => {
  it('asks once for all the runs not known yet, and keeps each run its own list', async () => {
    const api = endpoint();
    const metrics = new RunMetrics(api.fetchMetrics, () => {});
    await metrics.load([a, b]);
    await metrics.load([a, b, c]);
    expect(api.calls).toEqual([[a, b], [c]]);
    expect(metrics.get(b)).toEqual([metric('b/loss')]);
    expect(metrics.get(c)).toEqual([metric('a/b/loss')]);
    expect(metrics.get({ project: 'p', run: 'nowhere' })).toBeUndefined();
  });

  it('waits for a run already being asked for instead of asking again', async () => {
    const api = endpoint(false);
    const metrics = new RunMetrics(api.fetchMetrics, () => {});
    const first = metrics.load([a]);
    const second = metrics.load([a, b, b]);
    expect(api.calls).toEqual([[a], [b]]);
    let done = false;
    void second.then(() => (done = true));
    api.answer();
    await first;
    expect(metrics.get(a)).toBeDefined();
    expect(done).toBe(false); // b is still being asked for
    api.answer();
    await second;
    expect(metrics.get(b)).toEqual([metric('b/loss')]);
  });

  it('asks again for known runs when told to', async () => {
    const api = endpoint();
    const metrics = new RunMetrics(api.fetchMetrics, () => {});
    await metrics.load([a]);
    await metrics.load([a], true);
    expect(api.calls).toEqual([[a], [a]]);
  });

  it('reports a failed request and leaves its runs unknown, so the next load asks again', async () => {
    const errors: unknown[] = [];
    let fail = true;
    const calls: RunRef[][] = [];
    const metrics = new RunMetrics(async (refs) => {
      calls.push([...refs]);
      if (fail) throw new Error('503 store unavailable');
      return refs.map(() => []);
    }, (e) => errors.push(e));
    await metrics.load([a, b]);
    expect(errors).toHaveLength(1);
    expect(metrics.get(a)).toBeUndefined();
    fail = false;
    await metrics.load([a, b]);
    expect(calls).toEqual([[a, b], [a, b]]);
    expect(metrics.get(a)).toEqual([]);
  });
});
