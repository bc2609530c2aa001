import { TEST_IDS } from '../constants/testIds';
import { formatCompact, formatTime } from '../core/format';
import { runKey, type RunRef } from '../core/runs';
import type { ApiRun } from '../types/api';
import { clear, el } from './dom';
import { configValues, configValueText, filterChoices, filterRuns, type RunFilter } from './runFilter';
import { runNameParts } from './runName';

export interface RunsPanelHost {
  onSelectionChange(selected: RunRef[]): void;
  onFilterChange(filter: RunFilter): void;
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

function fillSelect(node: HTMLSelectElement, placeholder: string, values: readonly string[], current: string): void {
  clear(node);
  node.append(el('option', { value: '', text: placeholder }));
  const all = current && !values.includes(current) ? [current, ...values] : values;
  for (const v of all) node.append(el('option', { value: v, text: v === '' ? '(empty)' : v }));
  node.value = current;
}

/** The runs table: search, filters by tag, group and any config key, and the run checkboxes. */
export class RunsPanel {
  readonly root: HTMLElement;
  private runs: ApiRun[] = [];
  private selected = new Map<string, RunRef>();
  private filter: RunFilter;
  private readonly search: HTMLInputElement;
  private readonly tag: HTMLSelectElement;
  private readonly group: HTMLSelectElement;
  private readonly configKey: HTMLSelectElement;
  private readonly configValue: HTMLSelectElement;
  private readonly count: HTMLSpanElement;
  private readonly alerting: HTMLInputElement;
  private readonly tbody: HTMLTableSectionElement;
  private readonly selectAll: HTMLInputElement;
  private readonly empty: HTMLDivElement;

  constructor(
    filter: RunFilter,
    selected: readonly RunRef[],
    private readonly host: RunsPanelHost,
  ) {
    this.filter = { ...filter };
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
    this.alerting = el('input', { type: 'checkbox', 'data-testid': TEST_IDS.alertsFilter, 'aria-label': 'Only runs with firing alerts' });
    this.alerting.checked = Boolean(filter.alerting);
    this.alerting.addEventListener('change', () => this.updateFilter({ alerting: this.alerting.checked }));

    this.selectAll = el('input', { type: 'checkbox', title: 'Select all shown runs', 'aria-label': 'Select all shown runs' });
    this.selectAll.addEventListener('change', () => this.toggleAllShown(this.selectAll.checked));

    this.tbody = el('tbody');
    const table = el(
      'table',
      { class: 'runs-table', 'data-testid': TEST_IDS.runsTable },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          el('th', { class: 'check' }, this.selectAll),
          el('th', { text: 'Project' }),
          el('th', { text: 'Run' }),
          el('th', { text: 'State' }),
          el('th', { text: 'Started' }),
          el('th', { text: 'Tags' }),
          el('th', { text: 'Group' }),
          el('th', { class: 'num', text: 'Points' }),
        ),
      ),
      this.tbody,
    );
    this.empty = el('div', { class: 'empty', 'data-testid': TEST_IDS.emptyState, hidden: true });

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
        this.count,
      ),
      el('div', { class: 'table-wrap' }, table, this.empty),
    );
    this.render();
  }

  setRuns(runs: readonly ApiRun[]): void {
    this.runs = [...runs];
    this.render();
  }

  setSelected(refs: readonly RunRef[]): void {
    this.selected = new Map(refs.map((r) => [runKey(r), r]));
    this.render();
  }

  selectedRuns(): RunRef[] {
    return [...this.selected.values()];
  }

  private updateFilter(change: Partial<RunFilter>): void {
    this.filter = { ...this.filter, ...change };
    this.render();
    this.host.onFilterChange({ ...this.filter });
  }

  private toggle(ref: RunRef, on: boolean): void {
    const key = runKey(ref);
    if (on) this.selected.set(key, ref);
    else this.selected.delete(key);
    this.render();
    this.host.onSelectionChange(this.selectedRuns());
  }

  private toggleAllShown(on: boolean): void {
    for (const run of filterRuns(this.runs, this.filter)) {
      const ref = { project: run.project, run: run.run };
      if (on) this.selected.set(runKey(ref), ref);
      else this.selected.delete(runKey(ref));
    }
    this.render();
    this.host.onSelectionChange(this.selectedRuns());
  }

  private render(): void {
    const choices = filterChoices(this.runs);
    fillSelect(this.tag, 'any tag', choices.tags, this.filter.tag);
    fillSelect(this.group, 'any group', choices.groups, this.filter.group);
    fillSelect(this.configKey, 'config key…', choices.configKeys, this.filter.configKey);
    fillSelect(
      this.configValue,
      'any value',
      this.filter.configKey ? configValues(this.runs, this.filter.configKey) : [],
      this.filter.configValue,
    );
    this.configValue.disabled = !this.filter.configKey;

    const shown = filterRuns(this.runs, this.filter);
    clear(this.tbody);
    for (const run of shown) this.tbody.append(this.row(run));
    const shownSelected = shown.filter((r) => this.selected.has(runKey(r))).length;
    this.selectAll.checked = shown.length > 0 && shownSelected === shown.length;
    this.selectAll.indeterminate = shownSelected > 0 && shownSelected < shown.length;
    this.count.textContent = `${shown.length} of ${this.runs.length} runs · ${this.selected.size} selected`;
    this.empty.hidden = shown.length > 0;
    this.empty.textContent =
      this.runs.length === 0 ? 'No runs yet. Start one with `curvestream demo`.' : 'No run matches the filters.';
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
      el('td', { class: 'num', title: String(run.points ?? 0), text: formatCompact(run.points ?? 0) }),
    );
    tr.addEventListener('click', (event) => {
      if (event.target instanceof HTMLInputElement) return;
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
    return el('td', { class: 'name', title: run.run }, el('span', { text: parts.name }), ...suffix, ...resumed);
  }
}
