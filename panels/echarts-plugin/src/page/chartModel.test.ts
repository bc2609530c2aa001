import { describe, expect, it } from 'vitest';
import { DEFAULT_VIEW } from '../constants/defaults';
import { LIGHT_THEME } from '../core/theme';
import { sampleAlert } from '../testing/apiSamples';
import type { ChartSettings } from '../types/chart';
import type { ApiGroup } from '../types/api';
import { chartModelOf, groupBand, groupId, groupMean, groupName, shownWindow } from './chartModel';
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

const curves = new Map([curve('a'), curve('b')].map((c) => [c.id, c]));
const content = { key: 'loss', curves, groups: null, settings, widthPx: 400, window: null };

describe('chartModelOf', () => {

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

describe('the range a chart shows', () => {
  const settingsOf = { key: 'loss', groups: null, band: 'minmax' as const, settings, widthPx: 400 };

  it('is the answered whole range when the bridge widened it, grown to the points', () => {
    const a = curve('a');
    const b = curve('b');
    a.overviewRange = [-0.5, 23.5];
    b.overviewRange = [-0.5, 23.5];
    b.overview = { ...b.overview, x: [0, 10, 30] }; // a live point past the answered range
    const curves = new Map([a, b].map((c) => [c.id, c]));
    expect(chartModelOf({ ...settingsOf, curves, window: null }).model.xExtent).toEqual([-0.5, 30]);
  });

  it("is the data's when the answer covered just the points", () => {
    const a = curve('a');
    a.overviewRange = [0, 20];
    const curves = new Map([[a.id, a]]);
    expect(chartModelOf({ ...settingsOf, curves, window: null }).model.xExtent).toBeNull();
  });

  it('is the window as every curve was answered over it, else the window itself', () => {
    const a = curve('a');
    const b = curve('b');
    const detail = (range: [number, number]) =>
      ({ window: [5, 15] as [number, number], range, data: a.overview, raw: true, open: false });
    a.detail = detail([4.5, 15.5]);
    b.detail = detail([4.5, 15.5]);
    const curves = new Map([a, b].map((c) => [c.id, c]));
    expect(shownWindow({ ...settingsOf, curves, window: [5, 15] })).toEqual([4.5, 15.5]);
    expect(chartModelOf({ ...settingsOf, curves, window: [5, 15] }).model.xWindow).toEqual([4.5, 15.5]);
    expect(shownWindow({ ...settingsOf, curves, window: [6, 15] })).toEqual([6, 15]); // a newer zoom, not answered yet
    b.detail = detail([5, 15]);
    expect(shownWindow({ ...settingsOf, curves, window: [5, 15] })).toEqual([5, 15]); // answers that differ
  });
});

describe('groups from the bridge', () => {
  const group: ApiGroup = {
    value: '0.1',
    label: 'lr=0.1',
    runs: [{ project: 'p', run: 'a' }, { project: 'p', run: 'b' }],
    non_finite: 1,
    columns: {
      column: [0, 4],
      x: [10, 52],
      step: [10, 51.6],
      time_ms: [1000, null],
      mean: [2, 'NaN'],
      std: [1, 0],
      min: [1, '-Infinity'],
      max: [3, 5],
      count: [2, 0],
    },
  };

  it('draws a mean line and a min–max or ±std band per group, named with its runs', () => {
    expect(groupName(group)).toBe('lr=0.1 (2 runs)');
    expect(groupMean(group)).toEqual({ x: [10, 52], y: [2, NaN], step: [10, 52], timeMs: [1000, NaN] });
    expect(groupBand(group, 'minmax')).toEqual({ x: [10, 52], lo: [1, -Infinity], hi: [3, 5] });
    expect(groupBand(group, 'std')).toEqual({ x: [10, 52], lo: [1, NaN], hi: [3, NaN] });
  });

  it('makes one series per group with runs, coloured by its id, instead of the runs', () => {
    const answer = { key: 'loss', x: 'step' as const, group_by: 'config:lr', start: 0, end: 60, width: 5, groups: [group] };
    const colorOf = (id: string) => (id === groupId('config:lr', '0.1') ? '#0f0' : '#000');
    const { model, groupNonFinite } = chartModelOf({ ...content, groups: { answer, band: 'minmax', colorOf } });
    expect(model.series.map((s) => [s.id, s.name, s.color])).toEqual([[groupId('config:lr', '0.1'), 'lr=0.1 (2 runs)', '#0f0']]);
    expect(groupNonFinite).toBe(1);
    expect(chartModelOf({ ...content, groups: { answer: null, band: 'minmax', colorOf } }).model.series).toEqual([]);
  });
});
