import { TIMING } from '../constants/defaults';
import { TEST_IDS } from '../constants/testIds';
import { groupByConfigKey, groupRuns, type GroupBandKind } from '../core/groups';
import { assignColors } from '../core/palette';
import { runKey, runLabels, type RunRef } from '../core/runs';
import { themeByName } from '../core/theme';
import type { ApiMetric, ApiRun, LiveMessage, RunState } from '../types/api';
import type { ChartSettings } from '../types/chart';
import { ApiClient, ApiError } from './api';
import { ChartPanel, type CurveSpec, type GroupSpec } from './chartPanel';
import { Controls, type ControlValues } from './controls';
import { clear, el } from './dom';
import { debounce } from '../utils/timers';
import { LiveSocket, type LiveState } from './liveSocket';
import { filterMetricKeys, firstPointMs, isScalarMetric, unionMetricKeys } from './metricKeys';
import { filterChoices, newestRun, type RunFilter } from './runFilter';
import { RunDetail } from './runDetail';
import { RunsPanel } from './runsPanel';
import { installTestHooks } from './testHooks';
import { parseViewState, serializeViewState, type PageTab, type ViewState } from './urlState';

const TOKEN_KEY = 'curvestream.readToken';
const THEME_KEY = 'curvestream.theme';
const STOPPED: ReadonlySet<RunState> = new Set(['finished', 'failed', 'lost']);

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

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
  private readonly metrics = new Map<string, ApiMetric[]>();
  private colors = new Map<string, string>();
  private groupColors = new Map<string, string>();
  private readonly panels = new Map<string, ChartPanel>();
  private readonly stopped = new Set<string>();
  private theme: 'light' | 'dark' = initialTheme();
  /** Pick the newest run for the user until they choose themselves. */
  private autoSelect: boolean;
  private liveState: LiveState = 'offline';

  private readonly api: ApiClient;
  private readonly live: LiveSocket;
  private readonly controls: Controls;
  private readonly runsPanel: RunsPanel;
  private readonly chartsEl: HTMLDivElement;
  private readonly chartsInfo: HTMLSpanElement;
  private readonly banner: HTMLDivElement;
  private readonly groupBySelect: HTMLSelectElement;
  private readonly groupBandSelect: HTMLSelectElement;
  private readonly chartsView: HTMLDivElement;
  private readonly detail: RunDetail;
  private readonly tabs = new Map<PageTab, HTMLButtonElement>();

  private readonly reloadRunsSoon = debounce(() => void this.loadRuns(), TIMING.runsReloadMs);
  private readonly metricsRefresh = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly stoppedReload = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly root: HTMLElement) {
    this.state = parseViewState(window.location.search || window.location.hash);
    this.autoSelect = this.state.runs.length === 0;
    this.api = new ApiClient(document.baseURI, () => storage()?.getItem(TOKEN_KEY) ?? null);
    this.live = new LiveSocket(() => this.api.liveUrl(), {
      onMessage: (m) => this.onLive(m),
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
    const metricFilter = el('input', {
      type: 'search',
      placeholder: 'Filter charts…',
      'data-testid': TEST_IDS.metricFilter,
      'aria-label': 'Filter charts by metric key',
    });
    metricFilter.value = this.state.metricFilter;
    metricFilter.addEventListener(
      'input',
      debounce(() => {
        this.state.metricFilter = metricFilter.value;
        this.writeUrl();
        this.syncCharts();
      }, TIMING.filterTypingMs),
    );
    this.groupBySelect = el('select', {
      'data-testid': TEST_IDS.groupBySelect,
      'aria-label': 'Group runs by',
      title: 'Draw a mean line and a band per group of runs (a sweep’s runs with the same value)',
    });
    this.groupBySelect.addEventListener('change', () => {
      this.state.groupBy = this.groupBySelect.value;
      this.groupBandSelect.disabled = !this.state.groupBy;
      this.writeUrl();
      this.syncCharts();
    });
    this.groupBandSelect = el(
      'select',
      { 'data-testid': TEST_IDS.groupBandSelect, 'aria-label': 'Group band', title: 'The band around each group’s mean' },
      el('option', { value: 'minmax', text: 'band: min–max' }),
      el('option', { value: 'std', text: 'band: ±1 std' }),
    );
    this.groupBandSelect.value = this.state.groupBand;
    this.groupBandSelect.disabled = !this.state.groupBy;
    this.groupBandSelect.addEventListener('change', () => {
      this.state.groupBand = this.groupBandSelect.value as GroupBandKind;
      this.writeUrl();
      this.syncCharts();
    });
    this.fillGroupBy();
    const resetZoom = el('button', { type: 'button', class: 'link-button', text: 'reset zoom' });
    resetZoom.addEventListener('click', () => this.onZoom(null, null));
    this.chartsInfo = el('span', { class: 'muted' });
    this.chartsEl = el('div', { class: 'charts', 'data-testid': TEST_IDS.chartsGrid });
    this.banner = el('div', { class: 'banner', 'data-testid': TEST_IDS.errorBanner, hidden: true });
    this.detail = new RunDetail(this.api, themeByName(this.theme), {
      onFocusChange: (ref) => {
        this.state.focus = { ...ref };
        this.writeUrl();
      },
    });
    const tabBar = el('nav', { class: 'tabs', role: 'tablist' });
    for (const [tab, label, testId] of [
      ['charts', 'Charts', TEST_IDS.tabCharts],
      ['histograms', 'Histograms', TEST_IDS.tabHistograms],
      ['logs', 'Logs', TEST_IDS.tabLogs],
    ] as const) {
      const button = el('button', { type: 'button', role: 'tab', class: 'tab', 'data-testid': testId, text: label });
      button.addEventListener('click', () => this.setTab(tab));
      this.tabs.set(tab, button);
      tabBar.append(button);
    }
    this.chartsView = el(
      'div',
      { class: 'charts-view' },
      el(
        'div',
        { class: 'toolbar' },
        metricFilter,
        this.groupBySelect,
        this.groupBandSelect,
        this.chartsInfo,
        el('span', { class: 'spacer' }),
        resetZoom,
      ),
      this.chartsEl,
    );

    this.root.dataset.testid = TEST_IDS.app;
    clear(this.root);
    this.root.append(
      this.controls.root,
      this.banner,
      el(
        'main',
        {},
        this.runsPanel.root,
        el('section', { class: 'charts-panel' }, tabBar, this.chartsView, this.detail.root),
      ),
    );
    this.applyTheme();
    this.showTab();
    installTestHooks({
      charts: () => [...this.panels.values()].map((p) => p.snapshot()),
      drawnSeries: (key) => this.panels.get(key)?.drawnSeries() ?? null,
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
    await this.loadRuns();
    await this.setSelection(this.state.runs);
  }

  // ---- runs and selection ----

  private filter(): RunFilter {
    const { search, tag, group, configKey, configValue } = this.state;
    return { search, tag, group, configKey, configValue };
  }

  private async loadRuns(): Promise<void> {
    try {
      this.runs = await this.api.runs();
      this.hideBanner();
    } catch (error) {
      this.showError(error);
      return;
    }
    for (const run of this.runs) {
      const key = runKey(run);
      if (STOPPED.has(run.state)) this.stopped.add(key);
      else this.stopped.delete(key);
    }
    this.runsPanel.setRuns(this.runs);
    this.fillGroupBy();
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
      if (this.stopped.has(id)) continue;
      for (const panel of this.panels.values()) panel.refreshCurve(id);
      this.detail.activity(ref);
    }
  }

  private async setSelection(refs: RunRef[]): Promise<void> {
    this.state.runs = refs.map((r) => ({ project: r.project, run: r.run }));
    this.colors = assignColors(this.state.runs.map(runKey), this.colors);
    this.writeUrl();
    this.live.setSubscriptions(this.subscriptions());
    await Promise.all(this.state.runs.filter((r) => !this.metrics.has(runKey(r))).map((r) => this.loadMetrics(r)));
    this.syncCharts();
  }

  private async loadMetrics(ref: RunRef): Promise<void> {
    try {
      this.metrics.set(runKey(ref), await this.api.metrics(ref));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) this.metrics.set(runKey(ref), []);
      else this.showError(error);
    }
  }

  /** A live frame named a key we have no chart for: look at that run's metrics again, soon. */
  private refreshMetricsSoon(ref: RunRef): void {
    const key = runKey(ref);
    if (this.metricsRefresh.has(key)) return;
    this.metricsRefresh.set(
      key,
      setTimeout(async () => {
        await this.loadMetrics(ref);
        this.metricsRefresh.delete(key);
        this.syncCharts();
      }, TIMING.metricsRefreshMs),
    );
  }

  private reloadStoppedSoon(id: string): void {
    const pending = this.stoppedReload.get(id);
    if (pending !== undefined) clearTimeout(pending);
    this.stoppedReload.set(
      id,
      setTimeout(() => {
        this.stoppedReload.delete(id);
        for (const panel of this.panels.values()) panel.refreshCurve(id);
      }, TIMING.finishedRefreshMs),
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
    const lists = selected.map((r) => this.metrics.get(runKey(r)) ?? []);
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
      const anchor: ChildNode | null = previous ? previous.nextSibling : this.chartsEl.firstChild;
      if (panel.root !== anchor) this.chartsEl.insertBefore(panel.root, anchor);
      previous = panel.root;

      const specs: CurveSpec[] = [];
      selected.forEach((ref, i) => {
        const metrics = lists[i] ?? [];
        if (!metrics.some((m) => m.key === key && isScalarMetric(m))) return;
        const id = runKey(ref);
        specs.push({
          ref,
          id,
          name: labels.get(id) ?? ref.run,
          color: this.colors.get(id) ?? '#888',
          originMs: firstPointMs(metrics),
        });
      });
      panel.setCurves(specs);
      panel.setGroups(groups ? this.groupSpecs(groups, specs) : null, this.state.groupBand);
    }

    this.chartsInfo.textContent =
      selected.length === 0
        ? 'Select runs to plot their metrics.'
        : allKeys.length === 0
          ? 'The selected runs have no metrics yet.'
          : `${keys.length} of ${allKeys.length} metrics · ${selected.length} run${selected.length === 1 ? '' : 's'}`;
  }

  /** The groups of one chart: only the runs that have its key; groups left empty are not drawn. */
  private groupSpecs(groups: ReturnType<typeof groupRuns>, specs: readonly CurveSpec[]): GroupSpec[] {
    const present = new Set(specs.map((s) => s.id));
    return groups.flatMap((g) => {
      const memberIds = g.members.map(runKey).filter((id) => present.has(id));
      if (memberIds.length === 0) return [];
      const runs = memberIds.length === 1 ? '1 run' : `${memberIds.length} runs`;
      return [{ id: g.id, name: `${g.label} (${runs})`, color: this.groupColors.get(g.id) ?? '#888', memberIds }];
    });
  }

  /** The group-by choices: none, the run group, and every config key of the known runs. */
  private fillGroupBy(): void {
    const current = this.state.groupBy;
    const values = ['', 'group', ...filterChoices(this.runs).configKeys.map(groupByConfigKey)];
    if (current && !values.includes(current)) values.push(current);
    const text = (v: string) => (v === '' ? 'no grouping' : v === 'group' ? 'group by: run group' : `group by: ${v.slice(7)}`);
    clear(this.groupBySelect);
    for (const v of values) this.groupBySelect.append(el('option', { value: v, text: text(v) }));
    this.groupBySelect.value = current;
  }

  private setTab(tab: PageTab): void {
    if (tab === this.state.tab) return;
    this.state.tab = tab;
    this.writeUrl();
    this.showTab();
  }

  private showTab(): void {
    const tab = this.state.tab;
    for (const [name, button] of this.tabs) {
      button.setAttribute('aria-selected', String(name === tab));
      button.classList.toggle('active', name === tab);
    }
    this.chartsView.hidden = tab !== 'charts';
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

  private onLive(message: LiveMessage): void {
    switch (message.type) {
      case 'points': {
        const id = runKey(message);
        if (!Array.isArray(message.series)) return;
        if (this.stopped.has(id)) {
          // a stopped run takes no more appends; points that still come (a killed run's spool sent
          // later by `curvestream sync`) are loaded with one query once they stop coming
          this.reloadStoppedSoon(id);
          return;
        }
        for (const frame of message.series) {
          const panel = this.panels.get(frame.key);
          if (panel) panel.appendLive(id, frame);
          else if (this.state.runs.some((r) => runKey(r) === id)) this.refreshMetricsSoon(message);
        }
        return;
      }
      case 'status': {
        const id = runKey(message);
        const run = this.runs.find((r) => runKey(r) === id);
        if (run) {
          run.state = message.state;
          run.reason = message.reason ?? '';
          this.runsPanel.setRuns(this.runs);
        } else {
          this.reloadRunsSoon();
        }
        if (STOPPED.has(message.state)) {
          this.stopped.add(id);
          // a last frame may have raced the status: load the run's curves once more
          this.reloadStoppedSoon(id);
        } else {
          this.stopped.delete(id);
        }
        return;
      }
      case 'run':
        this.reloadRunsSoon();
        return;
      case 'gap': {
        // the bridge skipped points of this run: ask again for what the charts show
        const id = runKey(message);
        for (const panel of this.panels.values()) panel.refreshCurve(id);
        this.detail.gap(message);
        return;
      }
      case 'texts':
        if (Array.isArray(message.texts)) this.detail.texts(message);
        return;
      case 'histogram':
        if (typeof message.key === 'string') this.detail.histogram(message);
        return;
    }
  }

  private onLiveState(state: LiveState, reconnected: boolean): void {
    this.liveState = state;
    this.controls.setLive(state);
    if (state === 'open' && reconnected) {
      // pushes may have been missed while the socket was down
      void this.loadRuns();
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
    clear(this.banner);
    this.banner.hidden = false;
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      const input = el('input', {
        type: 'password',
        placeholder: 'read token',
        'data-testid': TEST_IDS.tokenInput,
        'aria-label': 'Read token',
      });
      const save = el('button', { type: 'button', text: 'use token' });
      save.addEventListener('click', () => {
        storage()?.setItem(TOKEN_KEY, input.value.trim());
        this.hideBanner();
        // the socket carries the token in its URL: open it again
        this.live.stop();
        this.live.start();
        void this.loadRuns().then(() => this.setSelection(this.state.runs));
      });
      this.banner.append('The bridge asks for a read token (CURVESTREAM_READ_TOKEN). ', input, save);
      return;
    }
    const text = error instanceof Error ? error.message : String(error);
    this.banner.append(`Cannot reach the bridge: ${text}`);
  }

  private hideBanner(): void {
    this.banner.hidden = true;
    clear(this.banner);
  }
}
