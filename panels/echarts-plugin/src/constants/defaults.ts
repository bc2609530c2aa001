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

/**
 * Every delay of both hosts, in one table. The page and the Grafana panel treat
 * a zoom gesture differently on purpose: the page asks the bridge for the new
 * window in the frame the gesture moved (no wait; a newer query aborts the
 * older one), the panel hands it to the dashboard, which queries again.
 */
export const TIMING = {
  /** Grafana panel: wait after the last zoom gesture before telling the dashboard (a wheel sends many events). */
  panelZoomSettleMs: 250,
  /** Live frames of many runs arrive every few ms: a chart draws them at most this often (at once after a quiet spell). */
  liveDrawMs: 50,
  /** While a chart's curves are answered one by one, draw what came at most this often (the last answer draws at once). */
  answersDrawMs: 250,
  /** Re-query after a resize changed the plot width by more than this fraction. */
  resizeRequeryFraction: 0.15,
  /** Typing in a filter box: filter once the typing pauses this long. */
  filterTypingMs: 150,
  /** Runs list polling, only while the live socket is down. */
  runsPollMs: 10_000,
  /** While the runs table shows a running run: its page is asked again this often, so point counts move. */
  runsNumbersMs: 3000,
  /** A burst of run and status pushes reloads the runs list once, this long after the last. */
  runsReloadMs: 300,
  /** A live frame named a key without a chart: read that run's metrics again after this long. */
  metricsRefreshMs: 1000,
  /** Reconnect backoff of the live socket. */
  reconnectMinMs: 500,
  reconnectMaxMs: 30_000,
  /** After a run finished, load its curves once more (a last frame may have raced the status). */
  finishedRefreshMs: 800,
  /** Live points of grouped runs: the chart asks for its groups again at most this often. */
  groupLiveMs: 1000,
  /** The charts that exist changed (scrolling through a run's keys): tell the live socket once they settle. */
  subscriptionsMs: 250,
};

/** The runs table's order until the user picks another: newest first. */
export const DEFAULT_RUNS_SORT = '-started';

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
