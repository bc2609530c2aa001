/** Identity of a run: (project, run). Names may hold any character. */
export interface RunRef {
  project: string;
  run: string;
}

/** A unique string for a run, safe to use as a map key or series id. */
export function runKey(ref: RunRef): string {
  return JSON.stringify([ref.project, ref.run]);
}

export function sameRun(a: RunRef, b: RunRef): boolean {
  return a.project === b.project && a.run === b.run;
}

/**
 * Legend labels for a set of runs: the run name alone when that is unique
 * among them, otherwise "project/run".
 */
export function runLabels(refs: readonly RunRef[]): Map<string, string> {
  const counts = new Map<string, number>();
  for (const r of refs) counts.set(r.run, (counts.get(r.run) ?? 0) + 1);
  const labels = new Map<string, string>();
  for (const r of refs) {
    labels.set(runKey(r), (counts.get(r.run) ?? 0) > 1 ? `${r.project}/${r.run}` : r.run);
  }
  return labels;
}
