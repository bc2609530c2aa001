import { LIVE_POINTS_PER_COLUMN, TIMING } from '../constants/defaults';
import { chartTestId, TEST_IDS } from '../constants/testIds';
import { appendLivePoints, liveFrameToSeries } from '../core/live';
import { aggregateBand, aggregateCurves, aggregateMeanSeries, type GroupBandKind } from '../core/groups';
import { m4 } from '../core/m4';
import { computeLayers, plotWidthPx, type ChartLayers } from '../core/options';
import type { RunRef } from '../core/runs';
import {
  countInRange,
  emptySeries,
  rangeIndices,
  meanSpacing,
  parseSeriesResponse,
  relativeOriginMs,
  spliceDetail,
  withNeighbours,
  xExtent,
} from '../core/series';
import { ChartHost } from '../host/chartHost';
import type { DrawnSeries } from '../host/drawnSeries';
import { sameWindow } from '../host/zoom';
import type { LiveSeriesFrame, XMode } from '../types/api';
import type { ChartModel, ChartSeriesInput, ChartSettings, SeriesData } from '../types/chart';
import { ApiError, type ApiClient } from './api';
import { el } from './dom';
import { throttle } from '../utils/timers';
import {
  finiteExtent,
  type ChartSnapshot,
  type ChartState,
  type CurveSnapshot,
  type GroupSnapshot,
} from './chartSnapshot';
import { init } from './echarts';

/** One run on a chart, as the page asks for it. */
export interface CurveSpec {
  ref: RunRef;
  id: string;
  name: string;
  color: string;
  /** The run's first-point time (from its metrics), for relative x until a query tells better. */
  originMs: number | null;
}

/** Several runs drawn as one mean line with a band (a sweep's runs with the same config value). */
export interface GroupSpec {
  id: string;
  name: string;
  color: string;
  /** Curve ids (run keys) of the group's runs. */
  memberIds: string[];
}

interface Detail {
  window: [number, number];
  /** Points of the window plus its before/after neighbours, plus live points that fall in it. */
  data: SeriesData;
  raw: boolean;
  /** The window reached the series' end when queried: live points belong to it. */
  open: boolean;
}

interface Curve extends CurveSpec {
  /** The whole series (M4 at the plot width) plus live points. */
  overview: SeriesData;
  overviewRaw: boolean;
  detail: Detail | null;
  dxRef: number | undefined;
  loaded: boolean;
  /** Bumped by every query; a response with an older number is dropped. */
  seq: number;
  abort: AbortController | null;
  /** Live points received while a query was running, replayed onto its answer. */
  liveDuringQuery: SeriesData[] | null;
  error: string | null;
}

/** What a chart needs from the page around it. */
export interface ChartPanelContext {
  api: ApiClient;
  /** The user zoomed this chart (null: back to everything); x units of the current mode. */
  onUserZoom(window: [number, number] | null, source: ChartPanel): void;
}

function drawnData(curve: Curve): SeriesData {
  return curve.detail ? spliceDetail(curve.overview, curve.detail.data) : curve.overview;
}

