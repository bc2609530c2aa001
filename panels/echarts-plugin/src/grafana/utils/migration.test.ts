import { describe, expect, it } from 'vitest';
import { DEFAULT_OPTIONS } from '../constants/defaults';
import { migrateOptions, normalizeOptions } from './migration';

const panel = (options: unknown, pluginVersion?: string) =>
  ({ id: 1, type: 'curvestream-echarts-panel', options, fieldConfig: { defaults: {}, overrides: [] }, pluginVersion }) as Parameters<
    typeof migrateOptions
  >[0];

describe('options migration', () => {
  it('gives every default to a panel saved without options (provisioned JSON)', () => {
    expect(migrateOptions(panel(undefined))).toEqual(DEFAULT_OPTIONS);
    expect(normalizeOptions(null)).toEqual(DEFAULT_OPTIONS);
  });

  it('keeps the options of the first release as they were', () => {
    const saved = { ...DEFAULT_OPTIONS, xAxis: 'field', stepField: 'epoch', smoothing: 0.6, smoothingKind: 'time', logY: true };
    expect(migrateOptions(panel(saved, '0.1.0'))).toEqual(saved);
  });

  it('repairs values of the wrong kind and clamps smoothing', () => {
    const repaired = migrateOptions(panel({ smoothing: 5, smoothingKind: 'gauss', logY: 'yes', stepField: '  ' }));
    expect(repaired.smoothing).toBe(0.999);
    expect(repaired.smoothingKind).toBe('ema');
    expect(repaired.logY).toBe(false);
    expect(repaired.stepField).toBe('step');
  });

  it('reads the bridge’s "step" x axis as the step field', () => {
    expect(normalizeOptions({ xAxis: 'step' }).xAxis).toBe('field');
  });
});
