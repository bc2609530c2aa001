import { describe, expect, it } from 'vitest';
import { firstPageQuery, nextSort, rangeText, runsTableParams } from './runsQuery';

const none = { search: '', tag: '', group: '', configKey: '', configValue: '', alerting: false };

describe('runsTableParams', () => {
  it('names only the filters set, then sort and page, then the selected runs, in a fixed order', () => {
    const query = firstPageQuery({ ...none, search: 'lr 0.1', configKey: 'lr', configValue: '0.1', alerting: true }, 'run', [
      { project: 'p/x', run: 'r 1%' },
    ]);
    expect(runsTableParams(query)).toEqual([
      ['q', 'lr 0.1'],
      ['config_key', 'lr'],
      ['config_value', '0.1'],
      ['alerting', 'true'],
      ['sort', 'run'],
      ['offset', '0'],
      ['limit', '100'],
      ['run', 'p%2Fx/r%201%25'],
    ]);
  });

  it('leaves a config value out without its key, and a blank search out', () => {
    expect(runsTableParams(firstPageQuery({ ...none, search: '  ', configValue: '1' }, '-started', []))).toEqual([
      ['sort', '-started'],
      ['offset', '0'],
      ['limit', '100'],
    ]);
  });
});

describe('nextSort', () => {
  it('sorts a new column its own way first, and the other way on a second click', () => {
    expect(nextSort('-started', 'run')).toBe('run');
    expect(nextSort('run', 'run')).toBe('-run');
    expect(nextSort('-run', 'run')).toBe('run');
    expect(nextSort('run', 'points')).toBe('-points');
    expect(nextSort('-started', 'started')).toBe('started');
  });
});

describe('rangeText', () => {
  it('tells which rows of how many are shown', () => {
    expect(rangeText(0, 100, 10_000)).toBe('1–100 of 10,000');
    expect(rangeText(9_900, 100, 10_000)).toBe('9,901–10,000 of 10,000');
    expect(rangeText(0, 0, 0)).toBe('0 of 0');
  });
});
