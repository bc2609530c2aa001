import { DEFAULT_RUNS_SORT, DEFAULT_VIEW } from '../constants/defaults';
import type { GroupBandKind, GroupBy } from '../core/groups';
import { clampSmoothing } from '../core/smoothing';
import type { RunRef } from '../core/runs';
import type { XMode } from '../types/api';
import type { SmoothingKind } from '../types/chart';

/** The page's views: curves of the selected runs, or the record / histograms / text log of one of them. */
export type PageTab = 'charts' | 'run' | 'histograms' | 'logs';
const TABS: readonly PageTab[] = ['charts', 'run', 'histograms', 'logs'];

/** Everything a shared link restores. */
export interface ViewState {
  runs: RunRef[];
  xMode: XMode;
  smoothing: number;
  smoothingKind: SmoothingKind;
  logY: boolean;
  ignoreOutliers: boolean;
  showEnvelope: boolean;
  /** Visible x range in x units, null = everything. */
  zoom: [number, number] | null;
  search: string;
  tag: string;
  group: string;
  configKey: string;
  configValue: string;
  /** Only runs with firing alerts in the runs table. */
  alerting: boolean;
  /** The runs table's order: a column, `-` first for descending. */
  sort: string;
  /** Sections of charts (key prefixes) folded away. */
  folded: string[];
  metricFilter: string;
  /** '' = one curve per run; 'group' or 'config:<key>' = a mean line and a band per group. */
  groupBy: GroupBy;
  groupBand: GroupBandKind;
  tab: PageTab;
  /** The run whose record, histograms and texts are shown; null = the first selected run. */
  focus: RunRef | null;
  /** The metric key whose chart is shown over the whole window; null = none. */
  full: string | null;
}

export function defaultViewState(): ViewState {
  return {
    runs: [],
    ...DEFAULT_VIEW,
    zoom: null,
    search: '',
    tag: '',
    group: '',
    configKey: '',
    configValue: '',
    alerting: false,
    sort: DEFAULT_RUNS_SORT,
    folded: [],
    metricFilter: '',
    groupBy: '',
    groupBand: 'minmax',
    tab: 'charts',
    focus: null,
    full: null,
  };
}

/** "project/run" with each part percent-encoded, so a "/" inside a name stays in that name. */
export function encodeRunParam(ref: RunRef): string {
  return `${encodeURIComponent(ref.project)}/${encodeURIComponent(ref.run)}`;
}

export function decodeRunParam(text: string): RunRef | null {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) return null;
  try {
    return { project: decodeURIComponent(text.slice(0, slash)), run: decodeURIComponent(text.slice(slash + 1)) };
  } catch {
    return null;
  }
}

const X_MODES: readonly XMode[] = ['step', 'time', 'relative'];

function numberText(v: number): string {
  return String(Number(v.toPrecision(12)));
}

/** Reads a query string ("?run=…&x=time"); anything unreadable falls back to its default. */
export function parseViewState(query: string): ViewState {
  const params = new URLSearchParams(query.startsWith('?') || query.startsWith('#') ? query.slice(1) : query);
  const state = defaultViewState();
  const seen = new Set<string>();
  for (const value of params.getAll('run')) {
    const ref = decodeRunParam(value);
    if (!ref) continue;
    const id = JSON.stringify([ref.project, ref.run]);
    if (seen.has(id)) continue;
    seen.add(id);
    state.runs.push(ref);
  }
  const x = params.get('x');
  if (x && (X_MODES as readonly string[]).includes(x)) state.xMode = x as XMode;
  const smooth = Number(params.get('smooth'));
  if (params.has('smooth') && Number.isFinite(smooth)) state.smoothing = clampSmoothing(smooth);
  const kind = params.get('smooth_kind');
  if (kind === 'ema' || kind === 'time') state.smoothingKind = kind;
  if (params.has('log')) state.logY = params.get('log') === '1';
  if (params.has('outliers')) state.ignoreOutliers = params.get('outliers') === 'ignore';
  if (params.has('band')) state.showEnvelope = params.get('band') !== '0';
  const zoom = params.get('zoom');
  if (zoom) {
    const [a, b] = zoom.split(',').map(Number);
    if (a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b > a) state.zoom = [a, b];
  }
  state.search = params.get('q') ?? '';
  state.tag = params.get('tag') ?? '';
  state.group = params.get('group') ?? '';
  state.configKey = params.get('cfg') ?? '';
  state.configValue = state.configKey ? (params.get('cfg_value') ?? '') : '';
  state.alerting = params.get('alerts') === 'firing';
  state.sort = params.get('sort') || DEFAULT_RUNS_SORT;
  state.folded = [...new Set(params.getAll('fold'))];
  state.metricFilter = params.get('metric') ?? '';
  state.groupBy = params.get('groupby') ?? '';
  if (params.get('group_band') === 'std') state.groupBand = 'std';
  const tab = params.get('tab');
  if (tab && (TABS as readonly string[]).includes(tab)) state.tab = tab as PageTab;
  const focus = params.get('focus');
  state.focus = focus ? decodeRunParam(focus) : null;
  state.full = params.get('full') || null;
  return state;
}

/** The query string for a view ("" for the default view); only what differs from the defaults. */
export function serializeViewState(state: ViewState): string {
  const params = new URLSearchParams();
  for (const ref of state.runs) params.append('run', encodeRunParam(ref));
  if (state.xMode !== DEFAULT_VIEW.xMode) params.set('x', state.xMode);
  if (state.smoothing !== DEFAULT_VIEW.smoothing) params.set('smooth', numberText(state.smoothing));
  if (state.smoothingKind !== DEFAULT_VIEW.smoothingKind) params.set('smooth_kind', state.smoothingKind);
  if (state.logY !== DEFAULT_VIEW.logY) params.set('log', state.logY ? '1' : '0');
  if (state.ignoreOutliers !== DEFAULT_VIEW.ignoreOutliers) params.set('outliers', state.ignoreOutliers ? 'ignore' : 'show');
  if (state.showEnvelope !== DEFAULT_VIEW.showEnvelope) params.set('band', state.showEnvelope ? '1' : '0');
  if (state.zoom) params.set('zoom', `${numberText(state.zoom[0])},${numberText(state.zoom[1])}`);
  if (state.search) params.set('q', state.search);
  if (state.tag) params.set('tag', state.tag);
  if (state.group) params.set('group', state.group);
  if (state.configKey) {
    params.set('cfg', state.configKey);
    if (state.configValue) params.set('cfg_value', state.configValue);
  }
  if (state.alerting) params.set('alerts', 'firing');
  if (state.sort !== DEFAULT_RUNS_SORT) params.set('sort', state.sort);
  for (const name of state.folded) params.append('fold', name);
  if (state.metricFilter) params.set('metric', state.metricFilter);
  if (state.groupBy) params.set('groupby', state.groupBy);
  if (state.groupBand !== 'minmax') params.set('group_band', state.groupBand);
  if (state.tab !== 'charts') params.set('tab', state.tab);
  if (state.focus) params.set('focus', encodeRunParam(state.focus));
  if (state.full) params.set('full', state.full);
  const text = params.toString();
  return text ? `?${text}` : '';
}
