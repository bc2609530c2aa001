import { TIMING } from '../constants/defaults';
import { chartTestId, TEST_IDS } from '../constants/testIds';
import { chartAlertsText } from '../core/alerts';
import type { GroupBandKind } from '../core/groups';
import { computeLayers, type ChartLayers } from '../core/layers';
import { rangeCovers } from '../core/lineRange';
import { plotWidthPx } from '../core/options';
import { ChartHost } from '../host/chartHost';
import type { DrawnSeries } from '../host/drawnSeries';
import { sameWindow } from '../host/zoom';
import { nearestIndex } from '../core/tooltip';
import type { ApiAlert, ApiGroups, LiveSeriesFrame } from '../types/api';
import type { ChartModel, ChartSettings } from '../types/chart';
import { throttle } from '../utils/timers';
import type { ApiClient, SeriesQuery } from './api';
import { CardLegend, ECHARTS_LEGEND_MAX, lastFinite } from './chartLegend';
import { chartModelOf, groupBand, groupId, groupName, type GroupView } from './chartModel';
import {
  cardSummary,
  curveSnapshot,
  groupSnapshots,
  writeCardSummary,
  type ChartSnapshot,
  type ChartState,
  type CurvePoints,
  type GroupBands,
} from './chartSnapshot';
import {
  cancelLoad,
  drawnData,
  drawnRaw,
  isLoading,
  loadCurves,
  newCurve,
  queryBounds,
  receiveLive,
  resetCurve,
  type ChartView,
  type Curve,
  type CurveSpec,
} from './curveLoading';
import { clear, el } from './dom';
import { loadECharts } from './echartsLoader';
import { isNearViewport, NEAR_VIEWPORT_PX } from './nearViewport';

export type { CurveSpec } from './curveLoading';

/** How a chart groups its runs: by what, and each group's colour (the same on every chart). */
export interface GroupRequest {
  groupBy: string;
  colorOf(id: string): string;
}

/** What a chart needs from the page around it. */
export interface ChartPanelContext {
  api: ApiClient;
  /** The user zoomed this chart (null: back to everything); x units of the current mode. */
  onUserZoom(window: [number, number] | null, source: ChartPanel): void;
  /** The user asked for this chart over the whole window (`on`), or back in its place; none: no such button. */
  onFullScreen?(panel: ChartPanel, on: boolean): void;
}

/**
 * One metric key's chart: every selected run's curve, loaded at the plot's
 * pixel width, re-queried at full detail for the visible range on zoom, and
 * extended in place by live points.
 */
export class ChartPanel {
  readonly root: HTMLElement;
  private readonly canvas: HTMLDivElement;
  private readonly modeBadge: HTMLSpanElement;
  private readonly notesEl: HTMLSpanElement;
  private readonly messageEl: HTMLDivElement;
  private readonly fullButton: HTMLButtonElement;
  /** Drawn over the whole window (the page lets one chart be). */
  private full = false;
  /** Made once the chart is near the viewport and ECharts has loaded (echartsLoader.ts). */
  private chart: ChartHost | null = null;
  private disposed = false;
  private readonly curves = new Map<string, Curve>();
  private window: [number, number] | null;
  private widthPx = 800;
  /** The chart exists and has loaded (it came near the viewport once). */
  private visible = false;
  /** Near the viewport now: only then are frames drawn. */
  private onScreen = false;
  /** A render was skipped while off screen: `true` when it was a structure change. */
  private pendingRender: boolean | null = null;
  /** Grouping: the bridge's groups of the chart's runs are drawn instead of the runs (no curve is loaded). */
  private groups: GroupView | null = null;
  private groupBy: string | null = null;
  private groupLoad: AbortController | null = null;
  private groupError: string | null = null;
  private alerts: readonly ApiAlert[] = [];
  private readonly legend: CardLegend;
  /** Curves the legend makes stand out; null: none. */
  private highlighted: Set<string> | null = null;
  private readonly groupRunsEl: HTMLDivElement;
  private renders = 0;
  /**
   * The user's gesture moved the window and ECharts shows it already, in its own terms (a fraction of
   * the data): the next drawing (most often the answer's) holds it in x values, so live points growing
   * the axis do not shift it.
   */
  private windowToHold = false;
  /** The x window the chart shows (null: everything), as far as the page knows: drawn again when the model's differs. */
  private shownWindow: [number, number] | null = null;
  private state: ChartState = 'idle';
  private layers: ChartLayers | null = null;
  private lastModel: ChartModel | null = null;
  private readonly resizeObserver: ResizeObserver;
  private readonly intersectionObserver: IntersectionObserver;
  private readonly renderSoon = throttle(() => this.render(false), TIMING.liveDrawMs);
  // the answers of several curves' queries (a first load, a zoom) come one by one: see drawAnswer()
  private readonly drawAnswersSoon = throttle(() => this.render(false), TIMING.answersDrawMs);
  // live points of grouped runs: the groups are asked for again, at most this often
  private readonly regroupSoon = throttle(() => void this.loadGroups(), TIMING.groupLiveMs);

