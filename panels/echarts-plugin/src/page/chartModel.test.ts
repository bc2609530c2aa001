import { describe, expect, it } from 'vitest';
import { DEFAULT_VIEW } from '../constants/defaults';
import { LIGHT_THEME } from '../core/theme';
import { sampleAlert } from '../testing/apiSamples';
import type { ChartSettings } from '../types/chart';
import { chartModelOf } from './chartModel';
import { newCurve, type Curve } from './curveLoading';

const settings: ChartSettings = { ...DEFAULT_VIEW, theme: LIGHT_THEME };

function curve(run: string): Curve {
  const c = newCurve({ ref: { project: 'p', run }, id: `p/${run}`, name: run, color: '#123', originMs: null });
  c.overview = { x: [0, 10, 20], y: [3, 2, 1], step: [0, 10, 20], timeMs: [1, 2, 3] };
  return c;
}

const plateau = sampleAlert({
  project: 'p', run: 'a', key: 'loss', kind: 'plateau', step: 20, fired_step: 20, state: 'firing',
  message: 'loss has not improved', window: { from_step: 10, to_step: 20 },
});

describe('chartModelOf', () => {
  const curves = new Map([curve('a'), curve('b')].map((c) => [c.id, c]));
  const content = { key: 'loss', curves, groups: null, band: 'minmax' as const, settings, widthPx: 400, window: null };

  it('marks an alert on the curve of its run, with its window', () => {
    const { model } = chartModelOf({ ...content, alerts: [plateau] });
    const [a, b] = model.series;
    expect(a!.markers).toEqual([expect.objectContaining({ x: 20, y: 1, kind: 'plateau', window: [10, 20] })]);
    expect(b!.markers).toEqual([]);
  });

  it('draws no markers without alerts', () => {
    expect(chartModelOf(content).model.series.every((s) => s.markers === undefined)).toBe(true);
  });
});
