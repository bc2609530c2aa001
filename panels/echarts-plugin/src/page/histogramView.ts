import { DETAIL } from '../constants/defaults';
import { histogramTestId, TEST_IDS } from '../constants/testIds';
import { histogramGrid, histogramHeatmapOption, type HistogramGrid } from '../core/histograms';
import { sameRun, type RunRef } from '../core/runs';
import type { ChartTheme } from '../types/chart';
import type { ApiClient } from './api';
import { el } from './dom';
import type { EChartsType } from './echarts';
import { loadECharts } from './echartsLoader';

interface Card {
  root: HTMLElement;
  canvas: HTMLDivElement;
  chart: EChartsType | null;
  grid: HistogramGrid | null;
}

/** One heatmap per histogram key of a run: the distribution (y) over steps (x), colour = count. */
export class HistogramView {
  readonly root: HTMLElement;
  private readonly grid: HTMLDivElement;
  private readonly empty: HTMLDivElement;
  private readonly cards = new Map<string, Card>();
  private readonly resizeObserver = new ResizeObserver(() => {
    for (const card of this.cards.values()) if (card.canvas.clientWidth > 0) card.chart?.resize();
  });
  private seq = 0;
  private ref: RunRef | null = null;

  constructor(
    private readonly api: ApiClient,
    private theme: ChartTheme,
  ) {
    this.grid = el('div', { class: 'charts' });
    this.empty = el('div', { class: 'empty', 'data-testid': TEST_IDS.histogramsEmpty, hidden: true });
    this.root = el('div', { class: 'histograms', 'data-testid': TEST_IDS.histograms }, this.empty, this.grid);
  }

  /** Show the histograms of `keys` for a run; keys no longer there are removed. */
  async show(ref: RunRef | null, keys: readonly string[]): Promise<void> {
    const seq = ++this.seq;
    this.ref = ref;
    for (const [key, card] of this.cards) {
      if (!keys.includes(key) || ref === null) this.removeCard(key, card);
    }
    this.empty.hidden = ref !== null && keys.length > 0;
    this.empty.textContent =
      ref === null
        ? 'Select a run to see its histograms.'
        : 'This run has no histograms. Log some with run.log_histogram("weights", values, step=step).';
    if (ref === null) return;
    await Promise.all(keys.map((key) => this.load(ref, key, seq)));
  }

  /**
   * Load these keys' histograms of the run shown again (new ones were stored).
   * False when the view shows another run or has no card for a key yet.
   */
  async refresh(ref: RunRef, keys: readonly string[]): Promise<boolean> {
    if (this.ref === null || !sameRun(ref, this.ref) || !keys.every((k) => this.cards.has(k))) return false;
    const seq = this.seq;
    await Promise.all(keys.map((key) => this.load(ref, key, seq)));
    return true;
  }

  setTheme(theme: ChartTheme): void {
    this.theme = theme;
    for (const [key, card] of this.cards) if (card.grid && card.chart) this.draw(key, card, card.chart, card.grid);
  }

  dispose(): void {
    for (const [key, card] of this.cards) this.removeCard(key, card);
    this.resizeObserver.disconnect();
  }

  private card(key: string): Card {
    let card = this.cards.get(key);
    if (card) return card;
    const canvas = el('div', { class: 'chart-canvas' });
    const root = el(
      'section',
      { class: 'chart-card', 'data-testid': histogramTestId(key), 'data-key': key, 'data-state': 'loading' },
      el('header', { class: 'chart-head' }, el('h3', { title: key, text: key }), el('span', { class: 'muted' })),
      canvas,
    );
    card = { root, canvas, chart: null, grid: null };
    this.cards.set(key, card);
    // keep cards in key order
    const keys = [...this.cards.keys()].sort();
    const next = keys[keys.indexOf(key) + 1];
    this.grid.insertBefore(root, next === undefined ? null : (this.cards.get(next)?.root ?? null));
    this.resizeObserver.observe(canvas);
    return card;
  }

  private removeCard(key: string, card: Card): void {
    card.chart?.dispose();
    this.resizeObserver.unobserve(card.canvas);
    card.root.remove();
    this.cards.delete(key);
  }

  private async load(ref: RunRef, key: string, seq: number): Promise<void> {
    const card = this.card(key);
    card.root.dataset.state = 'loading';
    try {
      const [rows, echarts] = await Promise.all([this.api.histograms(ref, key, DETAIL.histogramLimit), loadECharts()]);
      if (seq !== this.seq) return;
      card.chart ??= echarts.init(card.canvas, null, { renderer: 'canvas' });
      this.draw(key, card, card.chart, histogramGrid(rows, DETAIL.histogramBins));
    } catch (error) {
      if (seq !== this.seq) return;
      card.root.dataset.state = 'error';
      const note = card.root.querySelector('.muted');
      if (note) note.textContent = error instanceof Error ? error.message : String(error);
    }
  }

  private draw(key: string, card: Card, chart: EChartsType, grid: HistogramGrid): void {
    card.grid = grid;
    chart.setOption(histogramHeatmapOption(grid, this.theme, key), { notMerge: true });
    card.root.dataset.state = 'ready';
    card.root.dataset.steps = String(grid.steps.length);
    card.root.dataset.bins = String(Math.max(0, grid.edges.length - 1));
    const note = card.root.querySelector('.muted');
    if (note) {
      const skipped = grid.skipped ? ` · ${grid.skipped} unreadable left out` : '';
      note.textContent = `${grid.steps.length} steps${skipped}`;
    }
  }
}