  constructor(
    readonly key: string,
    private settings: ChartSettings,
    window: [number, number] | null,
    private readonly context: ChartPanelContext,
  ) {
    this.window = window;
    this.canvas = el('div', { class: 'chart-canvas' });
    this.modeBadge = el('span', { class: 'badge mode', 'data-testid': TEST_IDS.chartMode, title: '' });
    this.notesEl = el('span', { class: 'chart-notes', 'data-testid': TEST_IDS.chartNotes });
    this.messageEl = el('div', { class: 'chart-message', hidden: true });
    this.legend = new CardLegend((ids) => this.highlight(ids));
    this.groupRunsEl = el('div', { class: 'group-runs', 'data-testid': TEST_IDS.groupRuns, hidden: true });
    const reset = el('button', {
      class: 'icon-button',
      type: 'button',
      title: 'Show the whole x range',
      'data-testid': TEST_IDS.chartResetZoom,
      text: '↺',
    });
    // this chart zooms out itself (the page tells only the others), as after a gesture
    reset.addEventListener('click', () => this.finishUserZoom(null));
    this.fullButton = el('button', {
      class: 'icon-button',
      type: 'button',
      title: 'Full screen',
      'data-testid': TEST_IDS.chartFullScreen,
      text: '⤢',
      hidden: !context.onFullScreen,
    });
    this.fullButton.addEventListener('click', () => this.context.onFullScreen?.(this, !this.full));
    this.root = el(
      'section',
      { class: 'chart-card', 'data-testid': chartTestId(key), 'data-key': key },
      el('header', { class: 'chart-head' }, el('h3', { title: key, text: key }), this.modeBadge, this.notesEl, reset, this.fullButton),
      this.canvas,
      this.legend.root,
      this.groupRunsEl,
      this.messageEl,
    );
    this.writeAttributes();
    this.resizeObserver = new ResizeObserver(() => this.onResize());
    this.intersectionObserver = new IntersectionObserver((entries) => {
      const entry = entries[entries.length - 1];
      if (!entry) return;
      this.onScreen = entry.isIntersecting;
      if (!this.onScreen) return;
      if (!this.visible) this.becomeVisible();
      else if (this.pendingRender !== null) this.render(this.pendingRender);
    }, { rootMargin: `${NEAR_VIEWPORT_PX}px` });
    this.intersectionObserver.observe(this.root);
  }

  // ---- what the page asks of a chart ----

  /** Near the viewport (and shown: a hidden tab has no size), and not loaded yet. */
  nearViewport(): boolean {
    return !this.visible && isNearViewport(this.root.getBoundingClientRect(), window.innerHeight);
  }

  /** Load and draw now, as when the observer reports the chart near the viewport. */
  loadNow(): void {
    this.onScreen = true;
    this.becomeVisible();
  }

  setCurves(specs: readonly CurveSpec[]): void {
    const wanted = new Set(specs.map((s) => s.id));
    let removed = false;
    for (const [id, curve] of this.curves) {
      if (!wanted.has(id)) {
        cancelLoad(curve);
        this.curves.delete(id);
        removed = true;
      }
    }
    const added: Curve[] = [];
    for (const spec of specs) {
      const existing = this.curves.get(spec.id);
      if (existing) {
        existing.name = spec.name;
        existing.color = spec.color;
        existing.originMs ??= spec.originMs;
        continue;
      }
      const curve = newCurve(spec);
      this.curves.set(spec.id, curve);
      added.push(curve);
    }
    this.render(true);
    if (!this.visible) return;
    if (this.groupBy === null) void this.load(added, true);
    else if (added.length > 0 || removed) void this.loadGroups();
  }

