import { TEST_IDS } from '../constants/testIds';
import { formatCompact, formatTime } from '../core/format';
import { runKey, type RunRef } from '../core/runs';
import type { ApiRun, ApiRunsTable } from '../types/api';
import { clear, el } from './dom';
import { configValueText, type RunFilter } from './runFilter';
import { runNameParts } from './runName';
import { nextSort, rangeText, RUNS_PAGE_SIZE, SORTABLE, type RunsTableQuery } from './runsQuery';
import { encodeRunParam } from './urlState';

export interface RunsPanelHost {
  onSelectionChange(selected: RunRef[]): void;
  onFilterChange(filter: RunFilter, sort: string): void;
  /** One page of the table, as the bridge answers it. */
  loadPage(query: RunsTableQuery, signal: AbortSignal): Promise<ApiRunsTable>;
  /** A page came: its rows and the selected runs' rows are the runs the page knows now. */
  onPage(answer: ApiRunsTable): void;
  /** The user clicked a run's name: show that run's own view. */
  onOpenRun?(ref: RunRef): void;
  /** The rows' runs got new numbers in place (points), the rows unchanged. */
  onNumbers?(): void;
  onError(error: unknown): void;
  /** A row's menu of actions on its run (rename, delete). */
  runMenu?(run: ApiRun): HTMLElement;
}

const STATE_LABELS: Record<string, string> = {
  running: 'running',
  finished: 'finished',
  failed: 'failed',
  lost: 'lost',
  unknown: 'unknown',
};

function select(testId: string, label: string): HTMLSelectElement {
  return el('select', { 'data-testid': testId, 'aria-label': label, title: label });
}

function fillSelect(
  node: HTMLSelectElement,
  placeholder: string,
  values: readonly string[],
  current: string,
  counts?: ReadonlyMap<string, number>,
): void {
  clear(node);
  node.append(el('option', { value: '', text: placeholder }));
  const all = current && !values.includes(current) ? [current, ...values] : values;
  for (const v of all) {
    const n = counts?.get(v);
    const text = v === '' ? '(empty)' : v;
    node.append(el('option', { value: v, text: n === undefined ? text : `${text} (${n})` }));
  }
  node.value = current;
}

/** A Points cell: compact text, the exact count in its title and `data-points`. */
function writePoints(cell: HTMLTableCellElement, points: number): void {
  cell.textContent = formatCompact(points);
  cell.title = String(points);
  cell.dataset.points = String(points);
}

const HEADERS: readonly [string, string, string][] = [
  ['project', 'Project', ''],
  ['run', 'Run', ''],
  ['state', 'State', ''],
  ['started', 'Started', ''],
  ['tags', 'Tags', ''],
  ['group', 'Group', ''],
  ['points', 'Points', 'num'],
];

/**
 * The runs table: search, filters by tag, group and any config key, sortable
 * columns and the run checkboxes. The bridge filters, sorts and pages the runs
 * (`GET /api/v1/runs/table`): the table holds one page of rows, never the
 * whole list, so it stays fast with 10,000 runs.
 */
export class RunsPanel {
  readonly root: HTMLElement;
  private answer: ApiRunsTable | null = null;
  private selected = new Map<string, RunRef>();
  private filter: RunFilter;
  private sort: string;
  private offset = 0;
  private asked = 0;
  private pending: AbortController | null = null;
  private readonly search: HTMLInputElement;
  private readonly tag: HTMLSelectElement;
  private readonly group: HTMLSelectElement;
  private readonly configKey: HTMLSelectElement;
  private readonly configValue: HTMLSelectElement;
  private readonly count: HTMLSpanElement;
  private readonly hiddenSelected: HTMLSpanElement;
  private readonly alerting: HTMLInputElement;
  private readonly tbody: HTMLTableSectionElement;
  private readonly selectAll: HTMLInputElement;
  private readonly empty: HTMLDivElement;
  private readonly heads = new Map<string, HTMLTableCellElement>();
  private readonly range: HTMLSpanElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  /** The Points cell of each row shown, by run id: moved in place while runs grow. */
  private readonly pointsCells = new Map<string, HTMLTableCellElement>();

