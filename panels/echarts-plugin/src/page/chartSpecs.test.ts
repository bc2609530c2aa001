import { describe, expect, it } from 'vitest';
import { runKey } from '../core/runs';
import type { ApiMetric } from '../types/api';
import { sampleMetric } from '../testing/apiSamples';
import { chartsInfoText, curveSpecsFor, groupSpecsFor } from './chartSpecs';

const a = { project: 'p', run: 'a' };
const b = { project: 'p', run: 'b' };
const idA = runKey(a);
const metric = (key: string, extra: Partial<ApiMetric> = {}): ApiMetric => sampleMetric({ key, count: 1, ...extra });

describe('curveSpecsFor', () => {
  it('takes the selected runs that logged the key as a scalar, with their labels, colours and first point', () => {
    const specs = curveSpecsFor(
      'loss',
      [a, b],
      [[metric('loss', { first_ms: 500 })], [metric('loss', { kind: 'histogram' })]],
      new Map([[idA, 'run a']]),
      new Map([[idA, '#f00']]),
    );
    expect(specs).toEqual([{ ref: a, id: idA, name: 'run a', color: '#f00', originMs: 500 }]);
  });
});

describe('groupSpecsFor', () => {
  it('keeps only the runs on the chart, counts them in the name and leaves empty groups out', () => {
    const specs = [{ ref: a, id: idA, name: 'a', color: '#f00', originMs: null }];
    const groups = [
      { id: 'g1', label: 'lr=0.1', members: [a, b] },
      { id: 'g2', label: 'lr=1', members: [b] },
    ];
    expect(groupSpecsFor(groups, specs, new Map([['g1', '#0f0']]))).toEqual([
      { id: 'g1', name: 'lr=0.1 (1 run)', color: '#0f0', memberIds: [idA] },
    ]);
  });
});

describe('chartsInfoText', () => {
  it('asks for runs, tells of runs without metrics, or counts what is shown', () => {
    expect(chartsInfoText(0, 0, 0)).toBe('Select runs to plot their metrics.');
    expect(chartsInfoText(2, 0, 0)).toBe('The selected runs have no metrics yet.');
    expect(chartsInfoText(1, 12, 3)).toBe('3 of 12 metrics · 1 run');
    expect(chartsInfoText(2, 12, 12)).toBe('12 of 12 metrics · 2 runs');
  });
});
