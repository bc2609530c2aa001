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
import type { ApiAlert, LiveSeriesFrame } from '../types/api';
import type { ChartModel, ChartSettings } from '../types/chart';
import { throttle } from '../utils/timers';
import type { ApiClient, SeriesQuery } from './api';
import { chartModelOf, type GroupSpec } from './chartModel';
import { cardSummary, curveSnapshot, groupSnapshots, writeCardSummary, type ChartSnapshot, type ChartState, type CurvePoints } from './chartSnapshot';
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
import { el } from './dom';
import { loadECharts } from './echartsLoader';
import { isNearViewport, NEAR_VIEWPORT_PX } from './nearViewport';

export type { CurveSpec } from './curveLoading';
export type { GroupSpec } from './chartModel';

/** What a chart needs from the page around it. */
export interface ChartPanelContext {
  api: ApiClient;
  /** The user zoomed this chart (null: back to everything); x units of the current mode. */
  onUserZoom(window: [number, number] | null, source: ChartPanel): void;
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
  private groups: GroupSpec[] | null = null;
  private alerts: readonly ApiAlert[] = [];
  private groupBand: GroupBandKind = 'minmax';
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
    const reset = el('button', {
      class: 'icon-button',
      type: 'button',
      title: 'Show the whole x range',
      'data-testid': TEST_IDS.chartResetZoom,
      text: '⤢',
    });
    // this chart zooms out itself (the page tells only the others), as after a gesture
    reset.addEventListener('click', () => this.finishUserZoom(null));
    this.root = el(
      'section',
      { class: 'chart-card', 'data-testid': chartTestId(key), 'data-key': key },
      el('header', { class: 'chart-head' }, el('h3', { title: key, text: key }), this.modeBadge, this.notesEl, reset),
      this.canvas,
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
    for (const [id, curve] of this.curves) {
      if (!wanted.has(id)) {
        cancelLoad(curve);
        this.curves.delete(id);
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
    if (this.visible) void this.load(added, true);
  }

  /** Draw these groups (mean line and band each) instead of one curve per run; null = one curve per run. */
  setGroups(groups: readonly GroupSpec[] | null, band: GroupBandKind): void {
    this.groups = groups ? groups.map((g) => ({ ...g, memberIds: [...g.memberIds] })) : null;
    this.groupBand = band;
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

  appendLive(curveId: string, frame: LiveSeriesFrame): void {
    const curve = this.curves.get(curveId);
    if (curve && receiveLive(curve, frame, this.view())) this.renderSoon();
  }

  /** Load one run's curve again (after it finished, or after a reconnect). */
  refreshCurve(curveId: string): void {
    const curve = this.curves.get(curveId);
    if (curve && this.visible) void this.load([curve], true);
  }

  refreshAll(): void {
    if (this.visible) this.reloadAll();
  }

  /** What the chart shows now, computed when asked (tests and benchmarks read it), never per drawing. */
  snapshot(): ChartSnapshot {
    const series = [...this.curves.values()].map((c) => curveSnapshot(c, this.window));
    const curveName = (id: string) => this.curves.get(id)?.name ?? id;
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
      groups: this.groups ? groupSnapshots(this.groups, this.groupBand, this.lastModel?.series ?? [], curveName, this.window) : [],
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

  /** The series ECharts holds now (empty before the chart exists). */
  drawnSeries(): DrawnSeries[] {
    return this.chart?.drawnSeries() ?? [];
  }

  dispose(): void {
    this.disposed = true;
    this.renderSoon.cancel();
    this.drawAnswersSoon.cancel();
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
      this.chart = new ChartHost(this.canvas, { init, zoomSettle: 'task', onUserZoom: (w) => this.finishUserZoom(w, true) });
      this.resizeObserver.observe(this.canvas);
      this.render(true);
    });
  }

  private reloadAll(): void {
    void this.load([...this.curves.values()], true);
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
    const { model, groupNonFinite } = chartModelOf({
      key: this.key,
      curves: this.curves,
      groups: this.groups,
      band: this.groupBand,
      settings: this.settings,
      widthPx: this.widthPx,
      window: this.window,
      alerts: this.alerts,
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
    }
    this.writeState();
  }

  private writeState(): void {
    const curves = [...this.curves.values()];
    const errors = curves.filter((c) => c.error);
    const loading = curves.some(isLoading);
    if (!this.visible) this.setState('idle');
    else if (loading || !this.chart) this.setState('loading'); // nothing is drawn before the chart exists
    else if (errors.length) this.setState('error');
    else this.setState('ready');
    this.messageEl.hidden = errors.length === 0;
    this.messageEl.textContent = errors.map((c) => `${c.name}: ${c.error}`).join('\n');
    this.notesEl.textContent = (this.layers?.notes ?? []).join(' · ');
    this.writeAttributes();
  }

  private setState(state: ChartState): void {
    this.state = state;
    this.root.dataset.state = state;
  }

  /** The card's data attributes and mode badge (benchmarks watch them). */
  private writeAttributes(): void {
    const summary = cardSummary([...this.curves.values()], this.groups, this.window);
    writeCardSummary(this.root, this.modeBadge, summary, this.layers);
  }
}
