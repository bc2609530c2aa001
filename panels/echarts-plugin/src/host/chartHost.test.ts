import { describe, expect, it } from 'vitest';
import { LIGHT_THEME } from '../core/theme';
import type { ChartModel } from '../types/chart';
import { ChartHost } from './chartHost';

/** The parts of an ECharts instance the host calls, counting resizes and keeping the options set. */
function fakeECharts() {
  const calls = {
    resize: 0,
    options: [] as { option: Record<string, unknown>; replaceMerge: boolean }[],
    actions: [] as string[],
    handlers: new Map<string, () => void>(),
  };
  const chart = {
    id: 'ec_1',
    on: (event: string, handler: () => void) => {
      calls.handlers.set(event, handler);
    },
    dispatchAction: (action: { type: string }) => {
      calls.actions.push(action.type);
    },
    resize: () => {
      calls.resize += 1;
    },
    setOption: (option: Record<string, unknown>, opts?: { replaceMerge?: string[] }) => {
      calls.options.push({ option, replaceMerge: Boolean(opts?.replaceMerge?.includes('series')) });
    },
    getOption: () => ({}),
    dispose: () => undefined,
    isDisposed: () => false,
  };
  return { calls, init: (() => chart) as never };
}

describe('ChartHost.resize', () => {
  it('redraws only when its element changed size', () => {
    const element = { clientWidth: 800, clientHeight: 300 } as HTMLElement;
    const { calls, init } = fakeECharts();
    const host = new ChartHost(element, { init, zoomSettle: 100, onUserZoom: () => undefined });
    host.resize(); // a ResizeObserver's first report, right after the chart was made
    expect(calls.resize).toBe(0);
    (element as { clientWidth: number }).clientWidth = 640;
    host.resize();
    host.resize();
    expect(calls.resize).toBe(1);
    (element as { clientHeight: number }).clientHeight = 200;
    host.resize();
    expect(calls.resize).toBe(2);
  });
});

describe('ChartHost zoom gestures', () => {
  it('hides the tooltip when the user zooms, so that no redraw of the gesture lays it out again', () => {
    const element = { clientWidth: 800, clientHeight: 300 } as HTMLElement;
    const { calls, init } = fakeECharts();
    const host = new ChartHost(element, { init, zoomSettle: 100, onUserZoom: () => undefined });
    expect(calls.actions).toEqual([]);
    calls.handlers.get('datazoom')!();
    expect(calls.actions).toEqual(['hideTip']);
    host.dispose();
  });
});

function model(ys: number[], smoothing = 0): ChartModel {
  const x = ys.map((_, i) => i);
  return {
    series: [{ id: 'a', name: 'a', color: '#4e79a7', data: { x, y: ys, step: x, timeMs: x } }],
    settings: { xMode: 'step', logY: false, ignoreOutliers: false, smoothing, smoothingKind: 'ema', showEnvelope: true, theme: LIGHT_THEME },
    widthPx: 600,
    title: 'loss',
  };
}

describe('ChartHost.draw', () => {
  const element = { clientWidth: 800, clientHeight: 300 } as HTMLElement;
  const idsOf = (o: Record<string, unknown>) => (o.series as { id: string }[]).map((s) => s.id);

  it('sets only data while the drawn layers stay the same, and a full option when data adds or removes one', () => {
    const { calls, init } = fakeECharts();
    const host = new ChartHost(element, { init, zoomSettle: 100, onUserZoom: () => undefined });
    host.draw(model([1, 2]), true);
    host.draw(model([1, 2, 3]), false); // a live frame: data only
    host.draw(model([1, 2, 3, NaN]), false); // the first NaN needs the marker series
    host.draw(model([1, 2, 3, NaN, 5]), false);
    host.draw(model([1, 2]), false); // no NaN any more: its series goes
    expect(calls.options.map((c) => c.replaceMerge)).toEqual([true, false, true, false, true]);
    expect(calls.options.map((c) => idsOf(c.option))).toEqual([
      ['a|raw'],
      ['a|raw'],
      ['a|raw', 'a|non-finite'],
      ['a|raw', 'a|non-finite'],
      ['a|raw'],
    ]);
    // the full option carries the style a data update does not
    expect((calls.options[2]!.option.series as { name?: string }[])[1]!.name).toBe('a');
  });

  it('draws smoothing and its band as series of their own only while smoothing is on', () => {
    const { calls, init } = fakeECharts();
    const host = new ChartHost(element, { init, zoomSettle: 100, onUserZoom: () => undefined });
    host.draw(model([1, 2, 3], 0.6), true);
    host.draw(model([1, 2, 3, 4], 0.6), false);
    expect(calls.options.map((c) => idsOf(c.option))).toEqual([
      ['a|raw', 'a|smooth', 'a|env-lo', 'a|env-hi'],
      ['a|raw', 'a|smooth', 'a|env-lo', 'a|env-hi'],
    ]);
    expect(calls.options[1]!.replaceMerge).toBe(false);
  });
});
