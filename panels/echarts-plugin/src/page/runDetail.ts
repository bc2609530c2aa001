import { DETAIL } from '../constants/defaults';
import { TEST_IDS } from '../constants/testIds';
import { runKey, sameRun, type RunRef } from '../core/runs';
import type { ChartTheme } from '../types/chart';
import type { ApiClient } from './api';
import { clear, coalesce, el } from './dom';
import { HistogramView } from './histogramView';
import { TextLogView } from './textLogView';

export type DetailTab = 'histograms' | 'logs';

export interface RunDetailHost {
  /** The user picked another run to look at. */
  onFocusChange(ref: RunRef): void;
}

/**
 * The Histograms and Logs tabs: one run at a time (picked among the selected
 * runs), loaded when its tab opens and again, at most every couple of seconds,
 * while that run is active.
 */
export class RunDetail {
  readonly root: HTMLElement;
  private readonly focusSelect: HTMLSelectElement;
  private readonly histograms: HistogramView;
  private readonly log: TextLogView;
  private refs: RunRef[] = [];
  private focus: RunRef | null = null;
  private tab: DetailTab | null = null;
  private readonly refreshSoon = coalesce(() => void this.load(), DETAIL.refreshMs);

  constructor(
    private readonly api: ApiClient,
    theme: ChartTheme,
    private readonly host: RunDetailHost,
  ) {
    this.focusSelect = el('select', { 'data-testid': TEST_IDS.focusRun, 'aria-label': 'Run', title: 'Run shown' });
    this.focusSelect.addEventListener('change', () => {
      const ref = this.refs[Number(this.focusSelect.value)];
      if (!ref) return;
      this.focus = ref;
      this.host.onFocusChange(ref);
      void this.load();
    });
    this.histograms = new HistogramView(api, theme);
    this.log = new TextLogView(api);
    this.root = el(
      'div',
      { class: 'run-detail', hidden: true },
      el('div', { class: 'toolbar' }, el('label', { class: 'muted' }, 'run ', this.focusSelect)),
      this.histograms.root,
      this.log.root,
    );
  }

  /** The runs one can pick, with their labels; `preferred` is shown when it is among them. */
  setRuns(refs: readonly RunRef[], labels: ReadonlyMap<string, string>, preferred: RunRef | null): void {
    this.refs = [...refs];
    const wanted = preferred ?? this.focus;
    const next = this.refs.find((r) => wanted && sameRun(r, wanted)) ?? this.refs[0] ?? null;
    clear(this.focusSelect);
    this.refs.forEach((r, i) => this.focusSelect.append(el('option', { value: i, text: labels.get(runKey(r)) ?? r.run })));
    if (next) this.focusSelect.value = String(this.refs.indexOf(next));
    const changed = next === null ? this.focus !== null : !(this.focus && sameRun(next, this.focus));
    this.focus = next;
    if (changed) void this.load();
  }

  /** Show one of the tabs, or nothing (the charts tab is open). */
  setTab(tab: DetailTab | null): void {
    if (tab === this.tab) return;
    this.tab = tab;
    this.root.hidden = tab === null;
    this.histograms.root.hidden = tab !== 'histograms';
    this.log.root.hidden = tab !== 'logs';
    void this.load();
  }

  setTheme(theme: ChartTheme): void {
    this.histograms.setTheme(theme);
  }

  /** Something happened to a run (points, a status, a gap): reload if it is the one shown. */
  activity(ref: RunRef): void {
    if (this.tab && this.focus && sameRun(ref, this.focus)) this.refreshSoon();
  }

  private async load(): Promise<void> {
    const ref = this.focus;
    if (this.tab === 'logs') await this.log.show(ref);
    if (this.tab === 'histograms') {
      if (!ref) return this.histograms.show(null, []);
      let keys: string[] = [];
      try {
        keys = (await this.api.metrics(ref)).filter((m) => m.kind === 'histogram').map((m) => m.key);
      } catch {
        // the run is gone or unreachable: show it as empty
      }
      if (this.focus === ref && this.tab === 'histograms') await this.histograms.show(ref, keys);
    }
  }
}
