import { DETAIL, TIMING } from '../constants/defaults';
import { TEST_IDS } from '../constants/testIds';
import { formatStep, formatTime } from '../core/format';
import { sameRun, type RunRef } from '../core/runs';
import { filterTexts, mergeTexts, newestTextMs, TEXT_LEVELS, textLevel, type TextFilter, type TextMerge } from '../core/texts';
import type { ApiText } from '../types/api';
import type { ApiClient } from './api';
import { clear, el } from './dom';
import { debounce } from '../utils/timers';

interface ShownRow {
  row: ApiText;
  element: HTMLElement;
}

/**
 * The text lines of a run, oldest first and the newest at the bottom, coloured
 * by level, with a filter. Lines pushed live are added as they come; a reload
 * asks only for the lines newer than the newest one shown.
 */
export class TextLogView {
  readonly root: HTMLElement;
  private readonly list: HTMLDivElement;
  private readonly search: HTMLInputElement;
  private readonly level: HTMLSelectElement;
  private readonly key: HTMLSelectElement;
  private readonly count: HTMLSpanElement;
  private rows: ApiText[] = [];
  /** The line elements in the list, oldest first: the rows the filter lets through. */
  private shown: ShownRow[] = [];
  private keys: string[] = [];
  private filter: TextFilter = { search: '', minLevel: 0, key: '' };
  private ref: RunRef | null = null;
  /** Bumped when another run is shown: answers about the previous one are dropped. */
  private generation = 0;
  /** The run's newest lines were loaded: from now on only newer ones are asked for. */
  private loaded = false;

  constructor(private readonly api: Pick<ApiClient, 'texts'>) {
    this.search = el('input', {
      type: 'search',
      placeholder: 'Filter lines…',
      'data-testid': TEST_IDS.textSearch,
      'aria-label': 'Filter text lines',
    });
    this.search.addEventListener('input', debounce(() => this.update({ search: this.search.value }), TIMING.filterTypingMs));
    this.level = el(
      'select',
      { 'data-testid': TEST_IDS.textLevel, 'aria-label': 'Lowest level', title: 'Lowest level shown' },
      el('option', { value: '0', text: 'all levels' }),
      ...TEXT_LEVELS.map((l) => el('option', { value: String(l.min), text: `${l.name} and up` })),
    );
    this.level.addEventListener('change', () => this.update({ minLevel: Number(this.level.value) }));
    this.key = el('select', { 'data-testid': TEST_IDS.textKey, 'aria-label': 'Text key', title: 'Text key' });
    this.key.addEventListener('change', () => this.update({ key: this.key.value }));
    this.count = el('span', { class: 'muted', 'data-testid': TEST_IDS.textCount });
    this.list = el('div', { class: 'text-log', 'data-testid': TEST_IDS.textLog, 'data-count': '0', role: 'log' });
    this.root = el(
      'div',
      { class: 'text-log-view' },
      el('div', { class: 'toolbar' }, this.search, this.level, this.key, el('span', { class: 'spacer' }), this.count),
      this.list,
    );
  }

  /** Show a run's lines: its newest ones for another run, only the newer ones for the run already shown. */
  async show(ref: RunRef | null): Promise<void> {
    if (ref !== null && this.ref !== null && sameRun(ref, this.ref)) return this.refresh();
    this.generation++;
    this.ref = ref;
    this.rows = [];
    this.loaded = false;
    if (ref === null) this.render(true);
    else await this.fetch(null);
  }

  /** Load a run's newest lines again if it is the one shown (pushed lines were dropped: a gap). */
  async reload(ref: RunRef): Promise<void> {
    if (this.ref !== null && sameRun(ref, this.ref)) await this.fetch(null);
  }

  /** Ask only for the lines newer than the newest shown (the reload while the socket cannot push). */
  async refresh(): Promise<void> {
    if (this.ref === null) return;
    await this.fetch(this.loaded ? newestTextMs(this.rows) : null);
  }

  /** Lines pushed live: added to the run's log without asking the bridge. */
  append(ref: RunRef, lines: readonly ApiText[]): void {
    if (this.ref === null || !sameRun(ref, this.ref) || lines.length === 0) return;
    this.take(mergeTexts(this.rows, lines, DETAIL.textLimit), false);
  }

