/** Where each live push goes: chart curves, run states, the run detail views. */
import { TIMING } from '../constants/defaults';
import { runKey, type RunRef } from '../core/runs';
import type { ApiAlert, ApiRun, LiveMessage, LiveSeriesFrame, RunState } from '../types/api';
import type { RunDetail } from './runDetail';

const STOPPED: ReadonlySet<RunState> = new Set(['finished', 'failed', 'lost']);

/** What the page offers the pushes. */
export interface LiveTargets {
  /** Append a frame to the chart of its key; false when no chart shows that key. */
  appendToChart(runId: string, frame: LiveSeriesFrame): boolean;
  /** Load a run's curves again, on every chart. */
  refreshCurves(runId: string): void;
  isSelected(runId: string): boolean;
  /** A selected run logged a key without a chart: read its metrics again, soon. */
  refreshMetricsSoon(ref: RunRef): void;
  /** The known run with this id (its state and reason are updated in place), if any. */
  run(runId: string): ApiRun | undefined;
  /** A run's state changed in place. */
  runsChanged(): void;
  /** An alert of a watched run fired or resolved. */
  alert(alert: ApiAlert): void;
  /** A run the page does not know: read the runs list again, soon. */
  reloadRunsSoon(): void;
  /** The socket's subscription is in place: what changed before it may be missing from what the page read. */
  subscribed(): void;
  detail: RunDetail;
}

/**
 * Routes the live socket's messages. Knows which runs stopped: a stopped run
 * takes no more appends; points that still come (a killed run's spool sent
 * later by `curvestream sync`) are loaded with one query once they stop coming.
 */
export class LiveRouter {
  private readonly stopped = new Set<string>();
  private readonly stoppedReload = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly targets: LiveTargets) {}

  /** The runs list was read: its states tell which runs stopped. */
  noteRuns(runs: readonly ApiRun[]): void {
    for (const run of runs) this.noteState(runKey(run), run.state);
  }

  isStopped(runId: string): boolean {
    return this.stopped.has(runId);
  }

  route(message: LiveMessage): void {
    const targets = this.targets;
    switch (message.type) {
      case 'points': {
        const id = runKey(message);
        if (!Array.isArray(message.series)) return;
        if (this.stopped.has(id)) {
          this.reloadStoppedSoon(id);
          // the tail of a finished run arriving: its count of pending batches drops
          if (targets.run(id)?.pending_batches) targets.reloadRunsSoon();
          return;
        }
        for (const frame of message.series) {
          if (!targets.appendToChart(id, frame) && targets.isSelected(id)) targets.refreshMetricsSoon(message);
        }
        return;
      }
      case 'status': {
        const id = runKey(message);
        const run = targets.run(id);
        if (run) {
          run.state = message.state;
          run.reason = message.reason ?? '';
          targets.runsChanged();
        } else {
          targets.reloadRunsSoon();
        }
        this.noteState(id, message.state);
        // a last frame may have raced the status: load the run's curves once more;
        // the count of batches still pending comes with the runs list
        if (this.stopped.has(id)) {
          this.reloadStoppedSoon(id);
          targets.reloadRunsSoon();
        }
        return;
      }
      case 'run':
        targets.reloadRunsSoon();
        return;
      case 'subscribed':
        targets.subscribed();
        return;
      case 'alert':
        if (message.alert && typeof message.alert.id === 'string') targets.alert(message.alert);
        return;
      case 'gap':
        // the bridge skipped points of this run: ask again for what the charts show
        targets.refreshCurves(runKey(message));
        targets.detail.gap(message);
        return;
      case 'texts':
        if (Array.isArray(message.texts)) targets.detail.texts(message);
        return;
      case 'histogram':
        if (typeof message.key === 'string') targets.detail.histogram(message);
        return;
    }
  }

  private noteState(runId: string, state: RunState): void {
    if (STOPPED.has(state)) this.stopped.add(runId);
    else this.stopped.delete(runId);
  }

  private reloadStoppedSoon(runId: string): void {
    const pending = this.stoppedReload.get(runId);
    if (pending !== undefined) clearTimeout(pending);
    this.stoppedReload.set(
      runId,
      setTimeout(() => {
        this.stoppedReload.delete(runId);
        this.targets.refreshCurves(runId);
      }, TIMING.finishedRefreshMs),
    );
  }
}
