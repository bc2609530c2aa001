import { describe, expect, it } from 'vitest';
import { configValueText, groupByConfigKey } from './groups';

describe('configValueText', () => {
  it('writes what the bridge filters and groups by (configtext.py: the same examples)', () => {
    const values = ['a b', 0.1, 1e-5, 1.0, 2e21, -0, true, null, [1, 0.5], { k: 'ü' }];
    expect(values.map(configValueText)).toEqual(['a b', '0.1', '0.00001', '1', '2e+21', '0', 'true', 'null', '[1,0.5]', '{"k":"ü"}']);
  });
});

describe('groupByConfigKey', () => {
  it('names a grouping by a config key as the bridge takes it', () => {
    expect(groupByConfigKey('lr')).toBe('config:lr');
  });
});
