/** Text for numbers, steps, times and durations in axes and tooltips. */
import type { TimeZone } from '../types/chart';
import { wallClock } from './timeZone';

function trimZeros(text: string): string {
  // "1.2300" -> "1.23", "1.000e-5" -> "1e-5"
  return text.replace(/(\.\d*?)0+(?=$|e)/, '$1').replace(/\.(?=$|e)/, '');
}

/** A value with up to 6 significant digits; non-finite values by name. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 1e6 || abs < 1e-4) return trimZeros(value.toExponential(4));
  return trimZeros(value.toPrecision(6));
}

/** A short axis label: 4 significant digits, SI suffix from 10k up, exponent below 1e-3. */
export function formatAxisValue(value: number): string {
  if (!Number.isFinite(value)) return formatValue(value);
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs < 1e-3) return trimZeros(value.toExponential(1));
  if (abs >= 1e4) return formatCompact(value);
  return trimZeros(value.toPrecision(4));
}

const SUFFIXES: [number, string][] = [
  [1e15, 'P'],
  [1e12, 'T'],
  [1e9, 'G'],
  [1e6, 'M'],
  [1e3, 'k'],
];

/** 1234 -> "1.23k", 3000000 -> "3M". */
export function formatCompact(value: number): string {
  if (!Number.isFinite(value)) return formatValue(value);
  const abs = Math.abs(value);
  for (const [scale, suffix] of SUFFIXES) {
    if (abs >= scale) return trimZeros((value / scale).toPrecision(3)) + suffix;
  }
  return trimZeros(value.toPrecision(Math.max(1, Math.min(4, Math.ceil(Math.log10(abs + 1)) + 2))));
}

/** An integer step with thousands separators: 1234567 -> "1,234,567". */
export function formatStep(step: number): string {
  if (!Number.isFinite(step)) return formatValue(step);
  const sign = step < 0 ? '-' : '';
  const digits = String(Math.trunc(Math.abs(step)));
  return sign + digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Seconds as "850ms", "42s", "3m 05s", "1h 02m", "2d 03h". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return formatValue(seconds);
  const sign = seconds < 0 ? '-' : '';
  const s = Math.abs(seconds);
  if (s < 1) return `${sign}${Math.round(s * 1000)}ms`;
  if (s < 60) return `${sign}${trimZeros(s.toFixed(s < 10 ? 1 : 0))}s`;
  const pad = (n: number) => String(Math.floor(n)).padStart(2, '0');
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${sign}${Math.floor(s / 3600)}h ${pad((s % 3600) / 60)}m`;
  return `${sign}${Math.floor(s / 86400)}d ${pad((s % 86400) / 3600)}h`;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** Epoch milliseconds as "2025-12-02 11:20:05" in a time zone (the browser's by default). */
export function formatTime(ms: number, zone: TimeZone = 'browser'): string {
  if (!Number.isFinite(ms)) return '—';
  const t = wallClock(ms, zone);
  return `${t.year}-${pad2(t.month)}-${pad2(t.day)} ${pad2(t.hour)}:${pad2(t.minute)}:${pad2(t.second)}`;
}

/**
 * A time axis label in a time zone, as short as the moment allows: the date
 * at midnight ("12-02"), "11:20" on a whole minute, "11:20:05" on a whole
 * second, "11:20:05.250" otherwise.
 */
export function formatAxisTime(ms: number, zone: TimeZone = 'browser'): string {
  if (!Number.isFinite(ms)) return '';
  const t = wallClock(ms, zone);
  if (t.hour === 0 && t.minute === 0 && t.second === 0 && t.millisecond === 0) return `${pad2(t.month)}-${pad2(t.day)}`;
  const minute = `${pad2(t.hour)}:${pad2(t.minute)}`;
  if (t.second === 0 && t.millisecond === 0) return minute;
  const second = `${minute}:${pad2(t.second)}`;
  return t.millisecond === 0 ? second : `${second}.${String(t.millisecond).padStart(3, '0')}`;
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Run names and metric keys are user data: escape before putting them into HTML. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}
