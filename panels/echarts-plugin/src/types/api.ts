/**
 * Shapes of the bridge's HTTP and WebSocket API (docs/http-api.md). Only types: the core and every host share them.
 *
 * Generated from bridge/src/curvestream_bridge/api/models.py by scripts/gen_api_types.py (`make api-types`):
 * edit the models, not this file.
 */

/** A value as JSON carries it: non-finite values travel as strings. */
export type ApiNumber = number | 'NaN' | 'Infinity' | '-Infinity';

export type RunState = 'running' | 'finished' | 'failed' | 'lost' | 'unknown';

/** The x axis of a series query. `relative` is seconds since the run's first point. */
export type XMode = 'step' | 'time' | 'relative';

/** A curve (`series`), a histogram (`histograms`) or text lines (`texts`). */
export type MetricKind = 'scalar' | 'histogram' | 'text';

/** What raised the alert: a rule of that kind, or the training script (`code`, `run.alert`: its rule is the alert's title). */
export type AlertKind = 'nonfinite' | 'spike' | 'plateau' | 'threshold' | 'stalled' | 'lost' | 'code';

/** The value that made the alert change: a number, `NaN`, `+Inf`, `-Inf` or null. */
export type AlertValue = number | 'NaN' | '+Inf' | '-Inf' | null;

/** What the trainer's process told about itself (absent for a run known only by its status). */
export interface ApiRunMeta {
  pid?: number | null;
  python_version?: string | null;
  frameworks?: Record<string, string> | null;
  data_version?: string | null;
  client_version?: string | null;
}

/** A session that continued a stored run (`init(..., resume=...)` or `id=`). */
export interface ApiResume {
  started_ms: number;
  /** The step the stored run had ended at when the session began (null: unknown, resumed offline). */
  after_step: number | null;
  /** The first step the session logged at or below `after_step`: its steps went back (null: they did not). */
  back_to_step: number | null;
}

/** A run of `GET /api/v1/runs`. */
export interface ApiRun {
  project: string;
  /** The run's identity: unique, e.g. the name and a random suffix (`lr=0.1-k3x9q2`). */
  run: string;
  /** The name the trainer gave the run; several runs may share it. */
  name: string;
  /** Each time the run was resumed, oldest first. */
  resumes: ApiResume[];
  state: RunState;
  /** Exception type and message when failed. */
  reason: string;
  started_ms: number | null;
  updated_ms: number | null;
  tags: string[];
  group: string;
  config: Record<string, unknown>;
  host: string;
  git_commit: string;
  git_dirty: boolean | null;
  /** Scalar points stored for the run. */
  points: number;
  meta: ApiRunMeta;
  /** Finished or failed, but this many batches up to the final status are not stored yet (null: unknown). */
  pending_batches: number | null;
  /** Alerts of the run firing now. */
  alerts_firing: number;
  /** The trainer's clock behind the bridge's by this much (null: unknown). */
  clock_offset_s: number | null;
  /** Added to the run's times by the bridge. */
  clock_correction_s: number | null;
  /** What the run stored as its summary (an imported W&B summary); the read API shows each key's last value where it names none. */
  summary: Record<string, unknown>;
  /** Free text about the run, from its trainer or written since. */
  notes: string;
}

export interface ApiRunsResponse {
  runs: ApiRun[];
}

/** `PATCH /api/v1/runs/{project}/{run}` (write token): what to set; what is absent stays. */
export interface ApiRunEdit {
  /** The name shown (the identity stays). */
  name?: string | null;
  /** The run's tags, all of them. */
  tags?: string[] | null;
  /** Tags added (after `tags`, if given). */
  add_tags?: string[];
  /** Tags taken away. */
  remove_tags?: string[];
  notes?: string | null;
}

/** A run's name, tags and notes after an edit. */
export interface ApiRunEdited {
  project: string;
  run: string;
  name: string;
  tags: string[];
  notes: string;
}

/** `DELETE /api/v1/runs/{project}/{run}`: the run and everything of it are gone. */
export interface ApiRunDeleted {
  project: string;
  run: string;
  deleted: boolean;
}

