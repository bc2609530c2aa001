/**
 * Stable `data-testid` values of the page, for browser tests. Change them only
 * together with the tests that use them.
 *
 * Each chart container (`chartTestId(key)`) also carries, for what is drawn now (a chart
 * scrolled off screen or on a hidden tab draws only once shown again; its attributes already
 * describe what it holds):
 * - `data-key`: the metric key;
 * - `data-points`: JSON object, series name -> number of points drawn inside
 *   the visible x range (the whole series when not zoomed), live points included;
 * - `data-raw`: "true" when every series shows all its points in that range
 *   (the bridge answered `raw: true` and nothing was downsampled since), else "false";
 * - `data-state`: "idle" (not scrolled into view yet), "loading", "ready" or "error";
 * - `data-smoothing`: "on" / "off"; `data-envelope`: "true" when a band is drawn (smoothing's
 *   min/max envelope, or the groups' bands);
 * - `data-groups` (only while grouping): JSON object, group name -> number of runs averaged.
 *
 * Each histogram card (`histogramTestId(key)`, Histograms tab) carries `data-state`,
 * `data-steps` (histograms drawn, one column each) and `data-bins`. The text log
 * (`textLog`) carries `data-count` (lines shown); each line (`textRow`) carries
 * `data-level` (text, debug, info, warning, error, critical), `data-key`, `data-step` and
 * `data-time-ms` (its wall time, as the API gives it).
 *
 * Each runs table row's Points cell (`runPoints`) carries `data-points`: the exact count shown.
 *
 * `window.__curvestream` offers the same as a read-only object (see page/testHooks.ts).
 */
export const TEST_IDS = {
  app: 'app',
  runsPanel: 'runs-panel',
  runsTable: 'runs-table',
  runRow: 'run-row',
  runCheckbox: 'run-checkbox',
  runState: 'run-state',
  runAlerts: 'run-alerts',
  runPoints: 'run-points',
  runId: 'run-id',
  runResumed: 'run-resumed',
  runMenu: 'run-menu',
  runRename: 'run-rename',
  runDelete: 'run-delete',
  alertsFilter: 'filter-alerts',
  runSearch: 'run-search',
  tagFilter: 'filter-tag',
  groupFilter: 'filter-group',
  configKeyFilter: 'filter-config-key',
  configValueFilter: 'filter-config-value',
  clearFilters: 'filter-clear',
  runsCount: 'runs-count',
  runsHiddenSelected: 'runs-hidden-selected',
  smoothingSlider: 'smoothing-slider',
  smoothingValue: 'smoothing-value',
  smoothingKind: 'smoothing-kind',
  xAxisSelect: 'x-axis-select',
  logYToggle: 'log-y-toggle',
  outliersToggle: 'ignore-outliers-toggle',
  envelopeToggle: 'envelope-toggle',
  themeToggle: 'theme-toggle',
  liveStatus: 'live-status',
  metricFilter: 'metric-filter',
  chartsGrid: 'charts',
  chartMode: 'chart-mode',
  chartNotes: 'chart-notes',
  chartResetZoom: 'chart-reset-zoom',
  chartFullScreen: 'chart-full-screen',
  emptyState: 'empty-state',
  errorBanner: 'error-banner',
  tokenInput: 'token-input',
  groupBySelect: 'group-by',
  groupBandSelect: 'group-band',
  tabCharts: 'tab-charts',
  tabHistograms: 'tab-histograms',
  tabLogs: 'tab-logs',
  tabRun: 'tab-run',
  runOpen: 'run-open',
  runView: 'run-view',
  runFacts: 'run-facts',
  runConfig: 'run-config',
  runSummary: 'run-summary',
  runChartsLink: 'run-charts-link',
  runAlertsTable: 'run-alerts-table',
  runAlertRow: 'run-alert',
  runLastValues: 'run-last-values',
  focusRun: 'focus-run',
  histograms: 'histograms',
  histogramsEmpty: 'histograms-empty',
  textLog: 'text-log',
  textRow: 'text-row',
  textSearch: 'text-search',
  textLevel: 'text-level',
  textKey: 'text-key',
  textCount: 'text-count',
  runsRange: 'runs-range',
  runsPrev: 'runs-prev',
  runsNext: 'runs-next',
  chartSection: 'chart-section',
  sectionToggle: 'section-toggle',
  groupRuns: 'group-runs',
  cardLegend: 'card-legend',
  legendSearch: 'legend-search',
  legendOrder: 'legend-order',
  legendMore: 'legend-more',
  legendItem: 'legend-item',
  chartsInfo: 'charts-info',
} as const;

/** The test id of the chart of one metric key (any Unicode, kept as is). */
export function chartTestId(key: string): string {
  return `chart-${key}`;
}

/** The test id of the histogram heatmap of one key. */
export function histogramTestId(key: string): string {
  return `histogram-${key}`;
}