  /**
   * Draw the runs' groups (a mean line and a band each, computed by the bridge) instead of one
   * curve per run; null = one curve per run.
   */
  setGroups(groups: GroupRequest | null, band: GroupBandKind): void {
    const before = this.groupBy;
    this.groupBy = groups?.groupBy ?? null;
    if (!groups) {
      this.groups = null;
      this.groupLoad?.abort();
      this.groupLoad = null;
      this.groupError = null;
      this.groupRunsEl.hidden = true;
      this.render(true);
      if (before !== null && this.visible) this.reloadAll(); // the runs' curves were not loaded while grouped
      return;
    }
    const changed = before !== groups.groupBy;
    this.groups = { answer: changed ? null : (this.groups?.answer ?? null), band, colorOf: groups.colorOf };
    if (changed) {
      for (const curve of this.curves.values()) cancelLoad(curve);
      this.groupRunsEl.hidden = true;
      if (this.visible) void this.loadGroups();
    }
    this.render(true);
  }

  /** Alerts to mark on this chart's curves (those of other runs and keys are left out). */
  setAlerts(alerts: readonly ApiAlert[]): void {
    if (alerts === this.alerts) return;
    const refs = [...this.curves.values()].map((c) => c.ref);
    const changed = chartAlertsText(alerts, refs, this.key) !== chartAlertsText(this.alerts, refs, this.key);
    this.alerts = alerts;
    // alerts of other runs or keys change nothing drawn here (a full redraw is tens of ms)
    if (changed) this.render(true);
  }

  setSettings(settings: ChartSettings, window: [number, number] | null): void {
    const modeChanged = settings.xMode !== this.settings.xMode;
    this.settings = settings;
    if (modeChanged) {
      // new x units: every curve is loaded again from scratch
      this.window = window;
      for (const curve of this.curves.values()) resetCurve(curve);
      this.render(true);
      this.reloadAll();
      return;
    }
    this.render(true);
  }

  /** A zoom decided elsewhere (another chart, the URL, the reset button). */
  setWindow(window: [number, number] | null): void {
    if (sameWindow(window, this.window)) return;
    this.window = window;
    // ask first: setting the window on the chart redraws it (tens of ms) while the bridge answers
    this.queryDetails();
    this.applyZoomToChart();
  }

  /** Over the whole window, or back in its place: the canvas's new size re-queries the curves at its width (onResize). */
  setFullScreen(on: boolean): void {
    if (on === this.full) return;
    this.full = on;
    this.root.classList.toggle('full', on);
    this.root.dataset.full = String(on);
    this.fullButton.textContent = on ? '✕' : '⤢';
    this.fullButton.title = on ? 'Back to the grid (Esc)' : 'Full screen';
  }

  get isFullScreen(): boolean {
    return this.full;
  }

  appendLive(curveId: string, frame: LiveSeriesFrame): void {
    const curve = this.curves.get(curveId);
    if (!curve) return;
    if (this.groupBy !== null) {
      if (this.visible) this.regroupSoon();
      return;
    }
    if (receiveLive(curve, frame, this.view())) this.renderSoon();
  }

  /** Load one run's curve again (after it finished, or after a reconnect). */
  refreshCurve(curveId: string): void {
    const curve = this.curves.get(curveId);
    if (!curve || !this.visible) return;
    if (this.groupBy !== null) this.regroupSoon();
    else void this.load([curve], true);
  }

  refreshAll(): void {
    if (this.visible) this.reloadAll();
  }

  /** What the chart shows now, computed when asked (tests and benchmarks read it), never per drawing. */
  snapshot(): ChartSnapshot {
    const series = this.groupBy === null ? [...this.curves.values()].map((c) => curveSnapshot(c, this.window)) : [];
    return {
      key: this.key,
      state: this.state,
      xMode: this.settings.xMode,
      window: this.window ? [this.window[0], this.window[1]] : null,
      raw: series.length > 0 && series.every((s) => s.raw),
      smoothing: this.layers?.smoothingOn ?? false,
      envelope: this.layers?.envelopeOn ?? false,
      logY: this.settings.logY,
      notes: this.layers ? [...this.layers.notes] : [],
      series,
      markers: (this.lastModel?.series ?? []).flatMap((s) =>
        (s.markers ?? []).map((m) => ({ series: s.name, kind: m.kind, x: m.x, window: m.window ?? null }))),
      groups: this.groups?.answer ? groupSnapshots(this.groups.answer, this.groups.band, this.lastModel?.series ?? [], this.window) : [],
      renders: this.renders,
    };
  }