  private async fetch(afterMs: number | null): Promise<void> {
    const ref = this.ref!;
    const generation = this.generation;
    if (!this.loaded) this.list.dataset.state = 'loading';
    let lines: ApiText[];
    try {
      lines = await this.api.texts(ref, { limit: DETAIL.textLimit, afterMs });
    } catch (error) {
      if (generation !== this.generation) return;
      this.list.dataset.state = 'error';
      this.count.textContent = error instanceof Error ? error.message : String(error);
      return;
    }
    if (generation !== this.generation) return;
    // a full page of newer lines may not be all of them: the newest are what the log keeps
    if (afterMs !== null && lines.length >= DETAIL.textLimit) return this.fetch(null);
    const first = !this.loaded;
    this.loaded = true;
    this.list.dataset.state = 'ready';
    // lines pushed while the answer was on its way stay: merging keeps each line once
    this.take(mergeTexts(this.rows, lines, DETAIL.textLimit), first);
  }

  private take(merge: TextMerge, toBottom: boolean): void {
    const before = this.rows;
    this.rows = merge.rows;
    if (toBottom || before.length === 0 || !merge.atEnd) this.render(toBottom);
    else if (merge.added.length > 0) this.addAtEnd(before, merge);
    else this.finish(false);
  }

  private update(change: Partial<TextFilter>): void {
    this.filter = { ...this.filter, ...change };
    this.render(true);
  }

  private fillKeys(): void {
    this.keys = [...new Set(this.rows.map((r) => r.key))].sort();
    const current = this.filter.key;
    clear(this.key);
    this.key.append(el('option', { value: '', text: 'every key' }));
    const keys = current && !this.keys.includes(current) ? [current, ...this.keys] : this.keys;
    for (const k of keys) this.key.append(el('option', { value: k, text: k }));
    this.key.value = current;
  }

  private atBottom(): boolean {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 24;
  }

  /** `toBottom`: a new run or filter; otherwise stay where the reader is unless they were at the newest line. */
  private render(toBottom: boolean): void {
    const atBottom = this.atBottom();
    this.fillKeys();
    clear(this.list);
    if (this.ref === null) this.list.append(el('div', { class: 'empty', text: 'Select a run to see its text log.' }));
    else if (this.rows.length === 0)
      this.list.append(el('div', { class: 'empty', text: 'No text yet. Log lines with run.log_text("log", "…", level=logging.INFO).' }));
    this.shown = filterTexts(this.rows, this.filter).map((row) => ({ row, element: lineElement(row) }));
    this.list.append(...this.shown.map((s) => s.element));
    this.finish(toBottom || atBottom);
  }

  /** Newer lines only: add their elements at the bottom and take the ones that fell off from the top. */
  private addAtEnd(before: readonly ApiText[], merge: TextMerge): void {
    const atBottom = this.atBottom();
    const gone = new Set([...before, ...merge.added].slice(0, merge.dropped));
    let drop = 0;
    while (drop < this.shown.length && gone.has(this.shown[drop]!.row)) this.shown[drop++]!.element.remove();
    this.shown.splice(0, drop);
    const added = filterTexts(merge.added, this.filter)
      .filter((row) => !gone.has(row))
      .map((row) => ({ row, element: lineElement(row) }));
    this.shown.push(...added);
    this.list.append(...added.map((s) => s.element));
    if (merge.added.some((r) => !this.keys.includes(r.key)) || merge.dropped > 0) this.fillKeys();
    this.finish(atBottom);
  }

  private finish(scrollToBottom: boolean): void {
    this.list.dataset.count = String(this.shown.length);
    this.count.textContent = `${this.shown.length} of ${this.rows.length} lines`;
    if (scrollToBottom) this.list.scrollTop = this.list.scrollHeight;
  }
}

function lineElement(row: ApiText): HTMLElement {
  const level = textLevel(row.level);
  return el(
    'div',
    {
      class: `text-row level-${level}`,
      'data-testid': TEST_IDS.textRow,
      'data-level': level,
      'data-key': row.key,
      'data-step': row.step,
      'data-time-ms': row.time_ms,
    },
    el('span', { class: 'text-step', title: formatTime(row.time_ms), text: formatStep(row.step) }),
    el('span', { class: 'text-key', text: row.key }),
    el('span', { class: `badge level ${level}`, text: level }),
    el('span', { class: 'text-body', text: row.text }),
  );
}
