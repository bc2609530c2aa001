import { describe, expect, it } from 'vitest';
import { automaticSeriesName, decodeCurvestreamLabels, decodeStoredTag, formatSeriesName, seriesKey } from './labels';

describe('decodeStoredTag', () => {
  it('reverses the bridge’s percent-encoding of %, backslash and control characters', () => {
    expect(decodeStoredTag('a%25b%5Cc%0Ad')).toBe('a%b\\c\nd');
  });

  it('keeps any other text, Unicode and stray percent signs included', () => {
    expect(decodeStoredTag('val/loss, top-1 = "x" ü')).toBe('val/loss, top-1 = "x" ü');
    expect(decodeStoredTag('100%')).toBe('100%');
  });
});

describe('decodeCurvestreamLabels', () => {
  it('decodes project, run and metric only', () => {
    expect(decodeCurvestreamLabels({ run: 'lr%3D0.1%25', host: 'a%25' })).toEqual({ run: 'lr=0.1%', host: 'a%25' });
  });
});

describe('seriesKey', () => {
  it('matches frames whose labels differ only in _field, in any order', () => {
    const a = seriesKey({ _field: 'value', run: 'r1', metric: 'loss' }, 'A');
    const b = seriesKey({ metric: 'loss', run: 'r1', _field: 'step' }, 'A');
    expect(a).toBe(b);
    expect(seriesKey({ run: 'r1' }, 'B')).not.toBe(seriesKey({ run: 'r1' }, 'A'));
  });
});

describe('series names', () => {
  const parts = { labels: { run: 'r1', metric: 'train/loss' }, fieldName: '_value', displayName: '_value r1' };

  it('fills a template from labels and the field', () => {
    expect(formatSeriesName('${run} ${metric}', parts)).toBe('r1 train/loss');
    expect(formatSeriesName('${__field.labels.run}: ${__field.name}', parts)).toBe('r1: _value');
    expect(formatSeriesName('${missing} ${run}', parts)).toBe('r1');
  });

  it('names a series "run metric" by default, else by Grafana’s display name', () => {
    expect(automaticSeriesName(parts)).toBe('r1 train/loss');
    expect(automaticSeriesName({ ...parts, labels: { run: 'r1' } })).toBe('r1');
    expect(automaticSeriesName({ ...parts, labels: {} })).toBe('_value r1');
  });
});
