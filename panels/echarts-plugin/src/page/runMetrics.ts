import { runKey, type RunRef } from '../core/runs';
import type { ApiMetric } from '../types/api';

/** Several runs' metric lists in one request, one list per run in order. */
export type FetchMetrics = (refs: readonly RunRef[]) => Promise<ApiMetric[][]>;

/**
 * The metric keys of the runs the page shows, asked for together: one request
 * for all the runs not known yet, and a run already being asked for is waited
 * for, not asked for again. A failed request leaves its runs unknown (the next
 * load asks again) and goes to `onError`.
 */
export class RunMetrics {
  private readonly known = new Map<string, ApiMetric[]>();
  private readonly asking = new Map<string, Promise<void>>();

  constructor(
    private readonly fetchMetrics: FetchMetrics,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The run's metrics, or undefined before they have been loaded. */
  get(ref: RunRef): ApiMetric[] | undefined {
    return this.known.get(runKey(ref));
  }

  /** Load the metrics of these runs not known yet; `again`: of all of them, anew. */
  async load(refs: readonly RunRef[], again = false): Promise<void> {
    const waits: Promise<void>[] = [];
    const missing = new Map<string, RunRef>();
    for (const ref of refs) {
      const id = runKey(ref);
      if (!again && this.known.has(id)) continue;
      const running = again ? undefined : this.asking.get(id);
      if (running) waits.push(running);
      else missing.set(id, ref);
    }
    if (missing.size > 0) {
      const asked = this.ask([...missing.values()]).finally(() => {
        for (const id of missing.keys()) if (this.asking.get(id) === asked) this.asking.delete(id);
      });
      for (const id of missing.keys()) this.asking.set(id, asked);
      waits.push(asked);
    }
    await Promise.all(waits);
  }

  private async ask(refs: RunRef[]): Promise<void> {
    try {
      const lists = await this.fetchMetrics(refs);
      refs.forEach((ref, i) => this.known.set(runKey(ref), lists[i] ?? []));
    } catch (error) {
      this.onError(error);
    }
  }
}
