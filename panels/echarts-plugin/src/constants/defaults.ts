import type { XMode } from '../types/api';
import type { SmoothingKind } from '../types/chart';

/** Defaults of everything a view can change; the URL only stores what differs. */
export const DEFAULT_VIEW = {
  xMode: 'step' as XMode,
  smoothing: 0,
  smoothingKind: 'ema' as SmoothingKind,
  logY: false,
  ignoreOutliers: false,
  showEnvelope: true,
};

export const TIMING = {
  /** Wait after the last zoom gesture before asking the bridge again. */
  zoomDebounceMs: 150,
  /** While a chart's curves are answered one by one, draw what came at most this often (the last answer draws at once). */
  answersDrawMs: 250,
  /** Re-query after a resize changed the plot width by more than this fraction. */
  resizeRequeryFraction: 0.15,
  /** Runs list polling, only while the live socket is down. */
  runsPollMs: 10_000,
  /** Reconnect backoff of the live socket. */
  reconnectMinMs: 500,
  reconnectMaxMs: 30_000,
  /** After a run finished, load its curves once more (a last frame may have raced the status). */
  finishedRefreshMs: 800,
};

/** Live points beyond this many per plot pixel column make the chart downsample (M4) on its own. */
export const LIVE_POINTS_PER_COLUMN = 8;

/** The run detail views (histograms, text log). */
export const DETAIL = {
  /** Histograms asked per key: evenly spaced over the run, first and last kept. */
  histogramLimit: 200,
  /** Common bins of a histogram heatmap. */
  histogramBins: 48,
  /** Newest text lines loaded. */
  textLimit: 2000,
  /** Live activity of the shown run reloads the open view at most this often. */
  refreshMs: 2000,
};
