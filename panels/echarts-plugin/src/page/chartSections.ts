/**
 * The charts tab's body: one chart per metric key of the selected runs, in
 * sections by key prefix (`layer.12/…`), each foldable. The bridge lists the
 * keys (`GET /api/v1/keys`: searched, in sections, one range at a time); a
 * section is cut into blocks of a few rows (sectionLayout.ts), and a block's
 * charts are made when it comes near the screen and disposed when it is far
 * away again: a run with 10,000 keys scrolls with a few dozen charts alive.
 */
import { TEST_IDS } from '../constants/testIds';
import { runKey, type RunRef } from '../core/runs';
import type { ApiKeys } from '../types/api';
import type { KeysQuery } from './api';
import type { ChartPanel } from './chartPanel';
import { clear, el } from './dom';
import { keySearch } from './keySearch';
import { loadChartsNearViewport } from './nearViewport';
import { BLOCK_ROWS, blockHeight, blocksOf, CARD_HEIGHT_GUESS_PX, FIRST_KEYS, gridColumns, missingRange, type BlockSpan } from './sectionLayout';

/** Keys asked at once when a block needs its own. */
const KEYS_PER_REQUEST = 60;
/** A block this close to the screen (CSS px) makes its charts ... */
const LOAD_MARGIN_PX = 800;
/** ... and one this far away disposes them. */
const RELEASE_MARGIN_PX = 2400;

export interface KeyEntry {
  key: string;
  /** Indices into the layout's runs of the runs that logged it. */
  runs: number[];
}

export interface ChartSectionsHost {
  fetchKeys(refs: readonly RunRef[], query: KeysQuery, signal: AbortSignal): Promise<ApiKeys>;
  /** A new chart for a key. */
  makePanel(key: string): ChartPanel;
  /** Give a chart its runs: those that logged its key, with their first points (the origin of relative x). */
  fillPanel(panel: ChartPanel, runs: RunRef[], originsMs: ReadonlyMap<string, number | null>): void;
  onFoldChange(folded: string[]): void;
  /** Keys were listed (how many there are, how many the search keeps) or the charts that exist changed. */
  onChange(): void;
  onError(error: unknown): void;
}

interface Block {
  span: BlockSpan;
  el: HTMLDivElement;
  /** Its charts, null while not made (or released). */
  panels: ChartPanel[] | null;
  loading: boolean;
}

interface Section {
  name: string;
  offset: number;
  keys: number;
  el: HTMLElement;
  body: HTMLDivElement;
  blocks: Block[];
}

export class ChartSections {
  readonly root: HTMLDivElement;
  /** The charts that exist now, by key. */
  readonly panels = new Map<string, ChartPanel>();
  private runs: RunRef[] = [];
  private search: Pick<KeysQuery, 'q' | 'match'> = { q: '', match: 'words' };
  private answer: ApiKeys | null = null;
  private readonly keys = new Map<number, KeyEntry>();
  private readonly entries = new Map<string, KeyEntry>();
  private sections: Section[] = [];
  private readonly folded: Set<string>;
  private generation = 0;
  private asking: AbortController | null = null;
  private columns = 0;
  private cardPx = CARD_HEIGHT_GUESS_PX;
  private measured = false;
  private readonly blockOf = new WeakMap<Element, Block>();
  private readonly near: IntersectionObserver;
  private readonly far: IntersectionObserver;
  private readonly resizeObserver: ResizeObserver;

  constructor(
    folded: readonly string[],
    private readonly host: ChartSectionsHost,
  ) {
    this.folded = new Set(folded);
    this.root = el('div', { class: 'chart-sections', 'data-testid': TEST_IDS.chartsGrid });
    this.near = new IntersectionObserver((entries) => {
      for (const e of entries) if (e.isIntersecting) void this.load(this.blockOf.get(e.target));
    }, { rootMargin: `${LOAD_MARGIN_PX}px 0px` });
    this.far = new IntersectionObserver((entries) => {
      for (const e of entries) {
        // a hidden tab has no box: its charts stay as they are (they keep taking live points)
        const hidden = e.boundingClientRect.width === 0 && e.boundingClientRect.height === 0;
        if (!e.isIntersecting && !hidden) this.release(this.blockOf.get(e.target));
      }
    }, { rootMargin: `${RELEASE_MARGIN_PX}px 0px` });
    this.resizeObserver = new ResizeObserver(() => {
      const width = this.root.clientWidth;
      if (width > 0 && this.answer && gridColumns(width) !== this.columns) this.build();
    });
    this.resizeObserver.observe(this.root);
  }

  /** Keys of the runs listed, all of them (none left out by a search). */
  get total(): number {
    return this.answer?.total ?? 0;
  }

