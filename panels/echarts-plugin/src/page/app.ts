// The page's composition root: the runs table, charts, run detail and live routing wired together in one place; each job lives in its own module.
import { DEFAULT_RUNS_SORT, TIMING } from '../constants/defaults';
import { assignColors, PALETTE } from '../core/palette';
import { runKey, runLabels, sameRun, type RunRef } from '../core/runs';
import { themeByName } from '../core/theme';
import type { ApiAlert, ApiRun, ApiRunsTable } from '../types/api';
import type { ChartSettings } from '../types/chart';
import { ApiClient } from './api';
import { ChartPanel } from './chartPanel';
import { ChartSections } from './chartSections';
import { FIRST_KEYS } from './sectionLayout';
import { chartsInfoText } from './chartSpecs';
import { Controls, type ControlValues } from './controls';
import { LiveRouter } from './liveRouter';
import { LiveSocket, type LiveState } from './liveSocket';
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
import type { RunFilter } from './runFilter';
import { runMenu } from './runActions';
import { RunDetail } from './runDetail';
import { RunsPanel } from './runsPanel';
import { firstPageQuery } from './runsQuery';
import { installTestHooks } from './testHooks';
import { readToken, storage, TOKEN_KEY } from './token';
import { parseViewState, serializeViewState, type PageTab, type ViewState } from './urlState';
import { debounce } from '../utils/timers';

const THEME_KEY = 'curvestream.theme';