  /** Each curve's points as drawn (the overview with the zoomed window's detail spliced in). */
  curvePoints(): CurvePoints[] {
    return [...this.curves.values()].map((c) => {
      const data = drawnData(c);
      return { project: c.ref.project, run: c.ref.run, raw: drawnRaw(c), x: data.x, y: data.y };
    });
  }

  /** The groups' bands as drawn, with the pixel columns the bridge computed them for; null when not grouping. */
  groupBands(): GroupBands | null {
    const answer = this.groups?.answer;
    if (!answer || !this.groups) return null;
    const band = this.groups.band;
    return {
      start: answer.start,
      end: answer.end,
      width: answer.width,
      x: answer.x,
      band,
      groups: answer.groups.map((g) => {
        const drawn = groupBand(g, band);
        return { name: groupName(g), runs: g.runs.map((r) => ({ ...r })), column: g.columns.column.slice(), x: drawn.x, lo: drawn.lo, hi: drawn.hi };
      }),
    };
  }

  /** Where the data point (x, y) is drawn on the page (viewport CSS px); null before the chart exists. */
  pixelOf(x: number, y: number): [number, number] | null {
    const at = this.chart?.pixelOf(x, y);
    if (!at) return null;
    const box = this.canvas.getBoundingClientRect();
    return [box.left + at[0], box.top + at[1]];
  }

  /** The series ECharts holds now (empty before the chart exists). */
  drawnSeries(): DrawnSeries[] {
    return this.chart?.drawnSeries() ?? [];
  }

  dispose(): void {
    // a chart leaving the page (its section folded, a filter) leaves the full screen too
    if (this.full) this.context.onFullScreen?.(this, false);
    this.disposed = true;
    this.renderSoon.cancel();
    this.drawAnswersSoon.cancel();
    this.regroupSoon.cancel();
    this.groupLoad?.abort();
    for (const curve of this.curves.values()) cancelLoad(curve);
    this.resizeObserver.disconnect();
    this.intersectionObserver.disconnect();
    this.chart?.dispose();
    this.chart = null;
    this.root.remove();
  }

  // ---- loading ----

  private becomeVisible(): void {
    if (this.visible) return;
    this.visible = true;
    this.widthPx = plotWidthPx(this.canvas.clientWidth, window.devicePixelRatio);
    // ask first: the bridge works on the queries while ECharts loads, creates and sets up the chart
    this.reloadAll();
    void loadECharts().then(({ init }) => {
      if (this.disposed) return;
      this.chart = new ChartHost(this.canvas, {
        init,
        zoomSettle: 'task',
        onUserZoom: (w) => this.finishUserZoom(w, true),
        onPlotClick: (x, y) => this.showGroupAt(x, y),
      });
      this.resizeObserver.observe(this.canvas);
      this.render(true);
    });
  }

  private reloadAll(): void {
    if (this.groupBy !== null) void this.loadGroups();
    else void this.load([...this.curves.values()], true);
  }

  /** Ask the bridge for the groups of the chart's runs at the plot's width (and zoom). */
  private async loadGroups(): Promise<void> {
    const groupBy = this.groupBy;
    if (groupBy === null || !this.groups || !this.visible) return;
    this.groupLoad?.abort();
    const controller = new AbortController();
    this.groupLoad = controller;
    const refs = [...this.curves.values()].map((c) => c.ref);
    const bounds = this.window ? queryBounds(this.settings.xMode, this.window) : null;
    const query = { groupBy, x: this.settings.xMode, width: this.widthPx, ...(bounds ? { start: bounds[0], end: bounds[1] } : {}) };
    this.writeState();
    let answer: ApiGroups | null = null;
    try {
      answer = refs.length > 0 ? await this.context.api.groupSeries(refs, this.key, query, controller.signal) : null;
    } catch (error) {
      if (controller.signal.aborted) return;
      this.groupError = error instanceof Error ? error.message : String(error);
    } finally {
      if (this.groupLoad === controller) this.groupLoad = null;
    }
    if (controller.signal.aborted || this.groupBy !== groupBy || !this.groups) return;
    if (answer) this.groupError = null;
    const ids = (a: ApiGroups | null) => (a ? a.groups.map((g) => groupId(a.group_by, g.value)).join('\n') : '');
    const structure = ids(answer) !== ids(this.groups.answer);
    this.groups.answer = answer ?? this.groups.answer;
    this.render(structure);
  }

