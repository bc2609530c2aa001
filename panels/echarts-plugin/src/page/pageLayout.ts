/** The page's frame: the charts toolbar, the tabs, the error banner, and where each part goes. */
import { TIMING } from '../constants/defaults';
import { TEST_IDS } from '../constants/testIds';
import { groupByConfigKey, type GroupBandKind } from '../core/groups';
import { debounce } from '../utils/timers';
import { ApiError } from './api';
import { clear, el } from './dom';
import type { PageTab } from './urlState';

export interface ChartsViewEvents {
  /** The chart filter's text, once typing pauses. */
  onMetricFilter(text: string): void;
  /** '' = no grouping. */
  onGroupBy(groupBy: string): void;
  onGroupBand(band: GroupBandKind): void;
  onResetZoom(): void;
}

export interface ChartsView {
  root: HTMLDivElement;
  /** A line on what is shown ("3 of 12 metrics · 2 runs"). */
  info: HTMLSpanElement;
  groupBy: HTMLSelectElement;
  metricFilter: HTMLInputElement;
}

/** The charts tab: a toolbar (filter, grouping, reset zoom) above the charts (`body`: chartSections.ts). */
export function buildChartsView(
  initial: { metricFilter: string; groupBy: string; groupBand: GroupBandKind },
  events: ChartsViewEvents,
  body: HTMLElement,
): ChartsView {
  const metricFilter = el('input', {
    type: 'search',
    placeholder: 'Filter charts: words, a glob (layer.1*/w*) or /regex/',
    title: 'Words that must all appear in a metric key; with * ? or [ ]: a glob pattern of the whole key; /…/: a regular expression',
    'data-testid': TEST_IDS.metricFilter,
    'aria-label': 'Filter charts by metric key',
  });
  metricFilter.value = initial.metricFilter;
  metricFilter.addEventListener(
    'input',
    debounce(() => events.onMetricFilter(metricFilter.value), TIMING.filterTypingMs),
  );
  const groupBy = el('select', {
    'data-testid': TEST_IDS.groupBySelect,
    'aria-label': 'Group runs by',
    title: 'Draw a mean line and a band per group of runs (a sweep’s runs with the same value)',
  });
  const groupBand = el(
    'select',
    { 'data-testid': TEST_IDS.groupBandSelect, 'aria-label': 'Group band', title: 'The band around each group’s mean' },
    el('option', { value: 'minmax', text: 'band: min–max' }),
    el('option', { value: 'std', text: 'band: ±1 std' }),
  );
  groupBy.addEventListener('change', () => {
    groupBand.disabled = !groupBy.value;
    events.onGroupBy(groupBy.value);
  });
  groupBand.value = initial.groupBand;
  groupBand.disabled = !initial.groupBy;
  groupBand.addEventListener('change', () => events.onGroupBand(groupBand.value as GroupBandKind));
  const resetZoom = el('button', { type: 'button', class: 'link-button', text: 'reset zoom' });
  resetZoom.addEventListener('click', () => events.onResetZoom());
  const info = el('span', { class: 'muted', 'data-testid': TEST_IDS.chartsInfo });
  const root = el(
    'div',
    { class: 'charts-view' },
    el('div', { class: 'toolbar' }, metricFilter, groupBy, groupBand, info, el('span', { class: 'spacer' }), resetZoom),
    body,
  );
  return { root, info, groupBy, metricFilter };
}

/** The group-by choices: none, the run group, and every config key of the runs (the current one kept). */
export function fillGroupBy(select: HTMLSelectElement, configKeys: readonly string[], current: string): void {
  const values = ['', 'group', ...configKeys.map(groupByConfigKey)];
  if (current && !values.includes(current)) values.push(current);
  const text = (v: string) => (v === '' ? 'no grouping' : v === 'group' ? 'group by: run group' : `group by: ${v.slice(7)}`);
  clear(select);
  for (const v of values) select.append(el('option', { value: v, text: text(v) }));
  select.value = current;
}

/** The tab bar: charts, run, histograms, logs. */
export function buildTabBar(onTab: (tab: PageTab) => void): { root: HTMLElement; tabs: Map<PageTab, HTMLButtonElement> } {
  const root = el('nav', { class: 'tabs', role: 'tablist' });
  const tabs = new Map<PageTab, HTMLButtonElement>();
  for (const [tab, label, testId] of [
    ['charts', 'Charts', TEST_IDS.tabCharts],
    ['run', 'Run', TEST_IDS.tabRun],
    ['histograms', 'Histograms', TEST_IDS.tabHistograms],
    ['logs', 'Logs', TEST_IDS.tabLogs],
  ] as const) {
    const button = el('button', { type: 'button', role: 'tab', class: 'tab', 'data-testid': testId, text: label });
    button.addEventListener('click', () => onTab(tab));
    tabs.set(tab, button);
    root.append(button);
  }
  return { root, tabs };
}

export function showActiveTab(tabs: ReadonlyMap<PageTab, HTMLButtonElement>, active: PageTab): void {
  for (const [name, button] of tabs) {
    button.setAttribute('aria-selected', String(name === active));
    button.classList.toggle('active', name === active);
  }
}

/** Everything in its place: the controls, the banner, the runs beside the tabs and their views. */
export function mountPage(
  root: HTMLElement,
  parts: { controls: HTMLElement; banner: HTMLElement; runs: HTMLElement; tabBar: HTMLElement; views: HTMLElement[] },
): void {
  root.dataset.testid = TEST_IDS.app;
  clear(root);
  root.append(
    parts.controls,
    parts.banner,
    el('main', {}, parts.runs, el('section', { class: 'charts-panel' }, parts.tabBar, ...parts.views)),
  );
}

export function buildBanner(): HTMLDivElement {
  return el('div', { class: 'banner', 'data-testid': TEST_IDS.errorBanner, hidden: true });
}

/** Why the bridge cannot be read: a token field when it asks for one, else the error. */
export function showBannerError(banner: HTMLElement, error: unknown, onToken: (token: string) => void): void {
  clear(banner);
  banner.hidden = false;
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    const input = el('input', {
      type: 'password',
      placeholder: 'read token',
      'data-testid': TEST_IDS.tokenInput,
      'aria-label': 'Read token',
    });
    const save = el('button', { type: 'button', text: 'use token' });
    save.addEventListener('click', () => onToken(input.value.trim()));
    banner.append('The bridge asks for a read token (CURVESTREAM_READ_TOKEN). ', input, save);
    return;
  }
  const text = error instanceof Error ? error.message : String(error);
  banner.append(`Cannot reach the bridge: ${text}`);
}

export function hideBanner(banner: HTMLElement): void {
  banner.hidden = true;
  clear(banner);
}