  /** Keys the search keeps. */
  get matched(): number {
    return this.answer?.matched ?? 0;
  }

  /** The runs the layout lists keys of, in the order asked. */
  get layoutRuns(): readonly RunRef[] {
    return this.runs;
  }

  /** Lay out the keys of these runs that the filter text keeps (keySearch.ts); `fresh`: read anew on the bridge. */
  async show(runs: readonly RunRef[], filterText: string, fresh = false): Promise<void> {
    const generation = ++this.generation;
    this.asking?.abort();
    const asking = new AbortController();
    this.asking = asking;
    const search = keySearch(filterText);
    let answer: ApiKeys | null = null;
    if (runs.length > 0) {
      try {
        const query = { ...search, offset: 0, limit: FIRST_KEYS, ...(fresh ? { fresh } : {}) };
        answer = await this.host.fetchKeys(runs, query, asking.signal);
      } catch (error) {
        if (!asking.signal.aborted) this.host.onError(error);
        return;
      }
    }
    if (generation !== this.generation) return;
    this.runs = [...runs];
    this.search = search;
    this.answer = answer;
    this.keys.clear();
    answer?.keys.forEach((k, i) => this.keys.set(answer.offset + i, k));
    this.build();
  }

  /** The same runs and search again: keys have appeared. */
  refresh(filterText: string): Promise<void> {
    return this.show(this.runs, filterText, true);
  }

  /** Whether a key is laid out (listed by the bridge), with a chart now or not. */
  knows(key: string): boolean {
    if (this.entries.has(key)) return true;
    for (const entry of this.keys.values()) if (entry.key === key) return true;
    return false;
  }

  /** The sections as shown: name, keys, folded, and the charts that exist in each (tests and benchmarks read it). */
  describe(): { name: string; keys: number; folded: boolean; charts: string[] }[] {
    return this.sections.map((s) => ({
      name: s.name,
      keys: s.keys,
      folded: s.body.hidden,
      charts: s.blocks.flatMap((b) => (b.panels ?? []).map((p) => p.key)),
    }));
  }

  /** Give every chart its runs again (the grouping or the alerts changed). */
  fillAll(): void {
    for (const [key, panel] of this.panels) this.fill(panel, this.entries.get(key));
  }

  dispose(): void {
    this.near.disconnect();
    this.far.disconnect();
    this.resizeObserver.disconnect();
    for (const panel of this.panels.values()) panel.dispose();
    this.panels.clear();
  }

  // ---- layout ----

  /** Sections and blocks anew; the charts of keys still shown near the screen are kept. */
  private build(): void {
    const spare = new Map(this.panels);
    this.panels.clear();
    this.entries.clear();
    this.near.disconnect();
    this.far.disconnect();
    clear(this.root);
    const width = this.root.clientWidth;
    if (width > 0 || this.columns === 0) this.columns = gridColumns(width || window.innerWidth);
    const sections = this.answer?.sections ?? [];
    const headed = sections.length > 1 || (sections.length === 1 && sections[0]!.name !== '');
    this.sections = sections.map((s) => this.section(s, headed));
    this.root.append(...this.sections.map((s) => s.el));
    const blocks = this.sections.flatMap((s) => s.blocks);
    const near = new Set(blocks.filter((b) => isNear(b.el.getBoundingClientRect())));
    for (const block of near) void this.load(block, spare);
    for (const panel of spare.values()) panel.dispose();
    this.host.onChange();
  }

  private section(s: { name: string; offset: number; keys: number }, headed: boolean): Section {
    const folded = headed && this.folded.has(s.name);
    const body = el('div', { class: 'chart-section-body' });
    const node = el('section', {
      class: 'chart-section',
      'data-testid': TEST_IDS.chartSection,
      'data-section': s.name,
      'data-keys': String(s.keys),
      'data-folded': String(folded),
    });
    const section: Section = { name: s.name, offset: s.offset, keys: s.keys, el: node, body, blocks: [] };
    if (headed) {
      const head = el('button', {
        type: 'button',
        class: 'section-head',
        'data-testid': TEST_IDS.sectionToggle,
        'aria-expanded': String(!folded),
        title: folded ? 'Show these charts' : 'Fold these charts away',
      });
      head.append(el('span', { class: 'section-caret', text: folded ? '▸' : '▾' }), el('span', { class: 'section-name', text: s.name || 'charts' }),
        el('span', { class: 'muted', text: `${s.keys.toLocaleString('en-US')} chart${s.keys === 1 ? '' : 's'}` }));
      head.addEventListener('click', () => this.toggleFold(section));
      node.append(head);
    }
    node.append(body);
    if (!folded) this.makeBlocks(section);
    body.hidden = folded;
    return section;
  }

