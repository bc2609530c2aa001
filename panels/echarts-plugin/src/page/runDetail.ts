import { DETAIL } from '../constants/defaults';
import { TEST_IDS } from '../constants/testIds';
import { runKey, sameRun, type RunRef } from '../core/runs';
import type { ApiAlert, ApiRun, LiveHistogramMessage, LiveTextsMessage } from '../types/api';
import type { ChartTheme } from '../types/chart';
import type { ApiClient } from './api';
import { clear, el } from './dom';
import { coalesce } from '../utils/timers';
import { HistogramView } from './histogramView';
import { RunOverview } from './runOverview';
import { TextLogView } from './textLogView';

export type DetailTab = 'run' | 'histograms' | 'logs';

export interface RunDetailHost {
  /** The user picked another run to look at. */
  onFocusChange(ref: RunRef): void;
  /** The run's record as the runs table has it (undefined before it answered). */
  run(ref: RunRef): ApiRun | undefined;
  alerts(): readonly ApiAlert[];
  /** Open the charts tab filtered by this chart filter text. */
  openCharts(metricFilter: string): void;
}

/**
 * The Run, Histograms and Logs tabs: one run at a time (picked among the selected
 * runs), loaded when its tab opens. Live messages keep them current: pushed
 * text lines are added to the log, a new histogram reloads its heatmap. While
 * the socket cannot push, the page's polling reloads the open view instead.
 */
export class RunDetail {
  readonly root: HTMLElement;
  private readonly focusSelect: HTMLSelectElement;
  private readonly histograms: HistogramView;
  private readonly log: TextLogView;
  private readonly overview: RunOverview;
  private refs: RunRef[] = [];
  private focus: RunRef | null = null;
  private tab: DetailTab | null = null;
  private readonly refreshSoon = coalesce(() => void this.load(), DETAIL.refreshMs);
  /** Keys with a new histogram since the heatmaps were last loaded. */
  private readonly newHistograms = new Set<string>();
  // a histogram logged every few steps must not reload the heatmaps on every frame
  private readonly histogramsSoon = coalesce(() => void this.refreshHistograms(), DETAIL.refreshMs);

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
    this.overview = new RunOverview(api, { openCharts: (filter) => host.openCharts(filter) });
    this.root = el(
      'div',
      { class: 'run-detail', hidden: true },
      el('div', { class: 'toolbar' }, el('label', { class: 'muted' }, 'run ', this.focusSelect)),
      this.overview.root,
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
    this.overview.root.hidden = tab !== 'run';
    this.histograms.root.hidden = tab !== 'histograms';
    this.log.root.hidden = tab !== 'logs';
    void this.load();
  }

  /** The runs' records or alerts changed (a status, a count, an alert): the Run tab shows them. */
  runsChanged(): void {
    if (this.tab === 'run' && this.focus) this.overview.update(this.host.run(this.focus), this.host.alerts());
  }

  setTheme(theme: ChartTheme): void {
    this.histograms.setTheme(theme);
  }

  /** Reload the open view if it shows this run: polled while the socket is down, and after a reconnect. */
  activity(ref: RunRef): void {
    if (this.tab && this.focus && sameRun(ref, this.focus)) this.refreshSoon();
  }

  /** Text lines pushed live: into the log, without asking the bridge. */
  texts(message: LiveTextsMessage): void {
    this.log.append(message, message.texts);
  }

  /** A new histogram of a run was stored: reload its heatmap if it is on screen. */
  histogram(message: LiveHistogramMessage): void {
    if (this.tab !== 'histograms' || !this.focus || !sameRun(message, this.focus)) return;
    this.newHistograms.add(message.key);
    this.histogramsSoon();
  }

  /** The socket dropped some of a run's messages: its log loads its newest lines again, the open view reloads. */
  gap(ref: RunRef): void {
    void this.log.reload(ref);
    if (this.tab === 'histograms') this.activity(ref);
  }

  private async refreshHistograms(): Promise<void> {
    const keys = [...this.newHistograms];
    this.newHistograms.clear();
    const ref = this.focus;
    if (this.tab !== 'histograms' || ref === null) return;
    // a key the view has no heatmap for yet: list the run's keys again
    if (!(await this.histograms.refresh(ref, keys))) await this.load();
  }

  private async load(): Promise<void> {
    const ref = this.focus;
    if (this.tab === 'run') this.overview.show(ref, ref ? this.host.run(ref) : undefined, this.host.alerts());
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
