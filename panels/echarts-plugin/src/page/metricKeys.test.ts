import { describe, expect, it } from 'vitest';
import { sampleMetric } from '../testing/apiSamples';
import { filterMetricKeys, firstPointMs, unionMetricKeys } from './metricKeys';

/** A scalar metric; no first time (NaN) unless given. */
const m = (key: string, first_ms = NaN) => sampleMetric({ key, count: 1, first_ms });

describe('metric keys', () => {
  it('unites and sorts keys naturally, keeping any characters', () => {
    const keys = unionMetricKeys([
      [m('layer10/norm'), m('train/loss')],
      [m('layer2/norm'), m('train/loss'), m('ü, "q"=1 / x')],
    ]);
    expect(keys).toEqual(['layer2/norm', 'layer10/norm', 'train/loss', 'ü, "q"=1 / x']);
  });

  it('charts only scalar metrics', () => {
    const keys = unionMetricKeys([[m('loss'), sampleMetric({ key: 'log', count: 3, kind: 'text' }), sampleMetric({ key: 'acc', count: 1, kind: 'scalar' })]]);
    expect(keys).toEqual(['acc', 'loss']);
  });

  it('filters by words', () => {
    expect(filterMetricKeys(['train/loss', 'val/loss', 'train/acc'], 'TRAIN loss')).toEqual(['train/loss']);
    expect(filterMetricKeys(['a'], '  ')).toEqual(['a']);
  });

  it('finds the run first point time', () => {
    expect(firstPointMs([m('a', 20), m('b', 10), m('c')])).toBe(10);
    expect(firstPointMs([m('a')])).toBeNull();
  });
});
