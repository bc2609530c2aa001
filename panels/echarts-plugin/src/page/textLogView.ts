import { DETAIL } from '../constants/defaults';
import { TEST_IDS } from '../constants/testIds';
import { formatStep, formatTime } from '../core/format';
import type { RunRef } from '../core/runs';
import { filterTexts, TEXT_LEVELS, textLevel, type TextFilter } from '../core/texts';
import type { ApiText } from '../types/api';
import { clear, debounce, el } from './dom';

/** The text lines of a run, oldest first and the newest at the bottom, coloured by level, with a filter. */
export class TextLogView {
  readonly root: HTMLElement;
  private readonly list: HTMLDivElement;
  private readonly search: HTMLInputElement;
  private readonly level: HTMLSelectElement;
  private readonly key: HTMLSelectElement;
  private readonly count: HTMLSpanElement;
  private rows: ApiText[] = [];
  private filter: TextFilter = { search: '', minLevel: 0, key: '' };
  private ref: RunRef | null = null;
  private seq = 0;

  constructor(private readonly api: { texts(ref: RunRef, key: string | null, limit: number): Promise<ApiText[]> }) {
    this.search = el('input', {
      type: 'search',
      placeholder: 'Filter lines…',
      'data-testid': TEST_IDS.textSearch,
      'aria-label': 'Filter text lines',
    });
    this.search.addEventListener('input', debounce(() => this.update({ search: this.search.value }), 150));
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

  /** Load the run's newest lines (again). */
  async show(ref: RunRef | null): Promise<void> {
    const seq = ++this.seq;
    const sameRun = ref !== null && this.ref !== null && ref.project === this.ref.project && ref.run === this.ref.run;
    this.ref = ref;
    if (!sameRun) this.rows = [];
    if (ref === null) {
      this.render(true);
      return;
    }
    this.list.dataset.state = 'loading';
    try {
      const rows = await this.api.texts(ref, null, DETAIL.textLimit);
      if (seq !== this.seq) return;
      this.rows = rows;
      this.list.dataset.state = 'ready';
    } catch (error) {
      if (seq !== this.seq) return;
      this.list.dataset.state = 'error';
      this.count.textContent = error instanceof Error ? error.message : String(error);
      return;
    }
    this.render(!sameRun);
  }

  private update(change: Partial<TextFilter>): void {
    this.filter = { ...this.filter, ...change };
    this.render(true);
  }

  private fillKeys(): void {
    const keys = [...new Set(this.rows.map((r) => r.key))].sort();
    const current = this.filter.key;
    clear(this.key);
    this.key.append(el('option', { value: '', text: 'every key' }));
    for (const k of current && !keys.includes(current) ? [current, ...keys] : keys) this.key.append(el('option', { value: k, text: k }));
    this.key.value = current;
  }

  /** `toBottom`: a new run or filter; otherwise stay where the reader is unless they were at the newest line. */
  private render(toBottom: boolean): void {
    const atBottom = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 24;
    this.fillKeys();
    const shown = filterTexts(this.rows, this.filter);
    clear(this.list);
    if (this.ref === null) this.list.append(el('div', { class: 'empty', text: 'Select a run to see its text log.' }));
    else if (this.rows.length === 0)
      this.list.append(el('div', { class: 'empty', text: 'No text yet. Log lines with run.log_text("log", "…", level=logging.INFO).' }));
    for (const row of shown) {
      const level = textLevel(row.level);
      this.list.append(
        el(
          'div',
          {
            class: `text-row level-${level}`,
            'data-testid': TEST_IDS.textRow,
            'data-level': level,
            'data-key': row.key,
            'data-step': row.step,
          },
          el('span', { class: 'text-step', title: formatTime(row.time_ms), text: formatStep(row.step) }),
          el('span', { class: 'text-key', text: row.key }),
          el('span', { class: `badge level ${level}`, text: level }),
          el('span', { class: 'text-body', text: row.text }),
        ),
      );
    }
    this.list.dataset.count = String(shown.length);
    this.count.textContent = `${shown.length} of ${this.rows.length} lines`;
    if (toBottom || atBottom) this.list.scrollTop = this.list.scrollHeight;
  }
}
