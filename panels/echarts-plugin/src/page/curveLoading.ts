/**
 * How the page loads one run's curve of a chart: what to ask the bridge for
 * and when, how answers and live points merge into what is drawn, and how a
 * newer query supersedes an older one. No DOM and no network: the query goes
 * through the `FetchSeries` it is given.
 */
import { LIVE_POINTS_PER_COLUMN } from '../constants/defaults';
import { appendLivePoints, liveFrameToSeries } from '../core/live';
import { m4 } from '../core/m4';
import type { RunRef } from '../core/runs';
import {
  countInRange,
  emptySeries,
  lowerBound,
  meanSpacing,
  parseSeriesResponse,
  rangeIndices,
  relativeOriginMs,
  spliceDetail,
  upperBound,
  withNeighbours,
  xExtent,
  type ParsedSeries,
} from '../core/series';
import type { ApiSeriesResponse, LiveSeriesFrame, XMode } from '../types/api';
import type { SeriesData } from '../types/chart';
import type { SeriesQuery } from './api';

/** One run on a chart, as the page asks for it. */
export interface CurveSpec {
  ref: RunRef;
  id: string;
  name: string;
  color: string;
  /** The run's first-point time (from its metrics), for relative x until a query tells better. */
  originMs: number | null;
}

export interface Detail {
  window: [number, number];
  /** The range the bridge answered the window over (wider when it snapped the columns to rollup buckets). */
  range: [number, number];
  /** Points of the window plus its before/after neighbours, plus live points that fall in it. */
  data: SeriesData;
  raw: boolean;
  /** The window reached the series' end when queried: live points belong to it. */
  open: boolean;
}

export interface Curve extends CurveSpec {
  /** The whole series (M4 at the plot width) plus live points. */
  overview: SeriesData;
  /** The range the bridge answered the whole series over (null: none told). */
  overviewRange: [number, number] | null;
  overviewRaw: boolean;
  detail: Detail | null;
  dxRef: number | undefined;
  loaded: boolean;
  /** Bumped by every query; a response with an older number is dropped. */
  seq: number;
  /** The query running for this curve (shared with the chart's other curves), or null. */
  pending: PendingLoad | null;
  /** Live points received while a query was running, replayed onto its answer. */
  liveDuringQuery: SeriesData[] | null;
  error: string | null;
}

/** What a chart shows now: its x units, its plot width in device pixels, its zoom (null: everything). */
export interface ChartView {
  mode: XMode;
  widthPx: number;
  window: [number, number] | null;
}

/** One query of a curve's series; the signal aborts it once a newer query supersedes it. */
export type FetchSeries = (curve: Curve, query: SeriesQuery, signal: AbortSignal) => Promise<ApiSeriesResponse>;

/**
 * One query of several curves' series (one request for a chart's runs), answered in
 * the order of `curves`; the signal aborts it once newer queries supersede all of them.
 */
export type FetchMany = (curves: readonly Curve[], query: SeriesQuery, signal: AbortSignal) => Promise<ParsedSeries[]>;

/** A query running for some curves: aborted once every one of them has a newer one. */
export interface PendingLoad {
  readonly controller: AbortController;
  readonly curves: Set<Curve>;
}

export function newCurve(spec: CurveSpec): Curve {
  return {
    ...spec,
    overview: emptySeries(),
    overviewRange: null,
    overviewRaw: true,
    detail: null,
    dxRef: undefined,
    loaded: false,
    seq: 0,
    pending: null,
    liveDuringQuery: null,
    error: null,
  };
}

/**
 * This curve no longer waits for its running query (a newer one supersedes it, or
 * the curve goes): the request is aborted when no other curve waits for it either.
 */
export function cancelLoad(curve: Curve): void {
  const pending = curve.pending;
  if (!pending) return;
  curve.pending = null;
  pending.curves.delete(curve);
  if (pending.curves.size === 0) pending.controller.abort();
}

/** Forget everything loaded (new x units): a query still running is aborted and its answer dropped. */
export function resetCurve(curve: Curve): void {
  cancelLoad(curve);
  curve.overview = emptySeries();
  curve.overviewRange = null;
  curve.overviewRaw = true;
  curve.detail = null;
  curve.dxRef = undefined;
  curve.loaded = false;
  curve.seq++;
}