  /** A click in the plot: the runs of the group whose band is there (the narrowest of those that are). */
  private showGroupAt(x: number, y: number): void {
    const answer = this.groups?.answer;
    if (!answer || !this.lastModel) return;
    let best: { name: string; runs: { project: string; run: string }[]; width: number } | null = null;
    for (const series of this.lastModel.series) {
      const band = series.band;
      if (!band || band.x.length === 0) continue;
      const i = nearestIndex(band.x, x);
      const lo = band.lo[i]!;
      const hi = band.hi[i]!;
      if (!(lo <= y && y <= hi)) continue;
      const group = answer.groups.find((g) => groupId(answer.group_by, g.value) === series.id);
      if (group && (best === null || hi - lo < best.width)) best = { name: series.name, runs: group.runs, width: hi - lo };
    }
    if (!best) {
      this.groupRunsEl.hidden = true;
      return;
    }
    clear(this.groupRunsEl);
    const close = el('button', { type: 'button', class: 'icon-button', title: 'Close', text: '×' });
    close.addEventListener('click', () => {
      this.groupRunsEl.hidden = true;
    });
    const list = el('ul', {});
    for (const run of best.runs) {
      list.append(el('li', { 'data-project': run.project, 'data-run': run.run, title: `${run.project}/${run.run}`, text: run.run }));
    }
    this.groupRunsEl.append(el('div', { class: 'group-runs-head' }, el('strong', { text: best.name }), close), list);
    this.groupRunsEl.dataset.group = best.name;
    this.groupRunsEl.hidden = false;
  }

  /** The legend's hover or search: these curves stand out on the chart (null: none). */
  private highlight(ids: string[] | null): void {
    this.highlighted = ids ? new Set(ids) : null;
    this.applyHighlight();
  }

  private applyHighlight(): void {
    if (!this.chart || !this.lastModel || this.groupBy !== null) return;
    const normal = this.layers?.smoothingOn ? 0.3 : 1;
    this.chart.highlight(this.lastModel.series.map((s) => s.id), this.highlighted, normal);
  }

  private view(): ChartView {
    return { mode: this.settings.xMode, widthPx: this.widthPx, window: this.window };
  }

  /** Query these curves together: one request for all of them per step (see `loadCurves`). */
  private async load(curves: Curve[], withOverview: boolean): Promise<void> {
    if (curves.length === 0) return;
    const answered = loadCurves(curves, this.view(), withOverview, (cs, query, signal) => this.fetchSeries(cs, query, signal));
    this.setState('loading');
    if ((await answered).some(Boolean)) this.drawAnswer();
  }

  /**
   * A curve's query answered. Every drawing sets all curves' data again (and rasterizes
   * them), so answers that come one by one are drawn together: at once when no other
   * curve is still loading, else at most every `TIMING.answersDrawMs` meanwhile.
   */
  private drawAnswer(): void {
    if ([...this.curves.values()].some(isLoading)) return this.drawAnswersSoon();
    this.drawAnswersSoon.cancel();
    this.render(false);
  }

  private fetchSeries(curves: readonly Curve[], query: SeriesQuery, signal: AbortSignal) {
    // a run without this key yet answers an empty series: an empty curve, not an error
    return this.context.api.seriesMany(curves.map((c) => c.ref), this.key, query, signal);
  }

  private queryDetails(): void {
    if (!this.visible) return;
    if (this.groupBy !== null) {
      void this.loadGroups();
      return;
    }
    // zooming back out to everything asks for the whole series again
    void this.load([...this.curves.values()], this.window === null);
  }

  // ---- zoom ----

  /**
   * The user moved the zoom (`shown`: by a gesture ECharts has drawn already, and the host read the
   * plot's edges as x values; else the reset button): tell the page.
   */
  private finishUserZoom(reading: [number, number] | null, shown = false): void {
    const window = reading && queryBounds(this.settings.xMode, reading);
    if (sameWindow(window, this.window)) return;
    this.window = window;
    if (shown) this.shownWindow = window;
    // asked first (the bridge works while the chart redraws below); supersedes the query of the gesture before
    this.queryDetails();
    this.applyZoomToChart(shown);
    this.context.onUserZoom(window, this);
  }