  constructor(
    filter: RunFilter,
    sort: string,
    selected: readonly RunRef[],
    private readonly host: RunsPanelHost,
  ) {
    this.filter = { ...filter };
    this.sort = sort;
    for (const ref of selected) this.selected.set(runKey(ref), ref);

    this.search = el('input', {
      type: 'search',
      placeholder: 'Search runs, tags, config…',
      'data-testid': TEST_IDS.runSearch,
      'aria-label': 'Search runs',
      value: filter.search,
    });
    this.search.value = filter.search;
    this.search.addEventListener('input', () => this.updateFilter({ search: this.search.value }));

    this.tag = select(TEST_IDS.tagFilter, 'Filter by tag');
    this.group = select(TEST_IDS.groupFilter, 'Filter by group');
    this.configKey = select(TEST_IDS.configKeyFilter, 'Filter by config key');
    this.configValue = select(TEST_IDS.configValueFilter, 'Config value');
    this.tag.addEventListener('change', () => this.updateFilter({ tag: this.tag.value }));
    this.group.addEventListener('change', () => this.updateFilter({ group: this.group.value }));
    this.configKey.addEventListener('change', () => this.updateFilter({ configKey: this.configKey.value, configValue: '' }));
    this.configValue.addEventListener('change', () => this.updateFilter({ configValue: this.configValue.value }));

    const clearButton = el('button', { type: 'button', class: 'link-button', 'data-testid': TEST_IDS.clearFilters, text: 'clear' });
    clearButton.addEventListener('click', () => {
      this.search.value = '';
      this.alerting.checked = false;
      this.updateFilter({ search: '', tag: '', group: '', configKey: '', configValue: '', alerting: false });
    });
    this.count = el('span', { class: 'muted', 'data-testid': TEST_IDS.runsCount });
    this.hiddenSelected = el('span', {
      class: 'hidden-selected',
      'data-testid': TEST_IDS.runsHiddenSelected,
      title: 'Selected runs the filters hide: still selected and drawn',
      hidden: true,
    });
    this.alerting = el('input', { type: 'checkbox', 'data-testid': TEST_IDS.alertsFilter, 'aria-label': 'Only runs with firing alerts' });
    this.alerting.checked = Boolean(filter.alerting);
    this.alerting.addEventListener('change', () => this.updateFilter({ alerting: this.alerting.checked }));

    this.selectAll = el('input', { type: 'checkbox', title: 'Select the runs of this page', 'aria-label': 'Select the runs of this page' });
    this.selectAll.addEventListener('change', () => this.toggleAllShown(this.selectAll.checked));

    const headRow = el('tr', {}, el('th', { class: 'check' }, this.selectAll));
    for (const [column, label, cls] of HEADERS) {
      const th = el('th', { class: cls, text: label });
      if (column in SORTABLE) {
        th.classList.add('sortable');
        th.dataset.sort = column;
        th.title = `Sort by ${label.toLowerCase()}`;
        th.addEventListener('click', () => this.setSort(nextSort(this.sort, column)));
      }
      this.heads.set(column, th);
      headRow.append(th);
    }
    headRow.append(el('th', { class: 'actions' }));
    this.tbody = el('tbody');
    const table = el('table', { class: 'runs-table', 'data-testid': TEST_IDS.runsTable }, el('thead', {}, headRow), this.tbody);
    this.empty = el('div', { class: 'empty', 'data-testid': TEST_IDS.emptyState, hidden: true });

    this.range = el('span', { class: 'muted', 'data-testid': TEST_IDS.runsRange });
    this.prev = el('button', { type: 'button', class: 'link-button', 'data-testid': TEST_IDS.runsPrev, text: '‹ previous' });
    this.next = el('button', { type: 'button', class: 'link-button', 'data-testid': TEST_IDS.runsNext, text: 'next ›' });
    this.prev.addEventListener('click', () => this.goTo(this.offset - RUNS_PAGE_SIZE));
    this.next.addEventListener('click', () => this.goTo(this.offset + RUNS_PAGE_SIZE));

    this.root = el(
      'section',
      { class: 'runs-panel', 'data-testid': TEST_IDS.runsPanel },
      el(
        'div',
        { class: 'toolbar' },
        this.search,
        this.tag,
        this.group,
        this.configKey,
        this.configValue,
        el('label', { class: 'toggle', title: 'Only runs with firing alerts' }, this.alerting, el('span', { text: 'firing alerts' })),
        clearButton,
        el('span', { class: 'spacer' }),
        this.hiddenSelected,
        this.count,
      ),
      el('div', { class: 'table-wrap' }, table, this.empty),
      el('div', { class: 'pager' }, this.prev, this.range, this.next),
    );
    this.render();
  }

