/** The Run tab: one run's record (state, times, host, git, tags, config, summary), its alerts, its last values and links to its charts. */
import { TEST_IDS } from '../constants/testIds';
import { formatCompact, formatDuration, formatStep, formatTime, formatValue } from '../core/format';
import { parseApiNumber } from '../core/numbers';
import { sameRun, type RunRef } from '../core/runs';
import type { ApiAlert, ApiKeySection, ApiKeys, ApiMetric, ApiRun } from '../types/api';
import type { KeysQuery } from './api';
import { clear, el } from './dom';
import { configValueText } from './runFilter';
import { runNameParts } from './runName';

/** Up to this many keys, the run's last value of each is shown (one request); beyond, only its sections. */
export const LAST_VALUES_MAX_KEYS = 200;

export interface RunOverviewApi {
  keys(refs: readonly RunRef[], query: KeysQuery, signal?: AbortSignal): Promise<ApiKeys>;
  metrics(ref: RunRef, signal?: AbortSignal): Promise<ApiMetric[]>;
}

export interface RunOverviewHost {
  /** Open the charts tab filtered by this chart filter text ('' = every chart). */
  openCharts(metricFilter: string): void;
}

/** The run's facts as label, text and the field's name; empty facts are left out. */
export function runFacts(run: ApiRun, nowMs: number): [string, string, string][] {
  const parts = runNameParts(run);
  const state = run.pending_batches ? `${run.state} · ${run.pending_batches} batches pending` : run.state;
  const end = run.state === 'running' ? nowMs : run.updated_ms;
  const facts: [string, string, string][] = [
    ['name', 'Name', parts.name],
    ['run', 'Identity', run.run],
    ['project', 'Project', run.project],
    ['state', 'State', run.reason ? `${state}: ${run.reason}` : state],
    ['started', 'Started', run.started_ms ? formatTime(run.started_ms) : ''],
    ['updated', 'Last update', run.updated_ms ? formatTime(run.updated_ms) : ''],
    ['duration', 'Duration', run.started_ms && end ? formatDuration(Math.max(0, end - run.started_ms) / 1000) : ''],
    ['points', 'Points', run.points >= 1000 ? `${formatStep(run.points)} (${formatCompact(run.points)})` : formatStep(run.points)],
    ['host', 'Host', run.host],
    ['git', 'Git commit', run.git_commit ? `${run.git_commit}${run.git_dirty ? ' (dirty)' : ''}` : ''],
    ['group', 'Group', run.group],
    ['tags', 'Tags', run.tags.join(', ')],
    ['notes', 'Notes', run.notes ?? ''],
    ['resumed', 'Resumed', parts.resumed],
  ];
  return facts.filter(([, , text]) => text !== '');
}

