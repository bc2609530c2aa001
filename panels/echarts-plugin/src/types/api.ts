/**
 * Shapes of the bridge's HTTP and WebSocket API (docs/http-api.md).
 * Only types: the core and every host share them.
 */

/** A value as JSON carries it: non-finite values travel as strings. */
export type ApiNumber = number | 'NaN' | 'Infinity' | '-Infinity';

export type RunState = 'running' | 'finished' | 'failed' | 'lost' | 'unknown';

/** The x axis of a series query. `relative` is seconds since the run's first point. */
export type XMode = 'step' | 'time' | 'relative';

export interface ApiRun {
  project: string;
  run: string;
  state: RunState;
  reason?: string;
  started_ms?: number | null;
  updated_ms?: number | null;
  tags?: string[];
  group?: string | null;
  config?: Record<string, unknown>;
  host?: string | null;
  git_commit?: string | null;
  git_dirty?: boolean | null;
  points?: number;
  /** Finished or failed, but this many batches up to the final status are not stored yet (null: unknown). */
  pending_batches?: number | null;
  /** Alerts of the run firing now. */
  alerts_firing?: number;
}

export interface ApiRunsResponse {
  runs: ApiRun[];
}

export interface ApiMetric {
  key: string;
  /** "scalar" (charted), or another kind such as "text" or "histogram"; absent = scalar. */
  kind?: string;
  count: number;
  first_step?: number | null;
  last_step?: number | null;
  last_value?: ApiNumber | null;
  first_ms?: number | null;
  last_ms?: number | null;
}

export interface ApiMetricsResponse {
  project: string;
  run: string;
  metrics: ApiMetric[];
}

/** `GET /api/v1/metrics`: each run asked, in order, as the single-run endpoint answers it. */
export interface ApiMetricsManyResponse {
  runs: ApiMetricsResponse[];
}

export interface ApiPoint {
  x: number;
  y: ApiNumber;
  step: number;
  time_ms: number;
}

export interface ApiSeriesResponse {
  project: string;
  run: string;
  key: string;
  x: XMode;
  start: number | null;
  end: number | null;
  width: number;
  raw: boolean;
  total: number;
  points: { x: number[]; y: ApiNumber[]; step: number[]; time_ms: number[] };
  before: ApiPoint | null;
  after: ApiPoint | null;
}

export interface LiveSeriesFrame {
  key: string;
  step: number[];
  time_ms: number[];
  y: ApiNumber[];
}

export interface LivePointsMessage {
  type: 'points';
  project: string;
  run: string;
  series: LiveSeriesFrame[];
}

export interface LiveStatusMessage {
  type: 'status';
  project: string;
  run: string;
  state: RunState;
  reason?: string;
}

export interface LiveRunMessage {
  type: 'run';
  project: string;
  run: string;
}

/** Points of this run were not pushed (a slow client, or a huge frame): query the visible range again. */
export interface LiveGapMessage {
  type: 'gap';
  project: string;
  run: string;
}

/** New text lines of a run (at most 1,000 per run per frame; more: a gap follows). */
export interface LiveTextsMessage {
  type: 'texts';
  project: string;
  run: string;
  texts: ApiText[];
}

/** A new histogram of a run's key is stored: fetch it. */
export interface LiveHistogramMessage {
  type: 'histogram';
  project: string;
  run: string;
  key: string;
  step: number;
}

/** An alert of a watched run fired or resolved: the alert as `GET /api/v1/alerts` lists it. */
export interface LiveAlertMessage {
  type: 'alert';
  project: string;
  run: string;
  alert: ApiAlert;
}

export interface ApiAlertsResponse {
  alerts: ApiAlert[];
}

export type LiveMessage =
  | LiveAlertMessage
  | LivePointsMessage
  | LiveStatusMessage
  | LiveRunMessage
  | LiveGapMessage
  | LiveTextsMessage
  | LiveHistogramMessage;

export interface LiveSubscription {
  project: string;
  run: string;
  keys?: string[] | null;
}

/** One histogram observation: `counts[i]` values fell in [edges[i], edges[i+1]). */
export interface ApiHistogram {
  step: number;
  time_ms: number;
  edges: ApiNumber[];
  counts: number[];
  min?: ApiNumber | null;
  max?: ApiNumber | null;
  sum?: ApiNumber | null;
  count?: number | null;
}

export interface ApiHistogramsResponse {
  project?: string;
  run?: string;
  key?: string;
  histograms: ApiHistogram[];
}

/** A line of text; `level` is the Python logging level of a log line, 0 for plain text. */
export interface ApiText {
  key: string;
  step: number;
  time_ms: number;
  level: number;
  text: string;
}

export interface ApiTextsResponse {
  project?: string;
  run?: string;
  texts: ApiText[];
}

export type AlertKind = 'nonfinite' | 'spike' | 'plateau' | 'threshold' | 'stalled' | 'lost';

/**
 * An alert of the bridge's alert engine as `GET /api/v1/alerts` lists it (its
 * latest change): what happened to which curve (key "" = the whole run:
 * stalled, lost) at which step, over which window of steps.
 */
export interface ApiAlert {
  id?: string;
  rule?: string;
  project: string;
  run: string;
  key: string;
  /** Where the condition became true; for a resolved alert, where it stopped. */
  step: number;
  /** Where it fired (the same as `step` while firing). */
  fired_step?: number;
  state?: 'firing' | 'resolved';
  kind: AlertKind;
  message: string;
  window?: { from_step: number; to_step: number };
}