  /** Ask the bridge for the page shown now again (runs came or changed). */
  reload(): Promise<void> {
    return this.ask();
  }

  /** The rows' runs changed in place (a live status): draw them again, without asking. */
  refresh(): void {
    this.render();
  }

  /** A shown row (or a selected run) is running: its point count grows. */
  showsRunning(): boolean {
    const answer = this.answer;
    return answer !== null && [...answer.runs, ...answer.selected].some((r) => r.state === 'running');
  }

  /**
   * Ask for the page shown again and move the rows' point counts in place, so a growing run's count
   * moves without the rows being drawn again (a hovered row, an open menu stay); a page whose rows
   * changed (a sort by points moved them) is drawn anew. Skipped while another request is under way.
   */
  async refreshNumbers(): Promise<void> {
    if (this.pending !== null || this.answer === null) return;
    const controller = new AbortController();
    this.pending = controller;
    const asked = this.asked;
    let answer: ApiRunsTable;
    try {
      answer = await this.host.loadPage(this.query(), controller.signal);
    } catch {
      return; // the next refresh or reload tells
    } finally {
      if (this.pending === controller) this.pending = null;
    }
    const shown = this.answer;
    if (asked !== this.asked || shown === null) return; // the user asked for another page meanwhile
    const ids = (a: ApiRunsTable) => [...a.runs, ...a.selected].map(runKey).join('\n');
    if (ids(answer) !== ids(shown) || answer.matched !== shown.matched) {
      this.answer = answer;
      this.host.onPage(answer);
      this.render();
      return;
    }
    const fresh = new Map([...answer.runs, ...answer.selected].map((r) => [runKey(r), r]));
    for (const run of [...shown.runs, ...shown.selected]) {
      const now = fresh.get(runKey(run));
      if (!now || now.points === run.points) continue;
      run.points = now.points;
      run.updated_ms = now.updated_ms;
      const cell = this.pointsCells.get(runKey(run));
      if (cell) writePoints(cell, run.points);
    }
    this.host.onNumbers?.();
  }

  setSelected(refs: readonly RunRef[]): void {
    this.selected = new Map(refs.map((r) => [runKey(r), r]));
    this.render();
  }

  selectedRuns(): RunRef[] {
    return [...this.selected.values()];
  }

  private query(): RunsTableQuery {
    return { filter: { ...this.filter }, sort: this.sort, offset: this.offset, limit: RUNS_PAGE_SIZE, selected: this.selectedRuns() };
  }

  /** One request at a time: a newer one aborts the one before, whose answer is dropped. */
  private async ask(): Promise<void> {
    this.pending?.abort();
    const controller = new AbortController();
    this.pending = controller;
    const asked = ++this.asked;
    let answer: ApiRunsTable;
    try {
      answer = await this.host.loadPage(this.query(), controller.signal);
    } catch (error) {
      if (asked === this.asked && !controller.signal.aborted) this.host.onError(error);
      return;
    } finally {
      if (this.pending === controller) this.pending = null;
    }
    if (asked !== this.asked) return;
    if (answer.matched > 0 && this.offset >= answer.matched) {
      // the runs shrank under the page shown: the last page instead
      this.offset = Math.max(0, Math.floor((answer.matched - 1) / RUNS_PAGE_SIZE) * RUNS_PAGE_SIZE);
      return this.ask();
    }
    this.answer = answer;
    this.host.onPage(answer);
    this.render();
  }

