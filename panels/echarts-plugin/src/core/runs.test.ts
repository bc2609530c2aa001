import { describe, expect, it } from 'vitest';
import { runKey, runLabels, sameRun } from './runs';

describe('runKey', () => {
  it('keeps runs apart even when names hold slashes', () => {
    expect(runKey({ project: 'a/b', run: 'c' })).not.toBe(runKey({ project: 'a', run: 'b/c' }));
    expect(sameRun({ project: 'p', run: 'r' }, { project: 'p', run: 'r' })).toBe(true);
  });
});

describe('runLabels', () => {
  it('uses the run name alone unless two projects share it', () => {
    const refs = [
      { project: 'mnist', run: 'lr=0.1' },
      { project: 'cifar', run: 'lr=0.1' },
      { project: 'mnist', run: 'baseline' },
    ];
    const labels = runLabels(refs);
    expect(labels.get(runKey(refs[0]!))).toBe('mnist/lr=0.1');
    expect(labels.get(runKey(refs[1]!))).toBe('cifar/lr=0.1');
    expect(labels.get(runKey(refs[2]!))).toBe('baseline');
  });
});