  private makeBlocks(section: Section): void {
    const perBlock = this.columns * BLOCK_ROWS;
    section.blocks = blocksOf(section, perBlock).map((span) => {
      const node = el('div', { class: 'chart-block' });
      node.style.height = `${blockHeight(span.count, this.columns, this.cardPx)}px`;
      const block: Block = { span, el: node, panels: null, loading: false };
      this.blockOf.set(node, block);
      this.near.observe(node);
      this.far.observe(node);
      return block;
    });
    section.body.append(...section.blocks.map((b) => b.el));
  }

  private toggleFold(section: Section): void {
    const fold = !this.folded.has(section.name);
    if (fold) this.folded.add(section.name);
    else this.folded.delete(section.name);
    section.el.dataset.folded = String(fold);
    const head = section.el.querySelector('.section-head');
    head?.setAttribute('aria-expanded', String(!fold));
    const caret = section.el.querySelector('.section-caret');
    if (caret) caret.textContent = fold ? '▸' : '▾';
    if (fold) {
      for (const block of section.blocks) {
        this.release(block);
        this.near.unobserve(block.el);
        this.far.unobserve(block.el);
      }
      section.blocks = [];
      clear(section.body);
    } else {
      this.makeBlocks(section);
    }
    section.body.hidden = fold;
    this.host.onFoldChange([...this.folded]);
    this.host.onChange();
  }

  // ---- making and releasing charts ----

  private async load(block: Block | undefined, spare?: Map<string, ChartPanel>): Promise<void> {
    if (!block || block.panels || block.loading) return;
    const generation = this.generation;
    const missing = missingRange(block.span.offset, block.span.count, (i) => this.keys.has(i));
    if (missing) {
      block.loading = true;
      try {
        const limit = Math.max(KEYS_PER_REQUEST, missing.count);
        const answer = await this.host.fetchKeys(this.runs, { ...this.search, offset: missing.offset, limit }, new AbortController().signal);
        if (generation !== this.generation) return;
        answer.keys.forEach((k, i) => this.keys.set(answer.offset + i, k));
      } catch (error) {
        this.host.onError(error);
        return;
      } finally {
        block.loading = false;
      }
      // scrolled far away (or laid out anew) while its keys were asked for: made when it comes near again
      if (!block.el.isConnected || block.panels || !isNear(block.el.getBoundingClientRect())) return;
    }
    const panels: ChartPanel[] = [];
    for (let i = block.span.offset; i < block.span.offset + block.span.count; i++) {
      const entry = this.keys.get(i);
      if (!entry) continue;
      const panel = spare?.get(entry.key) ?? this.host.makePanel(entry.key);
      spare?.delete(entry.key);
      panels.push(panel);
      this.panels.set(entry.key, panel);
      this.entries.set(entry.key, entry);
      this.fill(panel, entry);
    }
    block.panels = panels;
    block.el.style.height = '';
    block.el.append(...panels.map((p) => p.root));
    if (!this.measured && panels.length > 0) this.measureCards(panels[0]!);
    loadChartsNearViewport(panels);
    this.host.onChange();
  }

  private release(block: Block | undefined): void {
    if (!block?.panels) return;
    const height = block.el.offsetHeight;
    for (const panel of block.panels) {
      if (this.panels.get(panel.key) === panel) {
        this.panels.delete(panel.key);
        this.entries.delete(panel.key);
      }
      panel.dispose();
    }
    block.panels = null;
    block.el.style.height = `${height}px`;
    this.host.onChange();
  }

  /** The first card made tells how tall cards are: the blocks not made yet take that height. */
  private measureCards(panel: ChartPanel): void {
    const height = panel.root.offsetHeight;
    if (height <= 0) return;
    this.measured = true;
    if (Math.abs(height - this.cardPx) < 1) return;
    this.cardPx = height;
    for (const section of this.sections) {
      for (const block of section.blocks) {
        if (!block.panels) block.el.style.height = `${blockHeight(block.span.count, this.columns, this.cardPx)}px`;
      }
    }
  }

  private fill(panel: ChartPanel, entry: KeyEntry | undefined): void {
    const runs = (entry?.runs ?? []).flatMap((i) => (this.runs[i] ? [this.runs[i]] : []));
    const origins = new Map<string, number | null>();
    this.answer?.runs.forEach((r, i) => {
      if (this.runs[i]) origins.set(runKey(this.runs[i]), r.first_ms);
    });
    this.host.fillPanel(panel, runs, origins);
  }
}

/** Within the load margin of the viewport (and shown: a hidden tab has no box). */
function isNear(rect: DOMRect): boolean {
  if (rect.width === 0 && rect.height === 0) return false;
  return rect.bottom >= -LOAD_MARGIN_PX && rect.top <= window.innerHeight + LOAD_MARGIN_PX;
}
