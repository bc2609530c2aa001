import type { Band, SeriesData } from '../types/chart';

/** A min/max band: for each bucket its x and the lowest and highest finite y. */
export type Envelope = Band;

/**
 * Min/max envelope of a curve over `buckets` equal x intervals of
 * [start, end] (default: the data's extent). Built from M4 points it still
 * holds every extreme, so a smoothed line drawn over it keeps spikes visible.
 * Each bucket's x is the middle of its first and last point; buckets with no
 * finite value are left out (the band bridges them).
 */
export function minMaxEnvelope(data: SeriesData, buckets: number, start?: number, end?: number): Envelope {
  const out: Envelope = { x: [], lo: [], hi: [] };
  const n = data.x.length;
  if (n === 0) return out;
  const count = Math.max(1, Math.floor(buckets));
  const from = start ?? data.x[0]!;
  const to = end ?? data.x[n - 1]!;
  const span = to - from;

  let bucket = -1;
  let firstX = NaN;
  let lastX = NaN;
  let lo = Infinity;
  let hi = -Infinity;
  const flush = () => {
    if (hi >= lo) {
      out.x.push((firstX + lastX) / 2);
      out.lo.push(lo);
      out.hi.push(hi);
    }
    lo = Infinity;
    hi = -Infinity;
    firstX = NaN;
  };

  for (let i = 0; i < n; i++) {
    const x = data.x[i]!;
    const y = data.y[i]!;
    if (!Number.isFinite(y) || !(x >= from && x <= to)) continue;
    const b = span > 0 ? Math.min(count - 1, Math.floor(((x - from) / span) * count)) : 0;
    if (b !== bucket) {
      flush();
      bucket = b;
    }
    if (Number.isNaN(firstX)) firstX = x;
    lastX = x;
    if (y < lo) lo = y;
    if (y > hi) hi = y;
  }
  flush();
  return out;
}

/** A bucket count for a plot `widthPx` device pixels wide: one per ~6 px, at least 8. */
export function envelopeBucketsFor(widthPx: number): number {
  return Math.max(8, Math.round(widthPx / 6));
}