/** Key and value text of a config or summary object, in key order (natural: `layer2` before `layer10`). */
export function keyValueRows(values: Readonly<Record<string, unknown>> | null | undefined): [string, string][] {
  const collator = new Intl.Collator('en', { numeric: true });
  return Object.entries(values ?? {})
    .map(([k, v]): [string, string] => [k, configValueText(v)])
    .sort((a, b) => collator.compare(a[0], b[0]));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The chart filter text that shows a section's charts and no other: `/^train\//`; keys without a `/`: `/^[^/]*$/`. */
export function sectionFilter(section: string): string {
  return section === '' ? '/^[^/]*$/' : `/^${escapeRegExp(section)}\\//`;
}

/** A run's alerts, firing ones first, then the newest. */
export function runAlerts(alerts: readonly ApiAlert[], ref: RunRef): ApiAlert[] {
  return alerts
    .filter((a) => sameRun(a, ref))
    .sort((a, b) => Number(b.state === 'firing') - Number(a.state === 'firing') || b.started_ms - a.started_ms);
}

function table(testId: string, rows: HTMLTableRowElement[], empty: string): HTMLElement {
  if (rows.length === 0) return el('p', { class: 'muted', 'data-testid': testId, text: empty });
  return el('table', { class: 'kv-table', 'data-testid': testId }, el('tbody', {}, ...rows));
}

function kvRow(key: string, value: string, title = ''): HTMLTableRowElement {
  return el('tr', { 'data-key': key }, el('th', { text: key }), el('td', { text: value, title: title || value }));
}

/**
 * One run's page. Its record comes from the runs table (the page keeps the selected runs' rows current:
 * states are pushed, point counts asked again); its keys are asked for when the run is shown.
 */
export class RunOverview {
  readonly root: HTMLElement;
  private ref: RunRef | null = null;
  private run: ApiRun | undefined;
  private alerts: readonly ApiAlert[] = [];
  private keys: { sections: ApiKeySection[]; total: number; metrics: ApiMetric[] | null } | null = null;
  private loading: AbortController | null = null;
  /** The run's point count when its keys were last asked for. */
  private keysAtPoints: number | null = null;

  constructor(
    private readonly api: RunOverviewApi,
    private readonly host: RunOverviewHost,
  ) {
    this.root = el('div', { class: 'run-overview', 'data-testid': TEST_IDS.runView });
  }

  /** Show this run (null: no run selected); its keys are asked for when it is another run than shown. */
  show(ref: RunRef | null, run: ApiRun | undefined, alerts: readonly ApiAlert[]): void {
    const other = ref === null || this.ref === null || !sameRun(ref, this.ref);
    this.ref = ref;
    this.run = run;
    this.alerts = alerts;
    if (other) {
      this.keys = null;
      void this.loadKeys();
    }
    this.render();
  }

  /** The run's record or alerts changed (a status, a count, an alert): drawn again; grown: its keys asked again. */
  update(run: ApiRun | undefined, alerts: readonly ApiAlert[]): void {
    this.run = run;
    this.alerts = alerts;
    // the record is the runs table's, changed in place: the count the keys were read at tells
    if (run !== undefined && run.points !== this.keysAtPoints && this.loading === null) void this.loadKeys();
    this.render();
  }

  private async loadKeys(): Promise<void> {
    this.loading?.abort();
    const ref = this.ref;
    if (ref === null) return;
    const controller = new AbortController();
    this.loading = controller;
    this.keysAtPoints = this.run?.points ?? null;
    try {
      const answer = await this.api.keys([ref], { q: '', match: 'words', offset: 0, limit: 0 }, controller.signal);
      const metrics = answer.total <= LAST_VALUES_MAX_KEYS ? await this.api.metrics(ref, controller.signal) : null;
      if (this.loading !== controller) return;
      this.keys = { sections: answer.sections, total: answer.total, metrics };
    } catch {
      if (this.loading !== controller) return;
      this.keys = { sections: [], total: 0, metrics: [] }; // the run is gone or unreachable: shown without keys
    }
    this.loading = null;
    this.render();
  }

  private render(): void {
    clear(this.root);
    const ref = this.ref;
    const run = this.run;
    if (ref === null) {
      this.root.append(el('p', { class: 'muted', text: 'Select a run in the table, or click its name.' }));
      return;
    }
    this.root.dataset.project = ref.project;
    this.root.dataset.run = ref.run;
    if (run === undefined) {
      this.root.append(el('p', { class: 'muted', text: `Loading ${ref.project}/${ref.run}…` }));
      return;
    }
    this.root.dataset.state = run.state;
    const facts = el(
      'dl',
      { class: 'run-facts', 'data-testid': TEST_IDS.runFacts },
      ...runFacts(run, Date.now()).flatMap(([field, label, text]) => [
        el('dt', { text: label }),
        el('dd', { 'data-field': field, text }),
      ]),
    );
    const summary = keyValueRows(run.summary);
    this.root.append(
      el('h2', { class: 'run-title' }, el('span', { text: runNameParts(run).name }), el('span', { class: `badge state ${run.state}`, text: run.state })),
      facts,
      this.chartsBlock(),
      el('h3', { text: 'Alerts' }),
      this.alertsBlock(ref),
      el('h3', { text: 'Config' }),
      table(TEST_IDS.runConfig, keyValueRows(run.config).map(([k, v]) => kvRow(k, v)), 'No config.'),
      ...(summary.length ? [el('h3', { text: 'Summary' }), table(TEST_IDS.runSummary, summary.map(([k, v]) => kvRow(k, v)), '')] : []),
      el('h3', { text: 'Last values' }),
      this.lastValuesBlock(),
    );
  }

  private chartsBlock(): HTMLElement {
    const link = (text: string, filter: string, section: string | null) => {
      const a = el('a', { href: '#', class: 'run-charts-link', 'data-testid': TEST_IDS.runChartsLink, text });
      if (section !== null) a.dataset.section = section;
      a.addEventListener('click', (event) => {
        event.preventDefault();
        this.host.openCharts(filter);
      });
      return a;
    };
    const keys = this.keys;
    const sections = keys?.sections ?? [];
    return el(
      'div',
      { class: 'run-charts' },
      link(keys ? `All ${formatStep(keys.total)} charts` : 'All charts', '', null),
      ...(sections.length > 1 || (sections.length === 1 && sections[0]!.name !== '')
        ? sections.map((s) => link(`${s.name || '(no prefix)'} (${formatStep(s.keys)})`, sectionFilter(s.name), s.name))
        : []),
    );
  }

  private alertsBlock(ref: RunRef): HTMLElement {
    const rows = runAlerts(this.alerts, ref).map((a) =>
      el(
        'tr',
        { 'data-testid': TEST_IDS.runAlertRow, 'data-state': a.state, 'data-kind': a.kind, 'data-key': a.key },
        el('td', {}, el('span', { class: `badge ${a.state === 'firing' ? 'alert' : 'state finished'}`, text: a.state })),
        el('td', { text: a.rule }),
        el('td', { text: a.key }),
        el('td', { text: `step ${formatStep(a.fired_step)}` }),
        el('td', { class: 'message', text: a.message }),
      ),
    );
    if (rows.length === 0) return el('p', { class: 'muted', 'data-testid': TEST_IDS.runAlertsTable, text: 'No alerts.' });
    return el('table', { class: 'kv-table alerts', 'data-testid': TEST_IDS.runAlertsTable }, el('tbody', {}, ...rows));
  }

  private lastValuesBlock(): HTMLElement {
    const keys = this.keys;
    if (keys === null) return el('p', { class: 'muted', text: 'Loading…' });
    if (keys.metrics === null) {
      return el('p', { class: 'muted', text: `${formatStep(keys.total)} keys: see their charts.` });
    }
    const collator = new Intl.Collator('en', { numeric: true });
    const rows = keys.metrics
      .filter((m) => m.kind === 'scalar')
      .sort((a, b) => collator.compare(a.key, b.key))
      .map((m) => kvRow(m.key, formatValue(parseApiNumber(m.last_value)), `step ${formatStep(m.last_step)} · ${formatStep(m.count)} points`));
    return table(TEST_IDS.runLastValues, rows, 'No values yet.');
  }
}
