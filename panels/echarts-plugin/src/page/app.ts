// The page's composition root: the runs table, charts, run detail and live routing wired together in one place; each job lives in its own module.
import { TIMING } from '../constants/defaults';
import { groupRuns, type GroupBandKind } from '../core/groups';
import { assignColors } from '../core/palette';
import { runKey, runLabels, type RunRef } from '../core/runs';
import { themeByName } from '../core/theme';
import type { ApiAlert, ApiRun } from '../types/api';
import type { ChartSettings } from '../types/chart';
import { ApiClient } from './api';
import { ChartPanel } from './chartPanel';
import { chartsInfoText, curveSpecsFor, groupSpecsFor } from './chartSpecs';
import { Controls, type ControlValues } from './controls';
import { LiveRouter } from './liveRouter';
import { LiveSocket, type LiveState } from './liveSocket';
import { filterMetricKeys, unionMetricKeys } from './metricKeys';
import { loadChartsNearViewport } from './nearViewport';
import {
  buildBanner,
  buildChartsView,
  buildTabBar,
  fillGroupBy,
  hideBanner,
  mountPage,
  showActiveTab,
  showBannerError,
  type ChartsView,
} from './pageLayout';
import { newestRun, type RunFilter } from './runFilter';
import { RunDetail } from './runDetail';
import { RunMetrics } from './runMetrics';
import { RunsPanel } from './runsPanel';
import { installTestHooks } from './testHooks';
import { readToken, storage, TOKEN_KEY } from './token';
import { parseViewState, serializeViewState, type PageTab, type ViewState } from './urlState';
import { debounce } from '../utils/timers';

const THEME_KEY = 'curvestream.theme';

