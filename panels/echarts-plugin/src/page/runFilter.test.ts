import { describe, expect, it } from 'vitest';
import type { ApiRun } from '../types/api';
import { sampleRun } from '../testing/apiSamples';
import { configValues, configValueText, filterChoices, filterRuns, matchesRun, newestRun, type RunFilter } from './runFilter';

function run(overrides: Partial<ApiRun>): ApiRun {
  return sampleRun({ project: 'mnist', run: 'r', state: 'finished', tags: [], group: '', config: {}, ...overrides });
}

const none: RunFilter = { search: '', tag: '', group: '', configKey: '', configValue: '' };

const runs = [
  run({ run: 'old', started_ms: 1, tags: ['baseline'], group: 'sweep-1', config: { lr: 0.1, opt: 'adam' } }),
  run({ run: 'new', started_ms: 3, state: 'running', tags: ['wide'], group: 'sweep-2', config: { lr: 0.01, nested: { a: 1 } } }),
  run({ project: 'cifar', run: 'mid', started_ms: 2, host: 'gpu-7', config: { lr: 0.1 } }),
];

describe('filterRuns', () => {
  it('lists newest first', () => {
    expect(filterRuns(runs, none).map((r) => r.run)).toEqual(['new', 'mid', 'old']);
    expect(newestRun(runs)?.run).toBe('new');
    expect(newestRun([])).toBeNull();
  });

  it('keeps only runs with firing alerts when asked', () => {
    const withAlerts = [...runs, run({ run: 'alerting', started_ms: 4, alerts_firing: 2 })];
    expect(filterRuns(withAlerts, { ...none, alerting: true }).map((r) => r.run)).toEqual(['alerting']);
    expect(filterRuns(withAlerts, none)).toHaveLength(4);
  });

  it('filters by tag and group', () => {
    expect(filterRuns(runs, { ...none, tag: 'baseline' }).map((r) => r.run)).toEqual(['old']);
    expect(filterRuns(runs, { ...none, group: 'sweep-2' }).map((r) => r.run)).toEqual(['new']);
  });

  it('filters by any config key, and by its value as text', () => {
    expect(filterRuns(runs, { ...none, configKey: 'opt' }).map((r) => r.run)).toEqual(['old']);
    expect(filterRuns(runs, { ...none, configKey: 'lr', configValue: '0.1' }).map((r) => r.run)).toEqual(['mid', 'old']);
    expect(filterRuns(runs, { ...none, configKey: 'nested', configValue: '{"a":1}' }).map((r) => r.run)).toEqual(['new']);
  });

  it('searches every word across names, state, host and config', () => {
    expect(filterRuns(runs, { ...none, search: 'CIFAR gpu' }).map((r) => r.run)).toEqual(['mid']);
    expect(filterRuns(runs, { ...none, search: 'running' }).map((r) => r.run)).toEqual(['new']);
    expect(filterRuns(runs, { ...none, search: 'opt=adam' }).map((r) => r.run)).toEqual(['old']);
    expect(matchesRun(runs[0]!, { ...none, search: 'nothing-like-this' })).toBe(false);
  });
});

describe('filter choices', () => {
  it('collect tags, groups and config keys', () => {
    expect(filterChoices(runs)).toEqual({
      tags: ['baseline', 'wide'],
      groups: ['sweep-1', 'sweep-2'],
      configKeys: ['lr', 'nested', 'opt'],
    });
  });

  it('collect the values of a config key', () => {
    expect(configValues(runs, 'lr')).toEqual(['0.01', '0.1']);
  });

  it('show strings plainly and the rest as JSON', () => {
    expect(configValueText('adam')).toBe('adam');
    expect(configValueText(true)).toBe('true');
    expect(configValueText(null)).toBe('null');
    expect(configValueText([1, 2])).toBe('[1,2]');
  });
});