  private updateFilter(change: Partial<RunFilter>): void {
    this.filter = { ...this.filter, ...change };
    this.offset = 0;
    this.renderControls(); // the rows change with the answer
    this.host.onFilterChange({ ...this.filter }, this.sort);
    void this.ask();
  }

  private setSort(sort: string): void {
    this.sort = sort;
    this.offset = 0;
    this.renderControls();
    this.host.onFilterChange({ ...this.filter }, this.sort);
    void this.ask();
  }

  private goTo(offset: number): void {
    const matched = this.answer?.matched ?? 0;
    if (offset < 0 || (offset >= matched && offset > 0)) return;
    this.offset = offset;
    void this.ask();
  }

  private toggle(ref: RunRef, on: boolean): void {
    const key = runKey(ref);
    if (on) this.selected.set(key, ref);
    else this.selected.delete(key);
    this.render();
    this.host.onSelectionChange(this.selectedRuns());
  }

  private toggleAllShown(on: boolean): void {
    for (const run of this.answer?.runs ?? []) {
      const ref = { project: run.project, run: run.run };
      if (on) this.selected.set(runKey(ref), ref);
      else this.selected.delete(runKey(ref));
    }
    this.render();
    this.host.onSelectionChange(this.selectedRuns());
  }

  private render(): void {
    this.renderControls();
    this.renderRows();
  }

