import type { AbsoluteTimeRange } from '@grafana/data';

/**
 * The window the user zoomed to, from the x values at the plot's left and
 * right edges, or null when the view holds all the data (zoomed out).
 */
export function zoomWindow(edges: [number, number], extent: [number, number] | null): [number, number] | null {
  const [x0, x1] = edges;
  if (!extent || !Number.isFinite(x0) || !Number.isFinite(x1) || x1 <= x0) return null;
  const slack = (extent[1] - extent[0]) * 1e-6;
  if (x0 <= extent[0] + slack && x1 >= extent[1] - slack) return null;
  return [Math.max(x0, extent[0]), Math.min(x1, extent[1])];
}

/** The dashboard time range for a zoomed time window, in whole milliseconds. */
export function timeRangeOf(window: [number, number]): AbsoluteTimeRange {
  return { from: Math.floor(window[0]), to: Math.ceil(window[1]) };
}

/** Smallest and largest x over several sorted series. */
export function extentOf(xs: readonly (readonly number[])[]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of xs) {
    if (x.length === 0) continue;
    lo = Math.min(lo, x[0]!);
    hi = Math.max(hi, x[x.length - 1]!);
  }
  return hi >= lo ? [lo, hi] : null;
}
