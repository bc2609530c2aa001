import type { AbsoluteTimeRange } from '@grafana/data';

/** The dashboard time range for a zoomed time window, in whole milliseconds. */
export function timeRangeOf(window: [number, number]): AbsoluteTimeRange {
  return { from: Math.floor(window[0]), to: Math.ceil(window[1]) };
}
