/** The y axis bounds of a chart and what they leave out. */
export interface YRange {
  min: number;
  max: number;
  /** True when there was no drawable value: the bounds are a placeholder. */
  empty: boolean;
  /** Values ≤ 0 left out of a log axis. */
  nonPositiveHidden: number;
  /** Finite values outside the bounds when outliers are ignored. */
  outliersClipped: number;
}

export interface YRangeOptions {
  log: boolean;
  /** Use the [lowQuantile, highQuantile] range instead of min..max. */
  ignoreOutliers: boolean;
  lowQuantile?: number;
  highQuantile?: number;
  /** Margin added on each side, as a fraction of the span (of log10 span for log). */
  padFraction?: number;
}

/** Linear-interpolated quantile of an ascending array. */
export function quantileSorted(sorted: readonly number[], q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const pos = Math.min(1, Math.max(0, q)) * (n - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * Bounds for the y axis over several arrays of values. Non-finite values never
 * count (they are drawn as markers at the edges). On a log axis values ≤ 0 are
 * left out and counted. With `ignoreOutliers` the bounds come from quantiles
 * (1st..99th percentile by default), so a single spike does not flatten the
 * curve; the clipped values are counted.
 */
export function computeYRange(arrays: readonly (readonly number[])[], options: YRangeOptions): YRange {
  const { log, ignoreOutliers } = options;
  const pad = options.padFraction ?? 0.05;
  const values: number[] = [];
  let nonPositiveHidden = 0;
  for (const arr of arrays) {
    for (const v of arr) {
      if (!Number.isFinite(v)) continue;
      if (log && v <= 0) {
        nonPositiveHidden++;
        continue;
      }
      values.push(log ? Math.log10(v) : v);
    }
  }
  if (values.length === 0) {
    return { min: log ? 0.1 : 0, max: log ? 10 : 1, empty: true, nonPositiveHidden, outliersClipped: 0 };
  }
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  let outliersClipped = 0;
  if (ignoreOutliers) {
    // sorting is the costly part: only when percentiles are asked for
    values.sort((a, b) => a - b);
    const qlo = quantileSorted(values, options.lowQuantile ?? 0.01);
    const qhi = quantileSorted(values, options.highQuantile ?? 0.99);
    if (qhi > qlo) {
      lo = qlo;
      hi = qhi;
      for (const v of values) if (v < lo || v > hi) outliersClipped++;
    }
  }
  const span = hi - lo;
  if (span === 0) {
    // a flat curve: centre it in a band of ±10% (±half a decade on log)
    const half = log ? 0.5 : Math.abs(lo) * 0.1 || 1;
    lo -= half;
    hi += half;
  } else {
    lo -= span * pad;
    hi += span * pad;
  }
  const min = log ? Math.pow(10, lo) : lo;
  const max = log ? Math.pow(10, hi) : hi;
  return { min, max, empty: false, nonPositiveHidden, outliersClipped };
}
