import type { XMode } from '../types/api';
import type { SeriesData, TimeZone } from '../types/chart';
import { escapeHtml, formatDuration, formatStep, formatTime, formatValue } from './format';
import { lowerBound } from './series';

/** What the tooltip needs of one curve. */
export interface TooltipSeries {
  id: string;
  name: string;
  color: string;
  data: SeriesData;
  /** Smoothed values parallel to data.y, when smoothing is on. */
  smoothed?: readonly number[] | null;
}

export interface TooltipRow {
  id: string;
  name: string;
  color: string;
  x: number;
  value: number;
  smoothed: number | null;
  step: number;
  timeMs: number;
}

/** Index of the point whose x is nearest to `x` (x sorted ascending); -1 when empty. */
export function nearestIndex(xs: readonly number[], x: number): number {
  const n = xs.length;
  if (n === 0 || Number.isNaN(x)) return -1;
  const i = lowerBound(xs, x);
  if (i <= 0) return 0;
  if (i >= n) return n - 1;
  return x - xs[i - 1]! <= xs[i]! - x ? i - 1 : i;
}

/**
 * One row per curve at the hovered x: the curve's nearest point. A curve
 * whose points all lie left or right of x by more than `tolerance` has no row
 * (a run that ended earlier does not pretend to have a value there).
 */
export function tooltipRows(series: readonly TooltipSeries[], x: number, tolerance = 0): TooltipRow[] {
  const rows: TooltipRow[] = [];
  for (const s of series) {
    const xs = s.data.x;
    const n = xs.length;
    if (n === 0) continue;
    if (x < xs[0]! - tolerance || x > xs[n - 1]! + tolerance) continue;
    const i = nearestIndex(xs, x);
    rows.push({
      id: s.id,
      name: s.name,
      color: s.color,
      x: xs[i]!,
      value: s.data.y[i]!,
      smoothed: s.smoothed ? (s.smoothed[i] ?? null) : null,
      step: s.data.step[i]!,
      timeMs: s.data.timeMs[i]!,
    });
  }
  return rows;
}

/** Highest first: +Inf, finite values descending, -Inf, then NaN. */
function rank(v: number): number {
  if (Number.isNaN(v)) return -Infinity;
  if (v === Infinity) return Number.MAX_VALUE;
  if (v === -Infinity) return -Number.MAX_VALUE;
  return v;
}

export function sortRowsByValue(rows: readonly TooltipRow[], bySmoothed: boolean): TooltipRow[] {
  const key = (r: TooltipRow) => rank(bySmoothed && r.smoothed !== null ? r.smoothed : r.value);
  return [...rows].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    if (ka === kb) return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    return kb > ka ? 1 : -1;
  });
}

export function formatX(x: number, mode: XMode, zone: TimeZone = 'browser'): string {
  switch (mode) {
    case 'step':
      return `step ${formatStep(x)}`;
    case 'time':
      return formatTime(x, zone);
    case 'relative':
      return formatDuration(x);
  }
}

export interface TooltipFormatOptions {
  xMode: XMode;
  smoothing: boolean;
  /** Time zone of the times shown; default `browser`. */
  timeZone?: TimeZone;
  title?: string;
}

/**
 * Where a row's point is: its step and wall time, each only when known (a
 * Grafana frame without a step field has NaN steps: no "step NaN").
 */
export function rowPlace(row: Pick<TooltipRow, 'step' | 'timeMs'>, zone: TimeZone = 'browser'): string {
  const parts: string[] = [];
  if (Number.isFinite(row.step)) parts.push(`step ${formatStep(row.step)}`);
  if (Number.isFinite(row.timeMs)) parts.push(formatTime(row.timeMs, zone));
  return parts.join(' · ');
}

/** Tooltip HTML: the hovered x, then one row per curve sorted by value. Every user string is escaped. */
export function formatTooltipHtml(x: number, rows: readonly TooltipRow[], options: TooltipFormatOptions): string {
  const { xMode, smoothing, timeZone = 'browser' } = options;
  const sorted = sortRowsByValue(rows, smoothing);
  const head = options.title
    ? `<div class="cs-tt-title">${escapeHtml(options.title)}</div><div class="cs-tt-x">${escapeHtml(formatX(x, xMode, timeZone))}</div>`
    : `<div class="cs-tt-x">${escapeHtml(formatX(x, xMode, timeZone))}</div>`;
  const body = sorted
    .map((r) => {
      const shown = smoothing && r.smoothed !== null ? r.smoothed : r.value;
      const rawNote = smoothing && r.smoothed !== null ? `<span class="cs-tt-raw">raw ${escapeHtml(formatValue(r.value))}</span>` : '';
      const where = rowPlace(r, timeZone);
      return (
        `<tr><td><span class="cs-tt-chip" style="background:${escapeHtml(r.color)}"></span></td>` +
        `<td class="cs-tt-name">${escapeHtml(r.name)}</td>` +
        `<td class="cs-tt-value">${escapeHtml(formatValue(shown))}${rawNote}</td>` +
        `<td class="cs-tt-where">${escapeHtml(where)}</td></tr>`
      );
    })
    .join('');
  return `${head}<table class="cs-tt-rows">${body}</table>`;
}
