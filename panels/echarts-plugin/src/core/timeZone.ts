import type { TimeZone } from '../types/chart';

/** A moment's calendar date and clock time in some time zone. */
export interface WallClock {
  year: number;
  /** 1..12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

// Building an Intl.DateTimeFormat is slow; a page or dashboard uses one or two zones.
const zoneFormats = new Map<string, Intl.DateTimeFormat | null>();

/** The formatter of an IANA zone, or null when the runtime does not know the name. */
function zoneFormat(zone: string): Intl.DateTimeFormat | null {
  let format = zoneFormats.get(zone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      format = null;
    }
    zoneFormats.set(zone, format);
  }
  return format;
}

/**
 * A host's time zone name as the core uses it: `utc`, `browser` (also for an
 * empty name and Grafana's `default`), or an IANA name such as
 * `Europe/Berlin`. A name the runtime does not know falls back to `browser`.
 */
export function resolveTimeZone(name: string | null | undefined): TimeZone {
  const trimmed = (name ?? '').trim();
  const lower = trimmed.toLowerCase();
  if (lower === '' || lower === 'browser' || lower === 'default') return 'browser';
  if (lower === 'utc') return 'utc';
  return zoneFormat(trimmed) ? trimmed : 'browser';
}

/** The wall clock of `ms` (epoch milliseconds) in `zone`. */
export function wallClock(ms: number, zone: TimeZone = 'browser'): WallClock {
  const d = new Date(ms);
  if (zone === 'utc') {
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
      millisecond: d.getUTCMilliseconds(),
    };
  }
  const format = zone === 'browser' ? null : zoneFormat(zone);
  if (!format) {
    return {
      year: d.getFullYear(),
      month: d.getMonth() + 1,
      day: d.getDate(),
      hour: d.getHours(),
      minute: d.getMinutes(),
      second: d.getSeconds(),
      millisecond: d.getMilliseconds(),
    };
  }
  const parts = format.formatToParts(d);
  const value = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value);
  return {
    year: value('year'),
    month: value('month'),
    day: value('day'),
    hour: value('hour'),
    minute: value('minute'),
    second: value('second'),
    // every zone's offset is whole seconds: the milliseconds are the same everywhere
    millisecond: d.getUTCMilliseconds(),
  };
}
