import { describe, expect, it } from 'vitest';
import { computeLayers } from '../../core/layers';
import { buildChartOption, buildDataUpdate, type CurveChartOption } from '../../core/options';
import { LIGHT_THEME } from '../../core/theme';
import { DEFAULT_OPTIONS } from '../constants/defaults';
import type { HeldCurve } from '../types/curves';
import { chartModel, pointsInView } from './chartModel';

const curve = (id: string, name: string, step: number): HeldCurve => ({
  id,
  name,
  color: '#4e79a7',
  data: { x: [1000, 2000, 3000], y: [3, 2, 1], step: [step, step + 1, step + 2], timeMs: [1000, 2000, 3000] },
  dxRef: 1000,
});

describe('chartModel', () => {
  it('maps the panel options onto the core’s settings', () => {
    const options = { ...DEFAULT_OPTIONS, xAxis: 'field' as const, smoothing: 0.5, logY: true };
    const model = chartModel([curve('a', 'r1', 0)], options, LIGHT_THEME, 'Europe/Berlin', 800, null);
    expect(model.settings).toMatchObject({
      xMode: 'step',
      smoothing: 0.5,
      logY: true,
      showEnvelope: true,
      zoomSlider: true,
      timeZone: 'Europe/Berlin',
    });
    expect(model.series[0]).toMatchObject({ id: 'a', name: 'r1', dxRef: 1000 });
  });

  it('counts the points inside the zoomed window', () => {
    const model = chartModel(
      [curve('a', 'r1', 0), curve('b', 'r2', 0)],
      DEFAULT_OPTIONS,
      LIGHT_THEME,
      'browser',
      800,
      [1500, 3000],
    );
    expect(pointsInView(model)).toEqual({ r1: 2, r2: 2 });
    expect(pointsInView({ ...model, xWindow: null })).toEqual({ r1: 3, r2: 3 });
  });
});

describe('the panel’s chart option', () => {
  const tooltipOf = (option: CurveChartOption) =>
    (option.tooltip as { formatter: (p: unknown) => string }).formatter([{ axisValue: 2000 }]);

  it('leaves out the zoom slider when the option says so, and keeps wheel zoom', () => {
    const model = chartModel([curve('a', 'r1', 0)], { ...DEFAULT_OPTIONS, zoomSlider: false }, LIGHT_THEME, 'browser', 800, null);
    const zooms = buildChartOption(model).dataZoom as { type: string }[];
    expect(zooms.map((z) => z.type)).toEqual(['inside']);
    const withSlider = chartModel([curve('a', 'r1', 0)], DEFAULT_OPTIONS, LIGHT_THEME, 'browser', 800, null);
    expect((buildChartOption(withSlider).dataZoom as { type: string }[]).map((z) => z.type)).toEqual(['inside', 'slider']);
  });

  it('writes times in the dashboard’s time zone', () => {
    const model = chartModel([curve('a', 'r1', 0)], DEFAULT_OPTIONS, LIGHT_THEME, 'utc', 800, null);
    const option = buildChartOption(model);
    expect(option.useUTC).toBe(true);
    expect(tooltipOf(option)).toContain('1970-01-01 00:00:02');
  });

  it('lists every series in the tooltip, and leaves out steps the frames do not have', () => {
    const noStep = { ...curve('b', 'r2', 0), data: { ...curve('b', 'r2', 0).data, step: [NaN, NaN, NaN] } };
    const model = chartModel([curve('a', 'r1', 7), noStep], DEFAULT_OPTIONS, LIGHT_THEME, 'browser', 800, null);
    const html = tooltipOf(buildDataUpdate(model, computeLayers(model)));
    expect(html).toContain('r1');
    expect(html).toContain('r2');
    expect(html).toContain('step 8 ·');
    expect(html).not.toContain('NaN');
  });
});