/** A query of this curve is running. */
export function isLoading(curve: Curve): boolean {
  return curve.pending !== null;
}

/** The points drawn: the overview, with the zoomed window's detail in place of its coarse part. */
export function drawnData(curve: Curve): SeriesData {
  return curve.detail ? spliceDetail(curve.overview, curve.detail.data) : curve.overview;
}

/**
 * How many points `drawnData` holds inside `window` (all of them when null),
 * counted by binary search instead of splicing a copy: cheap enough for every drawing.
 */
export function drawnPoints(curve: Curve, window: readonly [number, number] | null): number {
  const { overview } = curve;
  const detail = curve.detail?.data;
  const [from, to] = window ? rangeIndices(overview.x, window[0], window[1]) : [0, overview.x.length];
  if (!detail || detail.x.length === 0) return to - from;
  // spliceDetail keeps the overview left of the detail's first x and right of its last
  const cutLeft = lowerBound(overview.x, detail.x[0]!);
  const cutRight = upperBound(overview.x, detail.x[detail.x.length - 1]!);
  const left = Math.max(0, Math.min(to, cutLeft) - from);
  const right = Math.max(0, to - Math.max(from, cutRight));
  const middle = window ? countInRange(detail, window[0], window[1]) : detail.x.length;
  return left + middle + right;
}

/** Whether what is drawn (detail or overview) holds every raw point. */
export function drawnRaw(curve: Curve): boolean {
  return curve.detail ? curve.detail.raw : curve.overviewRaw;
}

/** Query bounds: whole steps and milliseconds, so an integer column is never asked for a fraction. */
export function queryBounds(mode: XMode, window: [number, number]): [number, number] {
  if (mode === 'relative') return window;
  return [Math.floor(window[0]), Math.ceil(window[1])];
}

/** The queries of one load, in order: the whole series (when asked, or never loaded), then the window. */
export function planLoad(curve: Curve, view: ChartView, withOverview: boolean): { overview: SeriesQuery | null; detail: SeriesQuery | null } {
  const { mode: x, widthPx: width, window } = view;
  const overview = withOverview || !curve.loaded ? { x, width } : null;
  if (!window) return { overview, detail: null };
  const [start, end] = queryBounds(x, window);
  return { overview, detail: { x, width, start, end } };
}

