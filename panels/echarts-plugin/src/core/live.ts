import type { LiveSeriesFrame, XMode } from '../types/api';
import type { SeriesData } from '../types/chart';
import { parseApiNumbers } from './numbers';
import { emptySeries, lowerBound, upperBound, xFor } from './series';

/**
 * A live frame's points for one key as a series in the chart's x units,
 * sorted by x. `originMs` is the run's first-point time, needed for relative x.
 */
export function liveFrameToSeries(frame: LiveSeriesFrame, xMode: XMode, originMs: number | null): SeriesData {
  const n = Math.min(frame.step.length, frame.time_ms.length, frame.y.length);
  const ys = parseApiNumbers(frame.y.slice(0, n));
  const out = emptySeries();
  for (let i = 0; i < n; i++) {
    const step = frame.step[i]!;
    const timeMs = frame.time_ms[i]!;
    out.x.push(xFor(xMode, step, timeMs, originMs));
    out.y.push(ys[i]!);
    out.step.push(step);
    out.timeMs.push(timeMs);
  }
  return isSortedByX(out) ? out : sortByX(out);
}

function isSortedByX(data: SeriesData): boolean {
  for (let i = 1; i < data.x.length; i++) if (data.x[i]! < data.x[i - 1]!) return false;
  return true;
}

function sortByX(data: SeriesData): SeriesData {
  const order = data.x.map((_, i) => i).sort((a, b) => data.x[a]! - data.x[b]! || a - b);
  return {
    x: order.map((i) => data.x[i]!),
    y: order.map((i) => data.y[i]!),
    step: order.map((i) => data.step[i]!),
    timeMs: order.map((i) => data.timeMs[i]!),
  };
}

export interface AppendResult {
  data: SeriesData;
  /** Points actually added (duplicates of points already held are skipped). */
  appended: number;
}

function holds(data: SeriesData, x: number, step: number, timeMs: number): boolean {
  for (let i = lowerBound(data.x, x); i < data.x.length && data.x[i] === x; i++) {
    if (data.step[i] === step && data.timeMs[i] === timeMs) return true;
  }
  return false;
}

/**
 * The current curve with a live frame's points added, in x order. Points the
 * curve already holds (same x, step and time: a re-sent frame, or a frame that
 * overlaps the query that loaded the chart) are skipped. The input is not
 * changed, so the host can hand the result to `setOption` as new data.
 */
export function appendLivePoints(current: SeriesData, added: SeriesData): AppendResult {
  const m = added.x.length;
  if (m === 0) return { data: current, appended: 0 };
  const out: SeriesData = {
    x: current.x.slice(),
    y: current.y.slice(),
    step: current.step.slice(),
    timeMs: current.timeMs.slice(),
  };
  let appended = 0;
  for (let j = 0; j < m; j++) {
    const x = added.x[j]!;
    const step = added.step[j]!;
    const timeMs = added.timeMs[j]!;
    if (holds(out, x, step, timeMs)) continue;
    const n = out.x.length;
    if (n === 0 || x >= out.x[n - 1]!) {
      out.x.push(x);
      out.y.push(added.y[j]!);
      out.step.push(step);
      out.timeMs.push(timeMs);
    } else {
      // late point: insert in place so the line stays ordered
      const at = upperBound(out.x, x);
      out.x.splice(at, 0, x);
      out.y.splice(at, 0, added.y[j]!);
      out.step.splice(at, 0, step);
      out.timeMs.splice(at, 0, timeMs);
    }
    appended++;
  }
  return { data: appended === 0 ? current : out, appended };
}