  /** The filters' choices and the sorted column. */
  private renderControls(): void {
    const answer = this.answer;
    const facets = answer?.facets ?? { tags: [], groups: [], config_keys: [] };
    const groupCounts = answer?.count_by === 'group' ? new Map(answer.counts.map((c) => [c.value ?? '', c.runs])) : undefined;
    fillSelect(this.tag, 'any tag', facets.tags, this.filter.tag);
    fillSelect(this.group, 'any group', facets.groups, this.filter.group, groupCounts);
    fillSelect(this.configKey, 'config key…', facets.config_keys, this.filter.configKey);
    fillSelect(this.configValue, 'any value', this.filter.configKey ? (facets.config_values ?? []) : [], this.filter.configValue);
    this.configValue.disabled = !this.filter.configKey;
    const field = this.sort.replace(/^-/, '');
    for (const [column, th] of this.heads) {
      const on = column === field;
      th.classList.toggle('sorted', on);
      th.dataset.direction = on ? (this.sort.startsWith('-') ? 'desc' : 'asc') : '';
      if (on) th.setAttribute('aria-sort', this.sort.startsWith('-') ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    }
  }

  private renderRows(): void {
    const answer = this.answer;
    const shown = answer?.runs ?? [];
    clear(this.tbody);
    this.pointsCells.clear();
    for (const run of shown) this.tbody.append(this.row(run));
    const shownSelected = shown.filter((r) => this.selected.has(runKey(r))).length;
    this.selectAll.checked = shown.length > 0 && shownSelected === shown.length;
    this.selectAll.indeterminate = shownSelected > 0 && shownSelected < shown.length;
    const matched = answer?.matched ?? 0;
    const total = answer?.total ?? 0;
    this.count.textContent = `${matched} of ${total} runs · ${this.selected.size} selected`;
    const hidden = answer?.selected_hidden ?? 0;
    this.hiddenSelected.hidden = hidden === 0;
    this.hiddenSelected.textContent = hidden ? `${hidden} selected run${hidden === 1 ? '' : 's'} hidden by the filters` : '';
    this.range.textContent = rangeText(answer?.offset ?? 0, shown.length, matched);
    this.prev.disabled = this.offset === 0;
    this.next.disabled = this.offset + RUNS_PAGE_SIZE >= matched;
    this.empty.hidden = answer === null || shown.length > 0;
    this.empty.textContent = total === 0 ? 'No runs yet. Start one with `curvestream demo`.' : 'No run matches the filters.';
  }

  private row(run: ApiRun): HTMLTableRowElement {
    const ref = { project: run.project, run: run.run };
    const isSelected = this.selected.has(runKey(ref));
    const checkbox = el('input', {
      type: 'checkbox',
      'data-testid': TEST_IDS.runCheckbox,
      'aria-label': `Show ${run.project}/${run.run}`,
    });
    checkbox.checked = isSelected;
    checkbox.addEventListener('change', () => this.toggle(ref, checkbox.checked));

    const state = STATE_LABELS[run.state] ?? 'unknown';
    // finished, but the tail still waits in the trainer's spool: never shown as plainly finished
    const pending = run.pending_batches ?? 0;
    const shown = pending > 0 ? `${state} · ${pending} batches pending` : state;
    const badge = el('span', {
      class: `badge state ${state}${pending > 0 ? ' pending' : ''}`,
      'data-testid': TEST_IDS.runState,
      'data-pending': String(pending),
      title: run.reason ? `${shown}: ${run.reason}` : shown,
      text: shown,
    });
    const firing = run.alerts_firing ?? 0;
    const alertBadge = firing
      ? [el('span', {
          class: 'badge alert',
          'data-testid': TEST_IDS.runAlerts,
          title: `${firing} firing alert${firing === 1 ? '' : 's'}`,
          text: `⚠ ${firing}`,
        })]
      : [];
    const tags = el('td', { class: 'tags' }, ...(run.tags ?? []).map((t) => el('span', { class: 'tag', text: t })));
    const config = Object.entries(run.config ?? {})
      .map(([k, v]) => `${k}=${configValueText(v)}`)
      .join('\n');
    const points = el('td', { class: 'num', 'data-testid': TEST_IDS.runPoints });
    writePoints(points, run.points ?? 0);
    this.pointsCells.set(runKey(ref), points);
    const tr = el(
      'tr',
      {
        'data-testid': TEST_IDS.runRow,
        'data-project': run.project,
        'data-run': run.run,
        'data-state': state,
        'data-alerts-firing': String(firing),
        'data-selected': String(isSelected),
        class: isSelected ? 'selected' : '',
        title: [run.host ? `host ${run.host}` : '', run.git_commit ? `git ${run.git_commit}${run.git_dirty ? ' (dirty)' : ''}` : '', config]
          .filter(Boolean)
          .join('\n'),
      },
      el('td', { class: 'check' }, checkbox),
      el('td', { class: 'project', text: run.project }),
      this.nameCell(run),
      el('td', {}, badge, ...alertBadge),
      el('td', { class: 'time', text: run.started_ms ? formatTime(run.started_ms) : '—' }),
      tags,
      el('td', { class: 'group', text: run.group ?? '' }),
      points,
      el('td', { class: 'actions' }, ...(this.host.runMenu ? [this.host.runMenu(run)] : [])),
    );
    tr.addEventListener('click', (event) => {
      if (event.target instanceof HTMLInputElement || (event.target instanceof Element && event.target.closest('a'))) return;
      this.toggle(ref, !this.selected.has(runKey(ref)));
    });
    return tr;
  }

  /** The name the trainer gave, then what tells runs of that name apart, then a mark for a resumed run. */
  private nameCell(run: ApiRun): HTMLTableCellElement {
    const parts = runNameParts(run);
    const suffix = parts.suffix ? [el('span', { class: 'run-id', 'data-testid': TEST_IDS.runId, text: parts.suffix })] : [];
    const resumed = parts.resumed
      ? [el('span', {
          class: `badge resumed${parts.stepsBack ? ' steps-back' : ''}`,
          'data-testid': TEST_IDS.runResumed,
          'data-steps-back': String(parts.stepsBack),
          title: parts.resumed,
          text: parts.stepsBack ? '↺ steps back' : '↺',
        })]
      : [];
    // a link to the run's own view (a new tab opens it alone); a plain click shows it here
    const ref = { project: run.project, run: run.run };
    const link = el('a', {
      class: 'run-link',
      href: `?${new URLSearchParams([['run', encodeRunParam(ref)], ['tab', 'run']]).toString()}`,
      title: `Open ${run.run}`,
      'data-testid': TEST_IDS.runOpen,
      text: parts.name,
    });
    link.addEventListener('click', (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey || !this.host.onOpenRun) return;
      event.preventDefault();
      event.stopPropagation();
      this.host.onOpenRun(ref);
    });
    return el('td', { class: 'name', title: run.run }, el('span', {}, link), ...suffix, ...resumed);
  }
}