/** A run without this key yet answers 404: an empty curve, not an error. */
export function emptySeriesResponse(ref: RunRef, key: string, query: SeriesQuery): ApiSeriesResponse {
  return {
    project: ref.project,
    run: ref.run,
    key,
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

/** The range an answer covers: its `start` and `end` (null when the series is empty or they are missing). */
function answeredRange(parsed: ParsedSeries): [number, number] | null {
  return parsed.start !== null && parsed.end !== null && parsed.points.x.length > 0 ? [parsed.start, parsed.end] : null;
}

function takeOverview(curve: Curve, parsed: ParsedSeries, mode: XMode): void {
  curve.overview = parsed.points;
  curve.overviewRange = answeredRange(parsed);
  curve.overviewRaw = parsed.raw;
  const extent = xExtent(parsed.points);
  curve.dxRef = extent ? meanSpacing(extent[0], extent[1], parsed.total) : undefined;
  if (mode === 'relative') curve.originMs = relativeOriginMs(parsed.points) ?? curve.originMs;
}

/**
 * Query a curve: the whole series first when needed (or asked), then the
 * visible window at full detail. Live points that arrive meanwhile are
 * replayed onto the answer, so none is lost to the race. A load started
 * later supersedes this one: its answers are dropped, and it resolves false.
 * True: this load's answer (or its error) is the curve's now, to be drawn.
 */
export async function loadCurve(curve: Curve, view: ChartView, withOverview: boolean, fetchSeries: FetchSeries): Promise<boolean> {
  const fetchOne: FetchMany = async (curves, query, signal) => [parseSeriesResponse(await fetchSeries(curves[0]!, query, signal))];
  const [done] = await loadCurves([curve], view, withOverview, fetchOne);
  return done!;
}

/**
 * `loadCurve` of several curves with one query per step: one request for the
 * whole series of those that need it, one for the window of all of them. A
 * newer load of a curve supersedes this one for that curve (its answer is
 * dropped); the request is aborted once it is superseded for all of them.
 * For each curve, in order: true when this load's answer (or error) is its own now.
 */
export async function loadCurves(
  curves: readonly Curve[],
  view: ChartView,
  withOverview: boolean,
  fetchMany: FetchMany,
): Promise<boolean[]> {
  const pending: PendingLoad = { controller: new AbortController(), curves: new Set() };
  const seqs = new Map<Curve, number>();
  const plans = new Map<Curve, ReturnType<typeof planLoad>>();
  for (const curve of curves) {
    cancelLoad(curve);
    curve.pending = pending;
    pending.curves.add(curve);
    seqs.set(curve, ++curve.seq);
    curve.liveDuringQuery = [];
    plans.set(curve, planLoad(curve, view, withOverview));
  }
  const current = (curve: Curve) => seqs.get(curve) === curve.seq;
  const { signal } = pending.controller;
  const wanting = (which: 'overview' | 'detail') => curves.filter((c) => current(c) && plans.get(c)![which]);
  try {
    const whole = wanting('overview');
    if (whole.length > 0) {
      const answers = await fetchMany(whole, plans.get(whole[0]!)!.overview!, signal);
      whole.forEach((c, i) => current(c) && takeOverview(c, answers[i]!, view.mode));
    }
    const zoomed = view.window ? wanting('detail') : [];
    if (zoomed.length > 0 && view.window) {
      const window = view.window;
      const answers = await fetchMany(zoomed, plans.get(zoomed[0]!)!.detail!, signal);
      zoomed.forEach((c, i) => {
        if (!current(c)) return;
        const parsed = answers[i]!;
        c.detail = {
          window,
          range: answeredRange(parsed) ?? window,
          data: withNeighbours(parsed),
          raw: parsed.raw,
          open: parsed.after === null,
        };
      });
    }
    for (const c of curves.filter(current)) {
      if (!view.window) c.detail = null;
      c.loaded = true;
      c.error = null;
      for (const added of c.liveDuringQuery ?? []) appendToCurve(c, added, view.widthPx);
      c.liveDuringQuery = null;
    }
  } catch (error) {
    for (const c of curves.filter(current)) {
      c.error = error instanceof Error ? error.message : String(error);
      c.liveDuringQuery = null;
    }
  }
  return curves.map((c) => {
    if (!current(c)) return false;
    c.pending = null;
    pending.curves.delete(c);
    return true;
  });
}

/**
 * A live frame of this curve's run. Kept for the answer of a running query;
 * joined to what is drawn once the curve has loaded. True: the drawn data changed.
 */
export function receiveLive(curve: Curve, frame: LiveSeriesFrame, view: ChartView): boolean {
  const origin = curve.originMs ?? frame.time_ms[0] ?? null;
  curve.originMs ??= origin;
  const added = liveFrameToSeries(frame, view.mode, origin);
  if (added.x.length === 0) return false;
  if (curve.liveDuringQuery) curve.liveDuringQuery.push(added);
  if (!curve.loaded) return false;
  appendToCurve(curve, added, view.widthPx);
  return true;
}

/**
 * Live points join the overview and, when the zoomed window reached the series'
 * end, the window's detail; past `LIVE_POINTS_PER_COLUMN` points per pixel
 * column, either is downsampled (M4) on the spot.
 */
export function appendToCurve(curve: Curve, added: SeriesData, widthPx: number): void {
  const budget = LIVE_POINTS_PER_COLUMN * widthPx;
  curve.overview = appendLivePoints(curve.overview, added).data;
  if (curve.overview.x.length > budget) {
    curve.overview = m4(curve.overview, widthPx);
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
    detail.data = m4(detail.data, widthPx, detail.window[0], detail.window[1]);
    detail.raw = false;
  }
}