/** Runs with at most this many keys get every key pushed live (a new key makes a new chart); more: only the charts' keys. */
const LIVE_ALL_KEYS = FIRST_KEYS;

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
  /** The runs the page knows: the table's page of rows and the selected runs. */
  private known = new Map<string, ApiRun>();
  private alerts: ApiAlert[] = [];
  private colors = new Map<string, string>();
  private readonly groupColors = new Map<string, string>();
  private theme: 'light' | 'dark' = initialTheme();
  /** Pick the newest run for the user until they choose themselves. */
  private autoSelect: boolean;
  private liveState: LiveState = 'offline';
  /** A runs list was asked for while the live socket was not open: read it again once it is. */
  private runsAskedBeforeLive = false;
  /** The charts' keys the live socket was last subscribed to (null: every key). */
  private subscribedKeys: string | null = null;

  private readonly api: ApiClient;
  private readonly live: LiveSocket;
  private readonly liveRouter: LiveRouter;
  private readonly controls: Controls;
  private readonly runsPanel: RunsPanel;
  private readonly sections: ChartSections;
  private readonly chartsView: ChartsView;
  private readonly banner: HTMLDivElement;
  private readonly detail: RunDetail;
  private readonly tabs: ReadonlyMap<PageTab, HTMLButtonElement>;

  private readonly reloadRunsSoon = debounce(() => void this.loadRuns(), TIMING.runsReloadMs);
  private readonly refreshKeysSoon = debounce(() => void this.sections.refresh(this.state.metricFilter), TIMING.metricsRefreshMs);
  private readonly resubscribeSoon = debounce(() => this.live.setSubscriptions(this.subscriptions()), TIMING.subscriptionsMs);

  constructor(private readonly root: HTMLElement) {
    this.state = parseViewState(window.location.search || window.location.hash);
    this.autoSelect = this.state.runs.length === 0;
    this.api = new ApiClient(document.baseURI, readToken);
    this.colors = assignColors(this.state.runs.map(runKey), this.colors);
    this.live = new LiveSocket(() => this.api.liveUrl(), {
      onMessage: (m) => this.liveRouter.route(m),
      onState: (s, reconnected) => this.onLiveState(s, reconnected),
    });
    this.controls = new Controls(this.controlValues(), (v) => this.onControls(v), () => this.toggleTheme());
    this.runsPanel = new RunsPanel(this.filter(), this.state.sort, this.state.runs, {
      onSelectionChange: (refs) => {
        this.autoSelect = false;
        void this.setSelection(refs);
      },
      onFilterChange: (f, sort) => {
        Object.assign(this.state, f);
        this.state.sort = sort;
        this.writeUrl();
      },
      loadPage: (query, signal) => this.api.runsTable(query, signal),
      onPage: (answer) => void this.onRunsPage(answer),
      onOpenRun: (ref) => void this.openRun(ref),
      onNumbers: () => this.detail.runsChanged(),
      onError: (error) => this.showError(error),
      runMenu: (run) =>
        runMenu(run, this.api, {
          onRenamed: () => void this.loadRuns(),
          onDeleted: (ref) => {
            const left = this.state.runs.filter((r) => !sameRun(r, ref));
            this.runsPanel.setSelected(left);
            void this.setSelection(left).then(() => this.loadRuns());
          },
          onError: (error) => this.showError(error),
        }),
    });
    this.sections = new ChartSections(this.state.folded, {
      fetchKeys: (refs, query, signal) => this.api.keys(refs, query, signal),
      makePanel: (key) => {
        const panel = new ChartPanel(key, this.chartSettings(), this.state.zoom, {
          api: this.api,
          onUserZoom: (window, source) => this.onZoom(window, source),
          onFullScreen: (p, on) => this.onFullScreen(p, on),
        });
        if (key === this.state.full) this.onFullScreen(panel, true); // a link to a chart shown full screen
        return panel;
      },
      fillPanel: (panel, runs, origins) => this.fillPanel(panel, runs, origins),
      onFoldChange: (folded) => {
        this.state.folded = folded;
        this.writeUrl();
      },
      onChange: () => this.onChartsChange(),
      onError: (error) => this.showError(error),
    });
    this.chartsView = buildChartsView(
      this.state,
      {
        onMetricFilter: (text) => {
          this.state.metricFilter = text;
          this.writeUrl();
          void this.sections.show(this.state.runs, text);
        },
        onGroupBy: (groupBy) => {
          this.state.groupBy = groupBy;
          this.writeUrl();
          this.sections.fillAll();
        },
        onGroupBand: (band) => {
          this.state.groupBand = band;
          this.writeUrl();
          this.sections.fillAll();
        },
        onResetZoom: () => this.onZoom(null, null),
      },
      this.sections.root,
    );
    fillGroupBy(this.chartsView.groupBy, [], this.state.groupBy);
    this.banner = buildBanner();
    this.detail = new RunDetail(this.api, themeByName(this.theme), {
      onFocusChange: (ref) => {
        this.state.focus = { ...ref };
        this.writeUrl();
      },
      run: (ref) => this.known.get(runKey(ref)),
      alerts: () => this.alerts,
      openCharts: (filter) => this.openCharts(filter),
    });
    this.liveRouter = new LiveRouter({
      appendToChart: (runId, frame) => {
        const panel = this.sections.panels.get(frame.key);
        panel?.appendLive(runId, frame);
        // a key laid out without a chart now (scrolled away, folded) is no new key
        return panel !== undefined || this.sections.knows(frame.key);
      },
      refreshCurves: (runId) => {
        for (const panel of this.sections.panels.values()) panel.refreshCurve(runId);
      },
      isSelected: (runId) => this.state.runs.some((r) => runKey(r) === runId),
      refreshMetricsSoon: () => this.refreshKeysSoon(),
      run: (runId) => this.known.get(runId),
      runsChanged: () => {
        this.runsPanel.refresh();
        this.detail.runsChanged();
      },
      reloadRunsSoon: () => this.reloadRunsSoon(),
      // a status that came between the table's read and the subscription was pushed to nobody
      subscribed: () => this.reloadRunsSoon(),
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
    document.addEventListener('keydown', (event) => {
      const full = this.state.full === null ? undefined : this.sections.panels.get(this.state.full);
      if (event.key === 'Escape' && full?.isFullScreen) this.onFullScreen(full, false);
    });
    this.detail.setRuns(this.state.runs, runLabels(this.state.runs), this.state.focus);
    // the runs the URL names: their keys are asked for before the runs list answers, their curves right after
    void this.sections.show(this.state.runs, this.state.metricFilter);
    installTestHooks({
      charts: () => [...this.sections.panels.values()].map((p) => p.snapshot()),
      chart: (key) => this.sections.panels.get(key)?.snapshot() ?? null,
      drawnSeries: (key) => this.sections.panels.get(key)?.drawnSeries() ?? null,
      curvePoints: (key) => this.sections.panels.get(key)?.curvePoints() ?? null,
      groupBands: (key) => this.sections.panels.get(key)?.groupBands() ?? null,
      pixelOf: (key, x, y) => this.sections.panels.get(key)?.pixelOf(x, y) ?? null,
      sections: () => this.sections.describe(),
      selected: () => this.state.runs.map((r) => ({ ...r })),
      runs: () => [...this.known.values()].map((r) => ({ project: r.project, run: r.run, state: r.state })),
      live: () => this.liveState,
      zoom: () => this.state.zoom,
    });
  }

  async start(): Promise<void> {
    this.live.start();
    this.live.setSubscriptions(this.subscriptions());
    // poll the runs list only while the live socket cannot tell us about new runs
    setInterval(() => void this.pollWhileOffline(), TIMING.runsPollMs);
    // point counts are not pushed: the rows of running runs are read again while the page is seen
    setInterval(() => {
      if (document.visibilityState !== 'hidden' && this.runsPanel.showsRunning()) void this.runsPanel.refreshNumbers();
    }, TIMING.runsNumbersMs);
    await this.loadRuns();
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
    for (const panel of this.sections.panels.values()) panel.setAlerts(this.alerts);
    this.detail.runsChanged();
  }

  private onAlert(alert: ApiAlert): void {
    this.alerts = [...this.alerts.filter((a) => a.id !== alert.id), alert];
    const run = this.known.get(runKey(alert));
    if (run) {
      run.alerts_firing = this.alerts.filter(
        (a) => a.project === run.project && a.run === run.run && a.state === 'firing',
      ).length;
      this.runsPanel.refresh();
    }
    // with "firing alerts" on, the table's rows follow the alerts
    if (this.state.alerting) this.reloadRunsSoon();
    for (const panel of this.sections.panels.values()) panel.setAlerts(this.alerts);
    this.detail.runsChanged();
  }

  /** The table's page again (runs came or changed), and the alerts (a filter or page change asks for neither). */
  private async loadRuns(): Promise<void> {
    if (this.liveState !== 'open') this.runsAskedBeforeLive = true;
    await this.runsPanel.reload();
    void this.loadAlerts();
  }

  /** A page of the runs table came: its runs and the selected ones are the runs the page knows now. */
  private async onRunsPage(answer: ApiRunsTable): Promise<void> {
    hideBanner(this.banner);
    const runs = [...answer.runs, ...answer.selected];
    this.known = new Map(runs.map((r) => [runKey(r), r]));
    this.liveRouter.noteRuns(runs);
    fillGroupBy(this.chartsView.groupBy, answer.facets.config_keys, this.state.groupBy);
    this.detail.runsChanged();
    if (this.autoSelect && this.state.runs.length === 0 && answer.total > 0) {
      this.autoSelect = false;
      const newest = await this.newestRun(answer);
      if (newest && this.state.runs.length === 0) {
        const refs = [{ project: newest.project, run: newest.run }];
        this.runsPanel.setSelected(refs);
        await this.setSelection(refs);
      }
    }
  }

  /** The newest run of all: the first row when the table shows every run newest first, else asked for. */
  private async newestRun(answer: ApiRunsTable): Promise<ApiRun | null> {
    if (answer.sort === DEFAULT_RUNS_SORT && answer.offset === 0 && answer.matched === answer.total) return answer.runs[0] ?? null;
    const noFilter: RunFilter = { search: '', tag: '', group: '', configKey: '', configValue: '', alerting: false };
    try {
      return (await this.api.runsTable({ ...firstPageQuery(noFilter, DEFAULT_RUNS_SORT, []), limit: 1 })).runs[0] ?? null;
    } catch (error) {
      this.showError(error);
      return null;
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
      for (const panel of this.sections.panels.values()) panel.refreshCurve(id);
      this.detail.activity(ref);
    }
  }

  /** A run's name was clicked: its own view (Run tab), the run selected along with the others. */
  private async openRun(ref: RunRef): Promise<void> {
    this.autoSelect = false;
    this.state.focus = { project: ref.project, run: ref.run };
    const refs = this.runsPanel.selectedRuns();
    let shown: Promise<void> | null = null;
    if (refs.some((r) => runKey(r) === runKey(ref))) {
      this.detail.setRuns(this.state.runs, runLabels(this.state.runs), this.state.focus);
    } else {
      refs.push(this.state.focus);
      this.runsPanel.setSelected(refs);
      shown = this.setSelection(refs); // the detail's runs and focus are set before its first wait
    }
    this.setTab('run');
    this.writeUrl();
    await shown;
  }

  /** A link of the Run tab: the charts, filtered as it says. */
  private openCharts(metricFilter: string): void {
    this.chartsView.metricFilter.value = metricFilter;
    this.state.metricFilter = metricFilter;
    this.setTab('charts');
    void this.sections.show(this.state.runs, metricFilter);
  }

  private async setSelection(refs: RunRef[]): Promise<void> {
    this.state.runs = refs.map((r) => ({ project: r.project, run: r.run }));
    this.colors = assignColors(this.state.runs.map(runKey), this.colors);
    this.writeUrl();
    this.live.setSubscriptions(this.subscriptions());
    this.detail.setRuns(this.state.runs, runLabels(this.state.runs), this.state.focus);
    await this.sections.show(this.state.runs, this.state.metricFilter);
  }

  /** What the live socket pushes: every key of runs with few, only the charts' keys of runs with many. */
  private subscriptions() {
    const keys = this.sections.total <= LIVE_ALL_KEYS ? null : [...this.sections.panels.keys()];
    return this.state.runs.map((r) => ({ project: r.project, run: r.run, keys }));
  }

  /**
   * The charts that exist changed: with the charts' keys subscribed, the socket is told at once (a new
   * chart's query and its subscription leave together, as a newly selected run's do); else once they settle.
   */
  private resubscribeForCharts(): void {
    const keys = this.sections.total <= LIVE_ALL_KEYS ? null : [...this.sections.panels.keys()].sort().join('\n');
    if (keys === this.subscribedKeys) return;
    this.subscribedKeys = keys;
    if (keys === null) this.resubscribeSoon();
    else this.live.setSubscriptions(this.subscriptions());
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

  /** A chart's curves: the selected runs that logged its key, in selection order, named and coloured. */
  private fillPanel(panel: ChartPanel, runs: RunRef[], originsMs: ReadonlyMap<string, number | null>): void {
    const labels = runLabels(this.state.runs);
    panel.setCurves(
      runs.map((ref) => {
        const id = runKey(ref);
        return { ref, id, name: labels.get(id) ?? ref.run, color: this.colors.get(id) ?? '#888', originMs: originsMs.get(id) ?? null };
      }),
    );
    const groupBy = this.state.groupBy;
    panel.setGroups(groupBy ? { groupBy, colorOf: (id) => this.groupColor(id) } : null, this.state.groupBand);
    panel.setAlerts(this.alerts);
  }

  /** A group's colour, the same on every chart: the palette's colours in the order groups are first seen. */
  private groupColor(id: string): string {
    let color = this.groupColors.get(id);
    if (color === undefined) {
      color = PALETTE[this.groupColors.size % PALETTE.length]!;
      this.groupColors.set(id, color);
    }
    return color;
  }

  /** Keys were listed, or the charts that exist changed (the page scrolled): the line above, the live keys. */
  private onChartsChange(): void {
    this.chartsView.info.textContent = chartsInfoText(this.state.runs.length, this.sections.total, this.sections.matched);
    this.resubscribeForCharts();
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

  /** One chart at most over the whole window; the page beneath does not scroll meanwhile. */
  private onFullScreen(panel: ChartPanel, on: boolean): void {
    for (const other of this.sections.panels.values()) if (other !== panel && other.isFullScreen) other.setFullScreen(false);
    panel.setFullScreen(on);
    this.state.full = on ? panel.key : null;
    document.documentElement.classList.toggle('chart-full-open', on);
    this.writeUrl();
  }

  private onZoom(window: [number, number] | null, source: ChartPanel | null): void {
    this.state.zoom = window;
    this.writeUrl();
    for (const panel of this.sections.panels.values()) if (panel !== source) panel.setWindow(window);
  }

  private onControls(values: ControlValues): void {
    const modeChanged = values.xMode !== this.state.xMode;
    Object.assign(this.state, values);
    if (modeChanged) this.state.zoom = null; // the old window is in other units
    this.writeUrl();
    const settings = this.chartSettings();
    for (const panel of this.sections.panels.values()) panel.setSettings(settings, this.state.zoom);
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
      for (const panel of this.sections.panels.values()) panel.refreshAll();
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
    for (const panel of this.sections.panels.values()) panel.setSettings(settings, this.state.zoom);
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
