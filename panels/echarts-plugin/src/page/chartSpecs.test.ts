import { describe, expect, it } from 'vitest';
import { chartsInfoText } from './chartSpecs';

describe('chartsInfoText', () => {
  it('asks for runs, tells of runs without metrics, or counts what is shown', () => {
    expect(chartsInfoText(0, 0, 0)).toBe('Select runs to plot their metrics.');
    expect(chartsInfoText(2, 0, 0)).toBe('The selected runs have no metrics yet.');
    expect(chartsInfoText(1, 12, 3)).toBe('3 of 12 metrics · 1 run');
    expect(chartsInfoText(2, 12, 12)).toBe('12 of 12 metrics · 2 runs');
  });
});
