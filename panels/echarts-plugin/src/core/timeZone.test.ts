import { describe, expect, it } from 'vitest';
import { resolveTimeZone, wallClock } from './timeZone';

describe('resolveTimeZone', () => {
  it('knows Grafana’s names for UTC and the browser’s zone', () => {
    expect(resolveTimeZone('utc')).toBe('utc');
    expect(resolveTimeZone('UTC')).toBe('utc');
    expect(resolveTimeZone('browser')).toBe('browser');
    expect(resolveTimeZone('')).toBe('browser');
    expect(resolveTimeZone('default')).toBe('browser');
    expect(resolveTimeZone(undefined)).toBe('browser');
  });

  it('keeps an IANA name the runtime knows and falls back to the browser’s zone otherwise', () => {
    expect(resolveTimeZone('Europe/Berlin')).toBe('Europe/Berlin');
    expect(resolveTimeZone(' Asia/Tokyo ')).toBe('Asia/Tokyo');
    expect(resolveTimeZone('Mars/Olympus_Mons')).toBe('browser');
  });
});

describe('wallClock', () => {
  const ms = Date.UTC(2025, 2, 30, 0, 59, 59, 999); // 1 s before Berlin moves its clocks forward

  it('reads UTC', () => {
    expect(wallClock(ms, 'utc')).toEqual({ year: 2025, month: 3, day: 30, hour: 0, minute: 59, second: 59, millisecond: 999 });
  });

  it('reads an IANA zone across a daylight saving change', () => {
    expect(wallClock(ms, 'Europe/Berlin')).toMatchObject({ day: 30, hour: 1, minute: 59, second: 59, millisecond: 999 });
    expect(wallClock(ms + 1, 'Europe/Berlin')).toMatchObject({ day: 30, hour: 3, minute: 0, second: 0, millisecond: 0 });
  });

  it('reads the browser’s zone by default, and for a name it does not know', () => {
    const d = new Date(ms);
    const local = { year: d.getFullYear(), month: d.getMonth() + 1, day: d.getDate(), hour: d.getHours(), minute: d.getMinutes(), second: d.getSeconds(), millisecond: 999 };
    expect(wallClock(ms)).toEqual(local);
    expect(wallClock(ms, 'Mars/Olympus_Mons')).toEqual(local);
  });

  it('reads midnight as hour 0, not 24', () => {
    expect(wallClock(Date.UTC(2025, 0, 1, 15), 'Asia/Tokyo')).toMatchObject({ day: 2, hour: 0 });
  });
});