function initialTheme(): 'light' | 'dark' {
  const saved = storage()?.getItem(THEME_KEY);
  if (saved === 'light' || saved === 'dark') return saved;
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/**
 * The page: runs table, one chart per metric key of the selected runs, live
 * updates over the WebSocket, and the view kept in the URL.
 */
export class App {
  private state: ViewState;
  private runs: ApiRun[] = [];
  private alerts: ApiAlert[] = [];
  private readonly metrics: RunMetrics;
  private colors = new Map<string, string>();
  private groupColors = new Map<string, string>();
  private readonly panels = new Map<string, ChartPanel>();
  private theme: 'light' | 'dark' = initialTheme();
  /** Pick the newest run for the user until they choose themselves. */
  private autoSelect: boolean;
  private liveState: LiveState = 'offline';
  /** A runs list was asked for while the live socket was not open: read it again once it is. */
  private runsAskedBeforeLive = false;

  private readonly api: ApiClient;
  private readonly live: LiveSocket;
  private readonly liveRouter: LiveRouter;
  private readonly controls: Controls;
  private readonly runsPanel: RunsPanel;
  private readonly chartsView: ChartsView;
  private readonly banner: HTMLDivElement;
  private readonly detail: RunDetail;
  private readonly tabs: ReadonlyMap<PageTab, HTMLButtonElement>;

  private readonly reloadRunsSoon = debounce(() => void this.loadRuns(), TIMING.runsReloadMs);
  private readonly metricsRefresh = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly root: HTMLElement) {
    this.state = parseViewState(window.location.search || window.location.hash);
    this.autoSelect = this.state.runs.length === 0;
    this.api = new ApiClient(document.baseURI, readToken);
    this.metrics = new RunMetrics((refs) => this.api.metricsMany(refs), (error) => this.showError(error));
    // the runs the URL names: their metrics are asked for before the page is built, their curves right after
    void this.metrics.load(this.state.runs);
    this.live = new LiveSocket(() => this.api.liveUrl(), {
      onMessage: (m) => this.liveRouter.route(m),
      onState: (s, reconnected) => this.onLiveState(s, reconnected),
    });
    this.controls = new Controls(this.controlValues(), (v) => this.onControls(v), () => this.toggleTheme());
    this.runsPanel = new RunsPanel(this.filter(), this.state.runs, {
      onSelectionChange: (refs) => {
        this.autoSelect = false;
        this.setSelection(refs);
      },
      onFilterChange: (f) => {
        Object.assign(this.state, f);
        this.writeUrl();
      },
    });
    this.chartsView = buildChartsView(this.state, {
      onMetricFilter: (text) => {
        this.state.metricFilter = text;
        this.writeUrl();
        this.syncCharts();
      },
      onGroupBy: (groupBy) => {
        this.state.groupBy = groupBy;
        this.writeUrl();
        this.syncCharts();
      },
      onGroupBand: (band) => {
        this.state.groupBand = band;
        this.writeUrl();
        this.syncCharts();
      },
      onResetZoom: () => this.onZoom(null, null),
    });
    fillGroupBy(this.chartsView.groupBy, this.runs, this.state.groupBy);
    this.banner = buildBanner();
    this.detail = new RunDetail(this.api, themeByName(this.theme), {
      onFocusChange: (ref) => {
        this.state.focus = { ...ref };
        this.writeUrl();
      },
    });
    this.liveRouter = new LiveRouter({
      appendToChart: (runId, frame) => {
        const panel = this.panels.get(frame.key);
        panel?.appendLive(runId, frame);
        return panel !== undefined;
      },
      refreshCurves: (runId) => {
        for (const panel of this.panels.values()) panel.refreshCurve(runId);
      },
      isSelected: (runId) => this.state.runs.some((r) => runKey(r) === runId),
      refreshMetricsSoon: (ref) => this.refreshMetricsSoon(ref),
      run: (runId) => this.runs.find((r) => runKey(r) === runId),
      runsChanged: () => this.runsPanel.setRuns(this.runs),
      reloadRunsSoon: () => this.reloadRunsSoon(),
      alert: (alert) => this.onAlert(alert),
      detail: this.detail,
    });
    const tabBar = buildTabBar((tab) => this.setTab(tab));
    this.tabs = tabBar.tabs;
    mountPage(this.root, {
      controls: this.controls.root,
      banner: this.banner,
      runs: this.runsPanel.root,
      tabBar: tabBar.root,
      views: [this.chartsView.root, this.detail.root],
    });
    this.applyTheme();
    this.showTab();
    installTestHooks({
      charts: () => [...this.panels.values()].map((p) => p.snapshot()),
      chart: (key) => this.panels.get(key)?.snapshot() ?? null,
      drawnSeries: (key) => this.panels.get(key)?.drawnSeries() ?? null,
      curvePoints: (key) => this.panels.get(key)?.curvePoints() ?? null,
      selected: () => this.state.runs.map((r) => ({ ...r })),
      runs: () => this.runs.map((r) => ({ project: r.project, run: r.run, state: r.state })),
      live: () => this.liveState,
      zoom: () => this.state.zoom,
    });
  }

  async start(): Promise<void> {
    this.live.start();
    this.live.setSubscriptions(this.subscriptions());
    // poll the runs list only while the live socket cannot tell us about new runs
    setInterval(() => void this.pollWhileOffline(), TIMING.runsPollMs);
    const runs = this.loadRuns();
    if (this.state.runs.length === 0) await runs; // it may pick the newest run
    // runs named by the URL: their curves need not wait for the runs list
    await Promise.all([runs, this.setSelection(this.state.runs)]);
  }

  // ---- runs and selection ----

  private filter(): RunFilter {
    const { search, tag, group, configKey, configValue, alerting } = this.state;
    return { search, tag, group, configKey, configValue, alerting };
  }

  // ---- alerts ----

  /** Every alert's latest change; a bridge without the alerts API leaves the list empty. */
  private async loadAlerts(): Promise<void> {
    try {
      this.alerts = await this.api.alerts();
    } catch {
      return;
    }
    for (const panel of this.panels.values()) panel.setAlerts(this.alerts);
  }

  private onAlert(alert: ApiAlert): void {
    this.alerts = [...this.alerts.filter((a) => a.id !== alert.id), alert];
    const run = this.runs.find((r) => r.project === alert.project && r.run === alert.run);
    if (run) {
      run.alerts_firing = this.alerts.filter(
        (a) => a.project === run.project && a.run === run.run && a.state === 'firing',
      ).length;
      this.runsPanel.setRuns(this.runs);
    }
    for (const panel of this.panels.values()) panel.setAlerts(this.alerts);
  }

  private async loadRuns(): Promise<void> {
    if (this.liveState !== 'open') this.runsAskedBeforeLive = true;
    try {
      this.runs = await this.api.runs();
      hideBanner(this.banner);
    } catch (error) {
      this.showError(error);
      return;
    }
    this.liveRouter.noteRuns(this.runs);
    this.runsPanel.setRuns(this.runs);
    void this.loadAlerts();
    fillGroupBy(this.chartsView.groupBy, this.runs, this.state.groupBy);
    if (this.state.groupBy) this.syncCharts(); // group members may have changed
    if (this.autoSelect && this.state.runs.length === 0) {
      const newest = newestRun(this.runs);
      if (newest) {
        this.autoSelect = false;
        const refs = [{ project: newest.project, run: newest.run }];
        this.runsPanel.setSelected(refs);
        await this.setSelection(refs);
      }
    }
  }

  /**
   * Without the live socket: the runs list, and the curves, histograms and
   * text lines (only the newer ones) of selected running runs, by polling.
   */
  private async pollWhileOffline(): Promise<void> {
    if (this.liveState === 'open') return;
    await this.loadRuns();
    for (const ref of this.state.runs) {
      const id = runKey(ref);
      if (this.liveRouter.isStopped(id)) continue;
      for (const panel of this.panels.values()) panel.refreshCurve(id);
      this.detail.activity(ref);
    }
  }

  private async setSelection(refs: RunRef[]): Promise<void> {
    this.state.runs = refs.map((r) => ({ project: r.project, run: r.run }));
    this.colors = assignColors(this.state.runs.map(runKey), this.colors);
    this.writeUrl();
    this.live.setSubscriptions(this.subscriptions());
    await this.metrics.load(this.state.runs);
    this.syncCharts();
  }

  /** A live frame named a key we have no chart for: look at that run's metrics again, soon. */
  private refreshMetricsSoon(ref: RunRef): void {
    const key = runKey(ref);
    if (this.metricsRefresh.has(key)) return;
    this.metricsRefresh.set(
      key,
      setTimeout(async () => {
        await this.metrics.load([ref], true);
        this.metricsRefresh.delete(key);
        this.syncCharts();
      }, TIMING.metricsRefreshMs),
    );
  }

  private subscriptions() {
    return this.state.runs.map((r) => ({ project: r.project, run: r.run, keys: null }));
  }

  // ---- charts ----

  private chartSettings(): ChartSettings {
    return {
      xMode: this.state.xMode,
      logY: this.state.logY,
      ignoreOutliers: this.state.ignoreOutliers,
      smoothing: this.state.smoothing,
      smoothingKind: this.state.smoothingKind,
      showEnvelope: this.state.showEnvelope,
      theme: themeByName(this.theme),
    };
  }

  /** One chart per metric key of the selected runs, each with the runs that have that key. */
  private syncCharts(): void {
    const selected = this.state.runs;
    const lists = selected.map((r) => this.metrics.get(r) ?? []);
    const allKeys = unionMetricKeys(lists);
    const keys = filterMetricKeys(allKeys, this.state.metricFilter);
    const labels = runLabels(selected);
    const settings = this.chartSettings();
    const groups = this.state.groupBy ? groupRuns(selected, this.runs, this.state.groupBy) : null;
    if (groups) this.groupColors = assignColors(groups.map((g) => g.id), this.groupColors);
    this.detail.setRuns(selected, labels, this.state.focus);

    for (const [key, panel] of this.panels) {
      if (!keys.includes(key)) {
        panel.dispose();
        this.panels.delete(key);
      }
    }
    let previous: HTMLElement | null = null;
    for (const key of keys) {
      let panel = this.panels.get(key);
      if (!panel) {
        panel = new ChartPanel(key, settings, this.state.zoom, {
          api: this.api,
          onUserZoom: (window, source) => this.onZoom(window, source),
        });
        this.panels.set(key, panel);
      }
      // keep page order = key order
      const grid = this.chartsView.grid;
      const anchor: ChildNode | null = previous ? previous.nextSibling : grid.firstChild;
      if (panel.root !== anchor) grid.insertBefore(panel.root, anchor);
      previous = panel.root;

      const specs = curveSpecsFor(key, selected, lists, labels, this.colors);
      panel.setCurves(specs);
      panel.setGroups(groups ? groupSpecsFor(groups, specs, this.groupColors) : null, this.state.groupBand);
      panel.setAlerts(this.alerts);
    }

    this.chartsView.info.textContent = chartsInfoText(selected.length, allKeys.length, keys.length);
    loadChartsNearViewport(this.panels.values());
  }

  private setTab(tab: PageTab): void {
    if (tab === this.state.tab) return;
    this.state.tab = tab;
    this.writeUrl();
    this.showTab();
  }

  private showTab(): void {
    const tab = this.state.tab;
    showActiveTab(this.tabs, tab);
    this.chartsView.root.hidden = tab !== 'charts';
    this.detail.setTab(tab === 'charts' ? null : tab);
  }

  private onZoom(window: [number, number] | null, source: ChartPanel | null): void {
    this.state.zoom = window;
    this.writeUrl();
    for (const panel of this.panels.values()) if (panel !== source) panel.setWindow(window);
  }

  private onControls(values: ControlValues): void {
    const modeChanged = values.xMode !== this.state.xMode;
    Object.assign(this.state, values);
    if (modeChanged) this.state.zoom = null; // the old window is in other units
    this.writeUrl();
    const settings = this.chartSettings();
    for (const panel of this.panels.values()) panel.setSettings(settings, this.state.zoom);
  }

  private controlValues(): ControlValues {
    const { smoothing, smoothingKind, xMode, logY, ignoreOutliers, showEnvelope } = this.state;
    return { smoothing, smoothingKind, xMode, logY, ignoreOutliers, showEnvelope };
  }

  // ---- live ----

  private onLiveState(state: LiveState, reconnected: boolean): void {
    this.liveState = state;
    this.controls.setLive(state);
    if (state !== 'open') return;
    // pushes may have been missed while the socket was down, or before it first opened
    if (reconnected || this.runsAskedBeforeLive) {
      this.runsAskedBeforeLive = false;
      void this.loadRuns();
    }
    if (reconnected) {
      for (const panel of this.panels.values()) panel.refreshAll();
      for (const ref of this.state.runs) this.detail.activity(ref);
    }
  }

  // ---- URL, theme, errors ----

  private writeUrl(): void {
    const query = serializeViewState(this.state);
    const url = `${window.location.pathname}${query}`;
    if (url !== `${window.location.pathname}${window.location.search}`) window.history.replaceState(null, '', url);
  }

  private toggleTheme(): void {
    this.theme = this.theme === 'dark' ? 'light' : 'dark';
    storage()?.setItem(THEME_KEY, this.theme);
    this.applyTheme();
    this.detail.setTheme(themeByName(this.theme));
    const settings = this.chartSettings();
    for (const panel of this.panels.values()) panel.setSettings(settings, this.state.zoom);
  }

  private applyTheme(): void {
    document.documentElement.dataset.theme = this.theme;
    this.controls.setTheme(this.theme);
  }

  private showError(error: unknown): void {
    showBannerError(this.banner, error, (token) => {
      storage()?.setItem(TOKEN_KEY, token);
      hideBanner(this.banner);
      // the socket carries the token in its URL: open it again
      this.live.stop();
      this.live.start();
      void this.loadRuns().then(() => this.setSelection(this.state.runs));
    });
  }
}
