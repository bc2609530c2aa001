/**
 * A chart's own legend when it draws many runs (ECharts' legend of 100 names
 * is a scroll bar of chips): the top runs by last value, a search, and the
 * curve of the run under the pointer (or of the runs the search finds)
 * highlighted on the chart.
 */
import { TEST_IDS } from '../constants/testIds';
import { formatValue } from '../core/format';
import type { SeriesData } from '../types/chart';
import { clear, el } from './dom';

/** A chart with more curves than this shows the card's legend instead of ECharts'. */
export const ECHARTS_LEGEND_MAX = 12;

/** Entries the legend lists until the user asks for all. */
export const LEGEND_TOP = 10;

export interface LegendEntry {
  id: string;
  name: string;
  color: string;
  /** The curve's last finite value; NaN when it has none. */
  last: number;
}

export type LegendOrder = 'desc' | 'asc';

/** The last finite value of a curve (what its line ends at); NaN when none. */
export function lastFinite(data: Pick<SeriesData, 'y'>): number {
  for (let i = data.y.length - 1; i >= 0; i--) if (Number.isFinite(data.y[i])) return data.y[i]!;
  return NaN;
}

/** Entries whose name holds every word of the search (any case). */
export function matchingEntries(entries: readonly LegendEntry[], search: string): LegendEntry[] {
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [...entries];
  return entries.filter((e) => {
    const name = e.name.toLowerCase();
    return words.every((w) => name.includes(w));
  });
}

/** By last value (runs without one last), ties by name; the first `top` of them (null: all). */
export function topEntries(entries: readonly LegendEntry[], order: LegendOrder, top: number | null): LegendEntry[] {
  const sign = order === 'desc' ? -1 : 1;
  const sorted = [...entries].sort((a, b) => {
    const an = Number.isNaN(a.last);
    const bn = Number.isNaN(b.last);
    if (an !== bn) return an ? 1 : -1;
    if (!an && a.last !== b.last) return sign * (a.last - b.last);
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
  return top === null ? sorted : sorted.slice(0, top);
}

export class CardLegend {
  readonly root: HTMLDivElement;
  private entries: LegendEntry[] = [];
  private order: LegendOrder = 'desc';
  private showAll = false;
  private readonly search: HTMLInputElement;
  private readonly orderButton: HTMLButtonElement;
  private readonly moreButton: HTMLButtonElement;
  private readonly count: HTMLSpanElement;
  private readonly list: HTMLOListElement;

  /** `onHighlight`: the curves to stand out (null: none). */
  constructor(private readonly onHighlight: (ids: string[] | null) => void) {
    this.search = el('input', { type: 'search', placeholder: 'Find a run…', 'data-testid': TEST_IDS.legendSearch, 'aria-label': 'Find a run in this chart' });
    this.search.addEventListener('input', () => {
      this.render();
      this.highlightSearch();
    });
    this.orderButton = el('button', { type: 'button', class: 'link-button', 'data-testid': TEST_IDS.legendOrder });
    this.orderButton.addEventListener('click', () => {
      this.order = this.order === 'desc' ? 'asc' : 'desc';
      this.render();
    });
    this.moreButton = el('button', { type: 'button', class: 'link-button', 'data-testid': TEST_IDS.legendMore });
    this.moreButton.addEventListener('click', () => {
      this.showAll = !this.showAll;
      this.render();
    });
    this.count = el('span', { class: 'muted' });
    this.list = el('ol', { class: 'legend-list' });
    this.list.addEventListener('mouseleave', () => this.highlightSearch());
    this.root = el(
      'div',
      { class: 'card-legend', 'data-testid': TEST_IDS.cardLegend, hidden: true },
      el('div', { class: 'legend-bar' }, this.search, this.orderButton, this.count, this.moreButton),
      this.list,
    );
  }

  /** The chart's curves now (hidden with none). */
  setEntries(entries: LegendEntry[]): void {
    this.entries = entries;
    this.root.hidden = entries.length === 0;
    this.render();
  }

  private highlightSearch(): void {
    const text = this.search.value.trim();
    this.onHighlight(text ? matchingEntries(this.entries, text).map((e) => e.id) : null);
  }

  private render(): void {
    const matching = matchingEntries(this.entries, this.search.value);
    const shown = topEntries(matching, this.order, this.showAll ? null : LEGEND_TOP);
    this.orderButton.textContent = this.order === 'desc' ? 'highest last value first' : 'lowest last value first';
    this.count.textContent = `${shown.length} of ${matching.length}${matching.length < this.entries.length ? ` (${this.entries.length} runs)` : ''}`;
    this.moreButton.hidden = matching.length <= LEGEND_TOP;
    this.moreButton.textContent = this.showAll ? `top ${LEGEND_TOP}` : `all ${matching.length}`;
    clear(this.list);
    for (const entry of shown) {
      const item = el(
        'li',
        { 'data-testid': TEST_IDS.legendItem, 'data-id': entry.id, title: entry.name },
        el('span', { class: 'legend-chip' }),
        el('span', { class: 'legend-name', text: entry.name }),
        el('span', { class: 'legend-value', text: Number.isNaN(entry.last) ? '—' : formatValue(entry.last) }),
      );
      (item.firstChild as HTMLElement).style.background = entry.color;
      item.addEventListener('mouseenter', () => this.onHighlight([entry.id]));
      this.list.append(item);
    }
  }
}
