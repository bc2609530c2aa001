/**
 * A zoomed chart needs only part of each line: points far outside the shown x
 * range lie, with their neighbours, on one side of it, so every segment
 * between them is clipped away. Leaving them out spares ECharts laying them
 * out (most of a zoomed redraw: the whole run's overview is drawn around the
 * window's detail).
 */
import { lowerBound, upperBound } from './series';

/**
 * The x range a host draws lines for when it shows `window`: the window and
 * one window's width on each side, so a zoom out or a pan shows real points
 * until the host draws again. Null (everything) for null, and when that range
 * holds all of `extent` (the lines' x extent): every line is drawn whole then,
 * so a zoom back out to everything needs no drawing of its own.
 */
export function drawnRangeOf(
  window: readonly [number, number] | null | undefined,
  extent?: readonly [number, number] | null,
): [number, number] | null {
  if (!window) return null;
  const span = window[1] - window[0];
  const range: [number, number] = [window[0] - span, window[1] + span];
  return extent && range[0] <= extent[0] && extent[1] <= range[1] ? null : range;
}

/** The smallest and largest x of lines whose x values ascend; null when they hold no point. */
export function xExtentOf(lines: readonly { x: ArrayLike<number> }[]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const { x } of lines) {
    const first = x[0];
    const last = x[x.length - 1];
    if (first === undefined || last === undefined) continue;
    lo = Math.min(lo, first);
    hi = Math.max(hi, last);
  }
  return lo <= hi ? [lo, hi] : null;
}

/** Whether lines drawn for `range` show `window` as if they were whole (null: all of them). */
export function rangeCovers(range: readonly [number, number] | null | undefined, window: readonly [number, number] | null): boolean {
  if (!range) return true;
  return window !== null && range[0] <= window[0] && window[1] <= range[1];
}

/**
 * The indices of a line's points (x ascending) to draw for `range`: the first
 * and last points (the axis extent, ECharts' dataMin and dataMax, stays the
 * whole line's), and from the last point before the range to the first one
 * after it (the segments crossing its edges). Every point for null.
 */
export function keptIndices(xs: readonly number[], range: readonly [number, number] | null): number[] | null {
  const n = xs.length;
  if (!range || n === 0) return null;
  const from = Math.max(0, lowerBound(xs, range[0]) - 1);
  const to = Math.min(n, upperBound(xs, range[1]) + 1);
  if (from === 0 && to === n) return null;
  const out: number[] = [];
  if (from > 0) out.push(0);
  for (let i = from; i < to; i++) out.push(i);
  if (to < n) out.push(n - 1);
  return out;
}
