import { describe, expect, it } from 'vitest';
import { decodeRunParam, defaultViewState, encodeRunParam, parseViewState, serializeViewState } from './urlState';

describe('run parameters', () => {
  it('round-trip names holding slashes, spaces and Unicode', () => {
    const ref = { project: 'vision/mnist', run: 'lr=0.1 bs=64 «β»' };
    expect(decodeRunParam(encodeRunParam(ref))).toEqual(ref);
    expect(encodeRunParam(ref).split('/')).toHaveLength(2);
  });

  it('reject malformed values', () => {
    expect(decodeRunParam('noslash')).toBeNull();
    expect(decodeRunParam('/run')).toBeNull();
    expect(decodeRunParam('p/%E0%A4%A')).toBeNull();
  });
});

describe('view state in the URL', () => {
  it('is empty for the default view', () => {
    expect(serializeViewState(defaultViewState())).toBe('');
    expect(parseViewState('')).toEqual(defaultViewState());
  });

  it('round-trips a full view', () => {
    const state = {
      ...defaultViewState(),
      runs: [
        { project: 'p/1', run: 'a&b=c' },
        { project: 'p', run: 'r 2' },
      ],
      xMode: 'relative' as const,
      smoothing: 0.85,
      smoothingKind: 'time' as const,
      logY: true,
      ignoreOutliers: true,
      showEnvelope: false,
      zoom: [12.5, 400] as [number, number],
      search: 'baseline',
      tag: 't1',
      group: 'sweep',
      configKey: 'lr',
      configValue: '0.1',
      alerting: true,
      metricFilter: 'loss',
      groupBy: 'config:lr',
      groupBand: 'std' as const,
      tab: 'run' as const,
      focus: { project: 'p', run: 'r 2' },
      full: 'train/loss & more',
    };
    const text = serializeViewState(state);
    expect(parseViewState(text)).toEqual(state);
    expect(parseViewState(text.replace('?', '#'))).toEqual(state);
  });

  it('ignores values it cannot use', () => {
    const state = parseViewState('?x=weird&smooth=abc&zoom=5,1&run=bad&smooth_kind=gauss&tab=nope&focus=bad&group_band=x');
    expect(state.tab).toBe('charts');
    expect(state.focus).toBeNull();
    expect(state.full).toBeNull();
    expect(state.groupBand).toBe('minmax');
    expect(state.xMode).toBe('step');
    expect(state.smoothing).toBe(0);
    expect(state.zoom).toBeNull();
    expect(state.runs).toEqual([]);
    expect(state.smoothingKind).toBe('ema');
  });

  it('clamps smoothing and drops duplicate runs', () => {
    const state = parseViewState('?smooth=5&run=p/r&run=p/r');
    expect(state.smoothing).toBe(0.999);
    expect(state.runs).toHaveLength(1);
  });
});