  /**
   * Show the window, held in x values. Lines drawn for a range that does not cover it (core/lineRange.ts)
   * are drawn again with it. A gesture's window, already drawn by ECharts, is held by the next drawing
   * instead: setting it now would draw the same lines once more (tens of ms of a core the bridge's
   * answer to the zoom's query needs meanwhile, when both run on one machine).
   */
  private applyZoomToChart(shown = false): void {
    if (!rangeCovers(this.lastModel?.drawnRange, this.window)) this.render(false, true);
    else if (shown) this.windowToHold = true;
    else this.showWindow();
  }

  private showWindow(): void {
    if (!this.chart) return;
    this.windowToHold = false;
    this.renders++;
    this.shownWindow = this.window;
    this.chart.showWindow(this.window);
  }

  private onResize(): void {
    // a hidden tab has no width: keep the chart as it was until it shows again
    if (!this.chart || this.canvas.clientWidth === 0) return;
    this.chart.resize();
    const width = plotWidthPx(this.canvas.clientWidth, window.devicePixelRatio);
    const change = Math.abs(width - this.widthPx) / Math.max(1, this.widthPx);
    this.widthPx = width;
    if (change > TIMING.resizeRequeryFraction) {
      this.reloadAll();
    }
  }

  // ---- drawing ----

  /** `structure`: runs or settings changed (full option, series replaced); otherwise only data (`withWindow`: and the window). */
  private render(structure: boolean, withWindow = false): void {
    withWindow ||= this.windowToHold;
    if (this.chart && !this.onScreen) {
      // off screen (scrolled away, another tab): draw once it shows again
      if (withWindow) this.showWindow();
      this.pendingRender = structure || this.pendingRender === true;
      this.writeState();
      return;
    }
    const full = structure || this.pendingRender === true;
    this.pendingRender = null;
    const ownLegend = this.groupBy === null && this.curves.size > ECHARTS_LEGEND_MAX;
    const { model, groupNonFinite } = chartModelOf({
      key: this.key,
      curves: this.curves,
      groups: this.groupBy !== null ? this.groups : null,
      settings: this.settings,
      widthPx: this.widthPx,
      window: this.window,
      alerts: this.alerts,
      legend: !ownLegend,
    });
    // an answer over a range wider than the window (columns snapped to rollup buckets) is shown over that range
    withWindow ||= !sameWindow(model.xWindow ?? null, this.shownWindow);
    const layers = computeLayers(model);
    if (this.groups && groupNonFinite > 0) {
      layers.notes.push(`${groupNonFinite} non-finite values left out of the group means`);
    }
    this.layers = layers;
    this.lastModel = model;
    if (this.chart) {
      this.renders++;
      this.windowToHold = false;
      if (withWindow || full) this.shownWindow = model.xWindow ?? null;
      this.chart.draw(model, full, layers, withWindow);
      if (this.highlighted) this.applyHighlight();
    }
    this.legend.setEntries(ownLegend ? model.series.map((s) => ({ id: s.id, name: s.name, color: s.color, last: lastFinite(s.data) })) : []);
    this.writeState();
  }

  private writeState(): void {
    const curves = [...this.curves.values()];
    const grouped = this.groupBy !== null;
    const errors = grouped ? (this.groupError ? [`groups: ${this.groupError}`] : []) : curves.filter((c) => c.error).map((c) => `${c.name}: ${c.error}`);
    const loading = grouped ? this.groupLoad !== null || (this.groups?.answer === null && curves.length > 0) : curves.some(isLoading);
    if (!this.visible) this.setState('idle');
    else if (loading || !this.chart) this.setState('loading'); // nothing is drawn before the chart exists
    else if (errors.length) this.setState('error');
    else this.setState('ready');
    this.messageEl.hidden = errors.length === 0;
    this.messageEl.textContent = errors.join('\n');
    this.notesEl.textContent = (this.layers?.notes ?? []).join(' · ');
    this.writeAttributes();
  }

  private setState(state: ChartState): void {
    this.state = state;
    this.root.dataset.state = state;
  }

  /** The card's data attributes and mode badge (benchmarks watch them). */
  private writeAttributes(): void {
    const grouped = this.groupBy !== null ? (this.lastModel?.series ?? []) : null;
    const summary = cardSummary(grouped ? [] : [...this.curves.values()], grouped, this.groups?.answer ?? null, this.window);
    writeCardSummary(this.root, this.modeBadge, summary, this.layers);
  }
}