/** A key of a run: how many values it holds, over which steps and times. */
export interface ApiMetric {
  key: string;
  kind: MetricKind;
  count: number;
  first_step: number;
  last_step: number;
  last_value: ApiNumber;
  first_ms: number;
  last_ms: number;
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

/** Parallel arrays, sorted by x. */
export interface ApiSeriesPoints {
  x: number[];
  y: ApiNumber[];
  step: number[];
  time_ms: number[];
}

/** At most 4·width points that draw the same line as the raw data (M4), or the raw points. */
export interface ApiSeriesResponse {
  project: string;
  run: string;
  key: string;
  x: XMode;
  start: number | null;
  end: number | null;
  width: number;
  /** These are all the points in the range. */
  raw: boolean;
  /** Points in the range. */
  total: number;
  /** The nearest point left of the range. */
  before: ApiPoint | null;
  /** The nearest point right of the range. */
  after: ApiPoint | null;
  points: ApiSeriesPoints;
}

/** `GET /api/v1/series`: one answer per run × key, runs outer, keys inner. */
export interface ApiSeriesManyResponse {
  series: ApiSeriesResponse[];
}

/** Where a series' columns lie in a binary answer: `n` points at `offset` bytes after the header's padding. */
export interface ApiColumnsAt {
  n: number;
  offset: number;
}

/** A series in the header of a binary answer: its JSON answer, with `points` naming where its columns are. */
export interface ApiSeriesColumnsHeader {
  project: string;
  run: string;
  key: string;
  x: XMode;
  start: number | null;
  end: number | null;
  width: number;
  /** These are all the points in the range. */
  raw: boolean;
  /** Points in the range. */
  total: number;
  /** The nearest point left of the range. */
  before: ApiPoint | null;
  /** The nearest point right of the range. */
  after: ApiPoint | null;
  points: ApiColumnsAt;
}

export interface ApiSeriesManyColumnsHeader {
  series: ApiSeriesColumnsHeader[];
}

/** One histogram observation: `counts[i]` values fell in [edges[i], edges[i+1]). */
export interface ApiHistogram {
  step: number;
  time_ms: number;
  /** null: an edge that is not finite (a bucket up to +Inf). */
  edges: (number | null)[];
  counts: number[];
  min: number | null;
  max: number | null;
  sum: number | null;
  count: number | null;
}

export interface ApiHistogramsResponse {
  project: string;
  run: string;
  key: string;
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
  project: string;
  run: string;
  texts: ApiText[];
}

export interface ApiAlertWindow {
  from_step: number;
  to_step: number;
}

/**
 * An alert of the bridge's alert engine as `GET /api/v1/alerts` lists it (its latest change):
 * what happened to which curve (key "" = the whole run: stalled, lost) at which step, over which
 * window of steps.
 */
export interface ApiAlert {
  id: string;
  rule: string;
  kind: AlertKind;
  severity: 'info' | 'warning' | 'critical';
  project: string;
  run: string;
  key: string;
  state: 'firing' | 'resolved';
  /** Where the condition became true; for a resolved alert, where it stopped. */
  step: number;
  time_ms: number;
  value: AlertValue;
  message: string;
  window: ApiAlertWindow;
  /** Where it fired (the same as `step` while firing). */
  fired_step: number;
  started_ms: number;
  ended_ms: number | null;
  version: number;
  time_ns: number;
}

export interface ApiAlertsResponse {
  alerts: ApiAlert[];
}

/** A batch parked after unexpected store errors, with why. */
export interface ApiParkedBatch {
  producer: string;
  seq: number;
  reason: string;
  source: string;
  parked_ms: number;
  file: string;
}

export interface ApiParkedResponse {
  parked: ApiParkedBatch[];
}

/** What became of the parked batches sent through the ingest pipeline again. */
export interface ApiReplayResponse {
  replayed: number;
  rejected: number;
  still_parked: number;
  parked: ApiParkedBatch[];
}

export interface ApiHealth {
  ok: boolean;
}

/** `GET /readyz` (503 unless the store and the broker are reachable and the writer is not retrying). */
export interface ApiReadiness {
  store: boolean;
  mqtt: boolean;
  ingest_healthy: boolean;
  unexpected_store_error: string | null;
  parked_batches: number;
}

export interface ApiError {
  detail: string;
}

/** A batch that can never be stored, and why. */
export interface ApiRefusal {
  detail: string;
  reason: string;
}

/**
 * `GET /api/v1/producers/{producer}/batches`: the seq ranges (inclusive) of the producer's stored batches,
 * the newest it received and whether the writer stores now.
 */
export interface ApiProducerBatches {
  producer: string;
  stored: number[][];
  /** The newest seq received from the producer, stored or still being written (null: none since the bridge started). */
  received_last_seq: number | null;
  /** How long ago it came, in seconds (null: none). */
  received_s_ago: number | null;
  /** The writer stores now: no store outage, no write failing unexpectedly. */
  writing: boolean;
}

export interface ApiRunsTableCount {
  /** null: the runs without a value. */
  value: string | null;
  runs: number;
}

/** The choices of the table's filters, over every run (of the project asked). */
export interface ApiRunsTableFacets {
  tags: string[];
  groups: string[];
  config_keys: string[];
  /** The values of `config_key`, when one is asked. */
  config_values?: string[] | null;
}

/**
 * `GET /api/v1/runs/table`: one page of the runs that match the filters, filtered, sorted and paged
 * by the bridge.
 */
export interface ApiRunsTable {
  /** Every run known (of the project asked). */
  total: number;
  /** Runs that match the filters. */
  matched: number;
  offset: number;
  limit: number;
  sort: string;
  runs: ApiRun[];
  /** The runs asked for by name (`run=`), wherever they are. */
  selected: ApiRun[];
  /** Of the runs asked for by name, those the filters hide. */
  selected_hidden: number;
  count_by: string;
  /** Matching runs per value of `count_by`, most first. */
  counts: ApiRunsTableCount[];
  facets: ApiRunsTableFacets;
}

/** Keys sharing the prefix before their first `/` (`""`: keys without one). */
export interface ApiKeySection {
  name: string;
  /** Where the section starts in the order of the matching keys. */
  offset: number;
  keys: number;
}

export interface ApiKeyEntry {
  key: string;
  /** The runs (indices into `runs`) that logged it. */
  runs: number[];
}

export interface ApiKeyRun {
  project: string;
  run: string;
  /** The run's first point: the origin of relative x. */
  first_ms: number | null;
}

/** `GET /api/v1/keys`: the scalar keys of some runs, in sections by prefix, one range of them. */
export interface ApiKeys {
  /** Keys of these runs. */
  total: number;
  /** Of them, those the search keeps. */
  matched: number;
  sections: ApiKeySection[];
  offset: number;
  limit: number;
  keys: ApiKeyEntry[];
  /** The runs asked, in order. */
  runs: ApiKeyRun[];
}

export interface ApiGroupRun {
  project: string;
  run: string;
}

/** Parallel arrays, one entry per pixel column where a run of the group has points. */
export interface ApiGroupColumns {
  column: number[];
  /** The mean x of the runs' values. */
  x: number[];
  /** The mean step of the runs' values (null: none). */
  step: (number | null)[];
  /** The mean wall time of the runs' values (null: none). */
  time_ms: (number | null)[];
  mean: ApiNumber[];
  std: ApiNumber[];
  min: ApiNumber[];
  max: ApiNumber[];
  /** Runs with a value in the column. */
  count: number[];
}

export interface ApiGroup {
  /** What its runs are grouped by (null: runs without it). */
  value: string | null;
  label: string;
  runs: ApiGroupRun[];
  /** Runs' values left out of the means for being NaN or ±Inf. */
  non_finite: number;
  columns: ApiGroupColumns;
}

/** `GET /api/v1/groups/series`: groups of runs as one curve each, per pixel column of the range. */
export interface ApiGroups {
  key: string;
  x: XMode;
  group_by: string;
  start: number | null;
  end: number | null;
  width: number;
  groups: ApiGroup[];
}

/** One group's column in the table form: the group, then the column's figures. */
export interface ApiGroupRow {
  group: string;
  value: string | null;
  runs: number;
  column: number;
  x: number;
  step: number | null;
  time_ms: number | null;
  mean: ApiNumber;
  std: ApiNumber;
  min: ApiNumber;
  max: ApiNumber;
  count: number;
}

/** `GET /api/v1/groups/table`: the groups as rows, one per group and column. */
export interface ApiGroupsTable {
  key: string;
  x: XMode;
  group_by: string;
  start: number | null;
  end: number | null;
  width: number;
  rows: ApiGroupRow[];
}

export interface LiveSubscription {
  project: string;
  run: string;
  /** Omitted or null: every key of the run. */
  keys?: string[] | null;
}

/** What a client sends, at any time: the full set of runs (and keys) it wants. */
export interface LiveSubscribe {
  subscribe: LiveSubscription[];
}

export interface LiveSeriesFrame {
  key: string;
  step: number[];
  time_ms: number[];
  y: ApiNumber[];
}

/** Points of a watched run, decoded and validated, maybe not stored yet. */
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
  reason: string;
}

/** A new run appeared (sent to every client). */
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

/** The client's subscription is in place: what changed before it may be missing from what it read. */
export interface LiveSubscribedMessage {
  type: 'subscribed';
  runs: number;
}

/** The client's last message could not be read; its subscriptions stay as they were. */
export interface LiveErrorMessage {
  type: 'error';
  error: string;
}

/** A message the bridge pushes on `WS /api/v1/live`. */
export type LiveMessage =
  | LiveAlertMessage
  | LivePointsMessage
  | LiveStatusMessage
  | LiveRunMessage
  | LiveGapMessage
  | LiveTextsMessage
  | LiveHistogramMessage
  | LiveSubscribedMessage
  | LiveErrorMessage;
