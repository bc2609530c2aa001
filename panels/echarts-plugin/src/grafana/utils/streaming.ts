import type { SeriesData } from '../../types/chart';

/** What the panel remembers of a source's time column after drawing it. */
export interface TimesSnapshot {
  length: number;
  firstTime: number;
  lastTime: number;
}

/**
 * How a source's rows changed since the snapshot:
 * - `unchanged`: same rows;
 * - `append`: the old rows are still there, new ones start at `from`;
 * - `slide`: a bounded live buffer dropped rows at the front (times before
 *   `firstTime` are gone) and new ones start at `from`;
 * - `reload`: anything else (a new query result): read every row again.
 */
export type SourceChange =
  | { kind: 'unchanged' }
  | { kind: 'append'; from: number }
  | { kind: 'slide'; from: number; firstTime: number }
  | { kind: 'reload' };

function timeAt(times: ArrayLike<unknown>, i: number): number {
  const t = times[i];
  return typeof t === 'number' ? t : NaN;
}

export function snapshotTimes(times: ArrayLike<unknown>): TimesSnapshot {
  const n = times.length;
  return { length: n, firstTime: timeAt(times, 0), lastTime: timeAt(times, n - 1) };
}

/** Index of the last row whose time is `time`, searching back from `start` (live frames are sorted by time). */
function lastIndexOfTime(times: ArrayLike<unknown>, time: number, start: number): number {
  for (let i = Math.min(start, times.length - 1); i >= 0; i--) {
    const t = timeAt(times, i);
    if (t === time) return i;
    if (t < time) return -1;
  }
  return -1;
}

/**
 * Compare a source's time column with what was drawn last time. Only live
 * frames (Grafana Live's StreamingDataFrame, a CircularDataFrame mutated in
 * place) may be appended to; a query result is always read again, since an
 * aggregate window may have changed values at times already drawn.
 */
export function planSourceChange(previous: TimesSnapshot | undefined, times: ArrayLike<unknown>, live: boolean): SourceChange {
  if (!previous || !live || previous.length === 0) return { kind: 'reload' };
  const now = snapshotTimes(times);
  const lastOld = previous.length - 1;
  if (now.firstTime === previous.firstTime) {
    if (now.length < previous.length || timeAt(times, lastOld) !== previous.lastTime) return { kind: 'reload' };
    return now.length === previous.length ? { kind: 'unchanged' } : { kind: 'append', from: previous.length };
  }
  if (!(now.firstTime > previous.firstTime)) return { kind: 'reload' };
  // the buffer dropped rows at the front: the old last row moved left
  const at = lastIndexOfTime(times, previous.lastTime, lastOld);
  if (at < 0) return { kind: 'reload' };
  return { kind: 'slide', from: at + 1, firstTime: now.firstTime };
}

/** The series without the points older than `firstTime` (a live buffer dropped them). */
export function dropOlderThan(data: SeriesData, firstTime: number): SeriesData {
  const keep: number[] = [];
  for (let i = 0; i < data.timeMs.length; i++) if (!(data.timeMs[i]! < firstTime)) keep.push(i);
  if (keep.length === data.timeMs.length) return data;
  return {
    x: keep.map((i) => data.x[i]!),
    y: keep.map((i) => data.y[i]!),
    step: keep.map((i) => data.step[i]!),
    timeMs: keep.map((i) => data.timeMs[i]!),
  };
}