/** Query bounds: whole steps and milliseconds, so an integer column is never asked for a fraction. */
function queryBounds(mode: XMode, window: [number, number]): [number, number] {
  if (mode === 'relative') return window;
  return [Math.floor(window[0]), Math.ceil(window[1])];
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
  private chart: ChartHost | null = null;
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
  private groupBand: GroupBandKind = 'minmax';
  private groupNonFinite = 0;
  private renders = 0;
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
    reset.addEventListener('click', () => this.context.onUserZoom(null, this));
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
    }, { rootMargin: '300px' });
    this.intersectionObserver.observe(this.root);
  }

  // ---- what the page asks of a chart ----

  setCurves(specs: readonly CurveSpec[]): void {
    const wanted = new Set(specs.map((s) => s.id));
    for (const [id, curve] of this.curves) {
      if (!wanted.has(id)) {
        curve.abort?.abort();
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
      const curve: Curve = {
        ...spec,
        overview: emptySeries(),
        overviewRaw: true,
        detail: null,
        dxRef: undefined,
        loaded: false,
        seq: 0,
        abort: null,
        liveDuringQuery: null,
        error: null,
      };
      this.curves.set(spec.id, curve);
      added.push(curve);
    }
    this.render(true);
    if (this.visible) for (const curve of added) void this.loadCurve(curve, true);
  }

  /** Draw these groups (mean line and band each) instead of one curve per run; null = one curve per run. */
  setGroups(groups: readonly GroupSpec[] | null, band: GroupBandKind): void {
    this.groups = groups ? groups.map((g) => ({ ...g, memberIds: [...g.memberIds] })) : null;
    this.groupBand = band;
    this.render(true);
  }

  setSettings(settings: ChartSettings, window: [number, number] | null): void {
    const modeChanged = settings.xMode !== this.settings.xMode;
    this.settings = settings;
    if (modeChanged) {
      // new x units: every curve is loaded again from scratch
      this.window = window;
      for (const curve of this.curves.values()) this.resetCurve(curve);
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
    this.applyZoomToChart();
    this.queryDetails();
  }

  appendLive(curveId: string, frame: LiveSeriesFrame): void {
    const curve = this.curves.get(curveId);
    if (!curve) return;
    const origin = curve.originMs ?? frame.time_ms[0] ?? null;
    curve.originMs ??= origin;
    const added = liveFrameToSeries(frame, this.settings.xMode, origin);
    if (added.x.length === 0) return;
    if (curve.liveDuringQuery) curve.liveDuringQuery.push(added);
    if (!curve.loaded) return;
    this.applyLive(curve, added);
    this.renderSoon();
  }

  /** Load one run's curve again (after it finished, or after a reconnect). */
  refreshCurve(curveId: string): void {
    const curve = this.curves.get(curveId);
    if (curve && this.visible) void this.loadCurve(curve, true);
  }

  refreshAll(): void {
    if (this.visible) this.reloadAll();
  }

  snapshot(): ChartSnapshot {
    const series = [...this.curves.values()].map((c) => this.curveSnapshot(c));
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
      groups: this.groups ? this.groupSnapshots() : [],
      renders: this.renders,
    };
  }

  /** The series ECharts holds now (empty before the chart exists). */
  drawnSeries(): DrawnSeries[] {
    return this.chart?.drawnSeries() ?? [];
  }

  dispose(): void {
    this.renderSoon.cancel();
    this.drawAnswersSoon.cancel();
    for (const curve of this.curves.values()) curve.abort?.abort();
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
    this.chart = new ChartHost(this.canvas, {
      init,
      zoomSettleMs: TIMING.pageZoomSettleMs,
      onUserZoom: (window) => this.finishUserZoom(window),
    });
    this.widthPx = plotWidthPx(this.canvas.clientWidth, window.devicePixelRatio);
    this.resizeObserver.observe(this.canvas);
    // ask first: the bridge works on the queries while ECharts sets up the empty chart
    this.reloadAll();
    this.render(true);
  }

  private reloadAll(): void {
    for (const curve of this.curves.values()) void this.loadCurve(curve, true);
  }

  private resetCurve(curve: Curve): void {
    curve.abort?.abort();
    curve.overview = emptySeries();
    curve.overviewRaw = true;
    curve.detail = null;
    curve.dxRef = undefined;
    curve.loaded = false;
    curve.seq++;
  }

  /**
   * Query a curve: the whole series first when needed (or asked), then the
   * visible window at full detail. Live points that arrive meanwhile are
   * replayed onto the answer, so none is lost to the race.
   */
  private async loadCurve(curve: Curve, withOverview: boolean): Promise<void> {
    curve.abort?.abort();
    const abort = new AbortController();
    curve.abort = abort;
    const seq = ++curve.seq;
    curve.liveDuringQuery = [];
    const mode = this.settings.xMode;
    const width = this.widthPx;
    const window = this.window;
    this.setState('loading');
    try {
      if (withOverview || !curve.loaded) {
        const response = await this.fetchSeries(curve, { x: mode, width }, abort.signal);
        if (seq !== curve.seq) return;
        const parsed = parseSeriesResponse(response);
        curve.overview = parsed.points;
        curve.overviewRaw = parsed.raw;
        const extent = xExtent(parsed.points);
        curve.dxRef = extent ? meanSpacing(extent[0], extent[1], parsed.total) : undefined;
        if (mode === 'relative') curve.originMs = relativeOriginMs(parsed.points) ?? curve.originMs;
      }
      if (window) {
        const [start, end] = queryBounds(mode, window);
        const response = await this.fetchSeries(curve, { x: mode, width, start, end }, abort.signal);
        if (seq !== curve.seq) return;
        const parsed = parseSeriesResponse(response);
        curve.detail = { window, data: withNeighbours(parsed), raw: parsed.raw, open: parsed.after === null };
      } else {
        curve.detail = null;
      }
      curve.loaded = true;
      curve.error = null;
      for (const added of curve.liveDuringQuery ?? []) this.applyLive(curve, added);
      curve.liveDuringQuery = null;
    } catch (error) {
      if (abort.signal.aborted || seq !== curve.seq) return;
      curve.error = error instanceof Error ? error.message : String(error);
      curve.liveDuringQuery = null;
    }
    if (seq === curve.seq) {
      curve.abort = null;
      this.drawAnswer();
    }
  }

  /**
   * A curve's query answered. Every drawing sets all curves' data again (and rasterizes
   * them), so answers that come one by one are drawn together: at once when no other
   * curve is still loading, else at most every `TIMING.answersDrawMs` meanwhile.
   */
  private drawAnswer(): void {
    if ([...this.curves.values()].some((c) => c.abort !== null)) {
      this.drawAnswersSoon();
      return;
    }
    this.drawAnswersSoon.cancel();
    this.render(false);
  }

  private async fetchSeries(
    curve: Curve,
    query: { x: XMode; width: number; start?: number; end?: number },
    signal: AbortSignal,
  ) {
    try {
      return await this.context.api.series(curve.ref, this.key, query, signal);
    } catch (error) {
      // a run without this key yet: an empty curve, not an error
      if (error instanceof ApiError && error.status === 404) {
        return {
          project: curve.ref.project,
          run: curve.ref.run,
          key: this.key,
          x: query.x,
          start: query.start ?? null,
          end: query.end ?? null,
          width: query.width,
          raw: true,
          total: 0,
          points: { x: [], y: [], step: [], time_ms: [] },
          before: null,
          after: null,
        };
      }
      throw error;
    }
  }

  private queryDetails(): void {
    if (!this.visible) return;
    // zooming back out to everything asks for the whole series again
    for (const curve of this.curves.values()) void this.loadCurve(curve, this.window === null);
  }

  private applyLive(curve: Curve, added: SeriesData): void {
    const budget = LIVE_POINTS_PER_COLUMN * this.widthPx;
    const overview = appendLivePoints(curve.overview, added);
    curve.overview = overview.data;
    if (curve.overview.x.length > budget) {
      curve.overview = m4(curve.overview, this.widthPx);
      curve.overviewRaw = false;
    }
    const detail = curve.detail;
    if (!detail || !detail.open) return;
    // the window reached the end of the series: its points join it, and the
    // first point past the window becomes its right-hand neighbour
    const inside: SeriesData = emptySeries();
    for (let i = 0; i < added.x.length && detail.open; i++) {
      inside.x.push(added.x[i]!);
      inside.y.push(added.y[i]!);
      inside.step.push(added.step[i]!);
      inside.timeMs.push(added.timeMs[i]!);
      if (added.x[i]! > detail.window[1]) detail.open = false;
    }
    detail.data = appendLivePoints(detail.data, inside).data;
    if (countInRange(detail.data, detail.window[0], detail.window[1]) > budget) {
      detail.data = m4(detail.data, this.widthPx, detail.window[0], detail.window[1]);
      detail.raw = false;
    }
  }

  // ---- zoom ----

  /** The user moved the zoom (the host read the plot's edges as x values): tell the page. */
  private finishUserZoom(reading: [number, number] | null): void {
    const window = reading && queryBounds(this.settings.xMode, reading);
    if (sameWindow(window, this.window)) return;
    this.window = window;
    // hold the window in x values, so live points growing the axis do not shift it
    this.applyZoomToChart();
    // the gesture has settled (the host waited for it): ask at once
    this.queryDetails();
    this.context.onUserZoom(window, this);
  }

  private applyZoomToChart(): void {
    this.chart?.showWindow(this.window);
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

  private groupInputs(groups: readonly GroupSpec[]): ChartSeriesInput[] {
    this.groupNonFinite = 0;
    return groups.map((g) => {
      const members = g.memberIds.flatMap((id) => {
        const curve = this.curves.get(id);
        return curve ? [curve] : [];
      });
      const aggregate = aggregateCurves(members.map(drawnData));
      this.groupNonFinite += aggregate.nonFinite;
      const spacings = members.flatMap((c) => (c.dxRef === undefined ? [] : [c.dxRef]));
      return {
        id: g.id,
        name: g.name,
        color: g.color,
        data: aggregateMeanSeries(aggregate),
        band: aggregateBand(aggregate, this.groupBand),
        ...(spacings.length ? { dxRef: spacings.reduce((a, b) => a + b, 0) / spacings.length } : {}),
      };
    });
  }

  private model(): ChartModel {
    return {
      series: this.groups
        ? this.groupInputs(this.groups)
        : [...this.curves.values()].map((c) => ({
            id: c.id,
            name: c.name,
            color: c.color,
            data: drawnData(c),
            ...(c.dxRef === undefined ? {} : { dxRef: c.dxRef }),
          })),
      settings: this.settings,
      widthPx: this.widthPx,
      xWindow: this.window,
      title: this.key,
    };
  }

  /** `structure`: runs or settings changed (full option, series replaced); otherwise only data. */
  private render(structure: boolean): void {
    if (this.chart && !this.onScreen) {
      // off screen (scrolled away, another tab): draw once it shows again
      this.pendingRender = structure || this.pendingRender === true;
      this.writeState();
      return;
    }
    const full = structure || this.pendingRender === true;
    this.pendingRender = null;
    const model = this.model();
    const layers = computeLayers(model);
    if (this.groups && this.groupNonFinite > 0) {
      layers.notes.push(`${this.groupNonFinite} non-finite values left out of the group means`);
    }
    this.layers = layers;
    this.lastModel = model;
    if (this.chart) {
      this.renders++;
      this.chart.draw(model, full, layers);
    }
    this.writeState();
  }

  private writeState(): void {
    const curves = [...this.curves.values()];
    const errors = curves.filter((c) => c.error);
    const loading = curves.some((c) => c.abort !== null);
    if (!this.visible) this.setState('idle');
    else if (loading) this.setState('loading');
    else if (errors.length) this.setState('error');
    else this.setState('ready');
    this.messageEl.hidden = errors.length === 0;
    this.messageEl.textContent = errors.map((c) => `${c.name}: ${c.error}`).join('\n');
    this.notesEl.textContent = (this.layers?.notes ?? []).join(' · ');
    this.writeAttributes();
  }

  /** Index range of the points inside the visible x range (all of them when not zoomed). */
  private visibleRange(xs: readonly number[]): [number, number] {
    return this.window ? rangeIndices(xs, this.window[0], this.window[1]) : [0, xs.length];
  }

  private curveSnapshot(curve: Curve): CurveSnapshot {
    const data = drawnData(curve);
    const [from, to] = this.visibleRange(data.x);
    const [yMin, yMax] = finiteExtent(data.y, from, to);
    const raw = curve.detail ? curve.detail.raw : curve.overviewRaw;
    return {
      name: curve.name,
      project: curve.ref.project,
      run: curve.ref.run,
      points: to - from,
      drawn: data.x.length,
      raw,
      yMin,
      yMax,
    };
  }

  private groupSnapshots(): GroupSnapshot[] {
    const inputs = new Map((this.lastModel?.series ?? []).map((s) => [s.id, s]));
    return (this.groups ?? []).map((g) => {
      const input = inputs.get(g.id);
      const [from, to] = input ? this.visibleRange(input.data.x) : [0, 0];
      const [yMin, yMax] = input ? finiteExtent(input.data.y, from, to) : [null, null];
      const band = input?.band;
      const [bandFrom, bandTo] = band ? this.visibleRange(band.x) : [0, 0];
      return {
        name: g.name,
        runs: g.memberIds.map((id) => this.curves.get(id)?.name ?? id),
        points: to - from,
        yMin,
        yMax,
        band: this.groupBand,
        bandMin: band ? finiteExtent(band.lo, bandFrom, bandTo)[0] : null,
        bandMax: band ? finiteExtent(band.hi, bandFrom, bandTo)[1] : null,
      };
    });
  }

  private setState(state: ChartState): void {
    this.state = state;
    this.root.dataset.state = state;
  }

  private writeAttributes(): void {
    const snapshot = this.snapshot();
    const points: Record<string, number> = {};
    for (const s of snapshot.series) points[s.name] = s.points;
    this.root.dataset.points = JSON.stringify(points);
    this.root.dataset.raw = String(snapshot.raw);
    this.root.dataset.smoothing = snapshot.smoothing ? 'on' : 'off';
    this.root.dataset.envelope = String(snapshot.envelope);
    if (this.groups) this.root.dataset.groups = JSON.stringify(Object.fromEntries(snapshot.groups.map((g) => [g.name, g.runs.length])));
    else delete this.root.dataset.groups;
    const total = snapshot.series.reduce((n, s) => n + s.points, 0);
    this.modeBadge.textContent = total === 0 ? '' : snapshot.raw ? 'raw' : 'M4';
    this.modeBadge.className = `badge mode ${snapshot.raw ? 'raw' : 'm4'}`;
    this.modeBadge.title = snapshot.raw
      ? `all ${total} points of the visible range are drawn`
      : `${total} points drawn: first, last, min and max of every pixel column (M4), the same line as the raw data`;
  }
}
