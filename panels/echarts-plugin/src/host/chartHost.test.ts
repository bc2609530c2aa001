import { describe, expect, it } from 'vitest';
import { ChartHost } from './chartHost';

/** The parts of an ECharts instance the host calls, counting resizes. */
function fakeECharts() {
  const calls = { resize: 0 };
  const chart = {
    id: 'ec_1',
    on: () => undefined,
    resize: () => {
      calls.resize += 1;
    },
    setOption: () => undefined,
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
