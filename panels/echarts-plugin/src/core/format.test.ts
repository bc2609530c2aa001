import { describe, expect, it } from 'vitest';
import {
  escapeHtml,
  formatAxisValue,
  formatCompact,
  formatAxisTime,
  formatDuration,
  formatStep,
  formatTime,
  formatValue,
} from './format';

describe('formatValue', () => {
  it('names non-finite values', () => {
    expect([NaN, Infinity, -Infinity].map(formatValue)).toEqual(['NaN', '+Inf', '-Inf']);
  });

  it('keeps 6 significant digits and drops trailing zeros', () => {
    expect(formatValue(0.0312345678)).toBe('0.0312346');
    expect(formatValue(2.5)).toBe('2.5');
    expect(formatValue(100)).toBe('100');
    expect(formatValue(0)).toBe('0');
  });

  it('switches to exponent notation for very large and very small values', () => {
    expect(formatValue(1.5e-7)).toBe('1.5e-7');
    expect(formatValue(-2.25e9)).toBe('-2.25e+9');
  });
});

describe('axis and compact formats', () => {
  it('shortens labels', () => {
    expect(formatAxisValue(0.123456)).toBe('0.1235');
    expect(formatAxisValue(25000)).toBe('25k');
    expect(formatAxisValue(0.00002)).toBe('2e-5');
    expect(formatCompact(1234)).toBe('1.23k');
    expect(formatCompact(3_000_000)).toBe('3M');
    expect(formatCompact(512)).toBe('512');
  });

  it('groups step digits', () => {
    expect(formatStep(1234567)).toBe('1,234,567');
    expect(formatStep(-1000)).toBe('-1,000');
    expect(formatStep(12)).toBe('12');
  });
});

describe('formatDuration', () => {
  it('picks two units', () => {
    expect(formatDuration(0.25)).toBe('250ms');
    expect(formatDuration(4.25)).toBe('4.3s');
    expect(formatDuration(42)).toBe('42s');
    expect(formatDuration(185)).toBe('3m 05s');
    expect(formatDuration(3720)).toBe('1h 02m');
    expect(formatDuration(2 * 86400 + 3 * 3600)).toBe('2d 03h');
  });
});

describe('formatTime', () => {
  const ms = Date.UTC(2025, 11, 2, 9, 5, 7);

  it('writes a sortable timestamp', () => {
    expect(formatTime(ms, 'utc')).toBe('2025-12-02 09:05:07');
    expect(formatTime(NaN)).toBe('—');
  });

  it('writes it in the browser’s zone by default, or in an IANA zone', () => {
    const d = new Date(ms);
    const p2 = (n: number) => String(n).padStart(2, '0');
    expect(formatTime(ms)).toBe(
      `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:07`,
    );
    expect(formatTime(ms, 'Asia/Kolkata')).toBe('2025-12-02 14:35:07');
    expect(formatTime(ms, 'America/New_York')).toBe('2025-12-02 04:05:07');
  });
});

describe('formatAxisTime', () => {
  it('is as short as the moment allows', () => {
    expect(formatAxisTime(Date.UTC(2025, 11, 2), 'utc')).toBe('12-02');
    expect(formatAxisTime(Date.UTC(2025, 11, 2, 9, 5), 'utc')).toBe('09:05');
    expect(formatAxisTime(Date.UTC(2025, 11, 2, 9, 5, 7), 'utc')).toBe('09:05:07');
    expect(formatAxisTime(Date.UTC(2025, 11, 2, 9, 5, 7, 25), 'utc')).toBe('09:05:07.025');
    expect(formatAxisTime(NaN, 'utc')).toBe('');
  });

  it('reads the clock of the zone, midnight included', () => {
    expect(formatAxisTime(Date.UTC(2025, 11, 2, 9, 30), 'Asia/Kolkata')).toBe('15:00');
    expect(formatAxisTime(Date.UTC(2025, 11, 1, 15), 'Asia/Tokyo')).toBe('12-02');
  });
});

describe('escapeHtml', () => {
  it('neutralises markup in user names', () => {
    expect(escapeHtml(`<img src=x onerror="a('b')">&`)).toBe(
      '&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt;&amp;',
    );
  });
});
