import { describe, expect, it } from 'vitest';
import type { ApiAlert } from '../types/api';
import { sampleAlert } from '../testing/apiSamples';
import type { SeriesData } from '../types/chart';
import { ALERT_COLORS, alertMarkers, chartAlertsText, markerOptions } from './alerts';

const ref = { project: 'mnist', run: 'r1' };

function alert(overrides: Partial<ApiAlert>): ApiAlert {
  return sampleAlert({ project: 'mnist', run: 'r1', key: 'loss', step: 20, kind: 'spike', message: 'loss jumped 40×', ...overrides });
}

// steps 0, 10, 20, 30 at one point per second, starting at t = 1e12 ms
const data: SeriesData = {
  x: [0, 10, 20, 30],
  y: [1, 0.5, 20, NaN],
  step: [0, 10, 20, 30],
  timeMs: [1e12, 1e12 + 1000, 1e12 + 2000, 1e12 + 3000],
};
const byTime: SeriesData = { ...data, x: data.timeMs.slice() };

describe('alertMarkers', () => {
  it('puts a line at the step and a pin at the curve’s value', () => {
    const [m, ...rest] = alertMarkers([alert({})], ref, 'loss', data, 'step');
    expect(rest).toEqual([]);
    expect(m).toEqual({ x: 20, y: 20, kind: 'spike', label: 'spike', detail: 'spike at step 20: loss jumped 40×' });
  });

  it('keeps only the alerts of this run and key, once per kind and step, in x order', () => {
    const alerts = [
      alert({ step: 30, kind: 'nonfinite', message: 'NaN in loss' }),
      alert({ run: 'r2' }),
      alert({ key: 'acc' }),
      alert({ project: 'cifar' }),
      alert({}),
      alert({}),
      alert({ step: 10, kind: 'plateau', message: '' }),
    ];
    const markers = alertMarkers(alerts, ref, 'loss', data, 'step');
    expect(markers.map((m) => [m.x, m.kind, m.y])).toEqual([
      [10, 'plateau', 0.5],
      [20, 'spike', 20],
      [30, 'nonfinite', null],
    ]);
    expect(markers[0]!.detail).toBe('plateau at step 10');
  });

  it('places a step on a time axis, between points when the curve skipped it', () => {
    const markers = alertMarkers([alert({}), alert({ step: 15, kind: 'plateau' })], ref, 'loss', byTime, 'time');
    expect(markers.map((m) => [m.x, m.y])).toEqual([
      [1e12 + 1500, null],
      [1e12 + 2000, 20],
    ]);
  });

  it('leaves out steps a time axis cannot place', () => {
    expect(alertMarkers([alert({ step: 99 })], ref, 'loss', byTime, 'time')).toEqual([]);
    expect(alertMarkers([alert({})], ref, 'loss', { x: [], y: [], step: [], timeMs: [] }, 'relative')).toEqual([]);
  });

  it('marks where a resolved alert fired, with its window as a band', () => {
    const resolved = alert({ kind: 'plateau', state: 'resolved', step: 30, fired_step: 20,
                             window: { from_step: 10, to_step: 20 } });
    const [m] = alertMarkers([resolved], ref, 'loss', data, 'step');
    expect(m).toMatchObject({ x: 20, y: 20, kind: 'plateau', window: [10, 20] });
    const band = (markerOptions([m!]).markArea as { data: { xAxis: number }[][] }).data;
    expect(band.map(([a, b]) => [a!.xAxis, b!.xAxis])).toEqual([[10, 20]]);
  });

  it('marks an alert about the whole run on every curve of the run, without a pin', () => {
    const stalled = alert({ kind: 'stalled', key: '', step: 20, message: 'no point for 300 s' });
    expect(alertMarkers([stalled], ref, 'loss', data, 'step')).toMatchObject([{ x: 20, y: null, kind: 'stalled' }]);
    expect(alertMarkers([stalled], ref, 'acc', data, 'step')).toHaveLength(1);
    expect(alertMarkers([stalled], { project: 'mnist', run: 'r2' }, 'loss', data, 'step')).toEqual([]);
  });

  it('marks each alert a training script raised with its title, on every curve of the run', () => {
    const raised = [
      alert({ id: 'c1', kind: 'code', rule: 'Low accuracy', key: '', step: 10, message: 'acc 0.41' }),
      alert({ id: 'c2', kind: 'code', rule: 'Slow epoch', key: '', step: 10, message: '' }),
    ];
    expect(alertMarkers(raised, ref, 'acc', data, 'step')).toEqual([
      { x: 10, y: null, kind: 'code', label: 'Low accuracy', detail: 'Low accuracy at step 10: acc 0.41' },
      { x: 10, y: null, kind: 'code', label: 'Slow epoch', detail: 'Slow epoch at step 10' },
    ]);
  });

  it('has no pin where the curve has no point at that step', () => {
    expect(alertMarkers([alert({ step: 25 })], ref, 'loss', data, 'step')[0]).toMatchObject({ x: 25, y: null });
  });
});

describe('markerOptions', () => {
  const markers = alertMarkers(
    [alert({}), alert({ step: 30, kind: 'nonfinite', message: 'NaN' }), alert({ step: 0, kind: 'plateau' })],
    ref,
    'loss',
    { ...data, y: [-1, 0.5, 20, NaN] },
    'step',
  );

  it('gives a coloured, labelled dashed line per marker and a pin per known value', () => {
    const option = markerOptions(markers);
    const lines = (option.markLine as { data: { xAxis: number; lineStyle: { color: string } }[] }).data;
    expect(lines.map((l) => l.xAxis)).toEqual([0, 20, 30]);
    expect(lines[2]!.lineStyle.color).toBe(ALERT_COLORS.nonfinite);
    const pins = (option.markPoint as { data: { coord: number[] }[] }).data;
    expect(pins.map((p) => p.coord)).toEqual([
      [0, -1],
      [20, 20],
    ]);
  });

  it('drops pins at values a log axis cannot show', () => {
    const pins = (markerOptions(markers, true).markPoint as { data: { coord: number[] }[] }).data;
    expect(pins.map((p) => p.coord)).toEqual([[20, 20]]);
  });
});

describe('chartAlertsText', () => {
  const refs = [ref];

  it('is the same when only other runs or keys gain alerts', () => {
    const none = chartAlertsText([], refs, 'loss');
    expect(chartAlertsText([alert({ run: 'other' }), alert({ key: 'acc' })], refs, 'loss')).toBe(none);
  });

  it('changes when an alert of the chart\'s runs and key (or of a whole run) comes, changes or goes', () => {
    const none = chartAlertsText([], refs, 'loss');
    const firing = chartAlertsText([alert({ key: 'loss' })], refs, 'loss');
    expect(firing).not.toBe(none);
    expect(chartAlertsText([alert({ key: '' })], refs, 'loss')).not.toBe(none);
    expect(chartAlertsText([alert({ key: 'loss', state: 'resolved' })], refs, 'loss')).not.toBe(firing);
  });
});
