import type { SeriesData } from '../types/chart';
import { emptySeries } from './series';

/**
 * M4 downsampling (Jugel et al., VLDB 2014) on the client, for the points a
 * chart has gathered itself (live appends): the bridge's M4, so a curve looks
 * the same before and after a reload (the one definition and its golden
 * vectors: tests/m4_golden.py, tests/golden/m4/vectors.json).
 *
 * A point at x falls in column `floor((x - start) * (width / (end - start)))`
 * (doubles, in that order; the last column also takes x = end). Per column it
 * keeps the first and the last point, the earliest of the smallest and the
 * latest of the largest value among the non-NaN ones (±Inf are values), and the
 * first NaN. Points outside [start, end] are kept as they are; x must ascend.
 *
 * Returns the input itself when [start, end] holds at most 4·width points.
 */
export function m4(data: SeriesData, width: number, start?: number, end?: number): SeriesData {
  const n = data.x.length;
  if (n === 0) return data;
  const columns = Math.max(1, Math.floor(width));
  const lo = start ?? data.x[0]!;
  const hi = end ?? data.x[n - 1]!;
  let inside = 0;
  for (let i = 0; i < n; i++) if (data.x[i]! >= lo && data.x[i]! <= hi) inside++;
  if (inside <= 4 * columns) return data;
  const perUnit = columns / (hi - lo);
  const keep = new Uint8Array(n);

  let column = -1;
  let first = -1;
  let last = -1;
  let minI = -1;
  let maxI = -1;
  let nanI = -1;

  const flush = () => {
    for (const i of [first, last, minI, maxI, nanI]) if (i >= 0) keep[i] = 1;
    first = last = minI = maxI = nanI = -1;
  };

  for (let i = 0; i < n; i++) {
    const x = data.x[i]!;
    if (!(x >= lo && x <= hi)) {
      keep[i] = 1;
      continue;
    }
    const c = hi > lo ? Math.min(columns - 1, Math.floor((x - lo) * perUnit)) : 0;
    if (c !== column) {
      flush();
      column = c;
    }
    if (first < 0) first = i;
    last = i;
    const y = data.y[i]!;
    if (Number.isNaN(y)) {
      if (nanI < 0) nanI = i;
      continue;
    }
    if (minI < 0 || y < data.y[minI]!) minI = i;
    if (maxI < 0 || y >= data.y[maxI]!) maxI = i;
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
