import type { SeriesData } from '../types/chart';
import { valueKind, type ValueKind } from './numbers';
import { emptySeries } from './series';

/**
 * M4 downsampling (Jugel et al., VLDB 2014) on the client, for the points a
 * chart has gathered itself (live appends). For every one of `width` pixel
 * columns over [start, end] it keeps the first, last, min and max point, which
 * draws the same line as all the points at that width. Non-finite points are
 * never folded into min/max: per column the first and last of each kind (NaN,
 * +Inf, -Inf) are kept so they stay visible. Points outside [start, end] are
 * kept as they are.
 *
 * Returns the input itself when it already fits in 4·width points.
 */
export function m4(data: SeriesData, width: number, start?: number, end?: number): SeriesData {
  const n = data.x.length;
  const columns = Math.max(1, Math.floor(width));
  if (n <= 4 * columns) return data;
  const lo = start ?? data.x[0]!;
  const hi = end ?? data.x[n - 1]!;
  const span = hi - lo;
  const keep = new Uint8Array(n);

  let column = -1;
  let first = -1;
  let last = -1;
  let minI = -1;
  let maxI = -1;
  const special = new Map<ValueKind, [number, number]>();

  const flush = () => {
    for (const i of [first, last, minI, maxI]) if (i >= 0) keep[i] = 1;
    for (const [a, b] of special.values()) {
      keep[a] = 1;
      keep[b] = 1;
    }
    first = last = minI = maxI = -1;
    special.clear();
  };

  for (let i = 0; i < n; i++) {
    const x = data.x[i]!;
    if (!(x >= lo && x <= hi)) {
      keep[i] = 1;
      continue;
    }
    const c = span > 0 ? Math.min(columns - 1, Math.floor(((x - lo) / span) * columns)) : 0;
    if (c !== column) {
      flush();
      column = c;
    }
    const y = data.y[i]!;
    const kind = valueKind(y);
    if (kind !== 'finite') {
      const seen = special.get(kind);
      if (seen) seen[1] = i;
      else special.set(kind, [i, i]);
      continue;
    }
    if (first < 0) first = i;
    last = i;
    if (minI < 0 || y < data.y[minI]!) minI = i;
    if (maxI < 0 || y > data.y[maxI]!) maxI = i;
  }
  flush();

  const out = emptySeries();
  for (let i = 0; i < n; i++) {
    if (!keep[i]) continue;
    out.x.push(data.x[i]!);
    out.y.push(data.y[i]!);
    out.step.push(data.step[i]!);
    out.timeMs.push(data.timeMs[i]!);
  }
  return out;
}
