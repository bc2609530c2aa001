/**
 * How the page groups runs (the bridge computes the groups: `GET /api/v1/groups/series`)
 * and how it writes a config value, the same text the bridge filters and groups by
 * (`curvestream_bridge/configtext.py`).
 */

/** A config value as filters and groups show it: strings as they are, the rest as JSON. */
export function configValueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * How runs are grouped: `''` not at all, `'group'` by the run's group,
 * `'config:<key>'` by the value of a config key (a sweep's parameter).
 */
export type GroupBy = string;

const CONFIG_PREFIX = 'config:';

export function groupByConfigKey(key: string): GroupBy {
  return `${CONFIG_PREFIX}${key}`;
}

/** What a group's band shows: its runs' min–max, or the mean ± one standard deviation. */
export type GroupBandKind = 'minmax' | 'std';
