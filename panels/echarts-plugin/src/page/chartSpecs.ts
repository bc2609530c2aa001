/** Which runs (or groups of runs) each chart of the page draws, in which names and colours. */
import type { RunGroup } from '../core/groups';
import { runKey, type RunRef } from '../core/runs';
import type { ApiMetric } from '../types/api';
import type { GroupSpec } from './chartModel';
import type { CurveSpec } from './curveLoading';
import { firstPointMs, isScalarMetric } from './metricKeys';

const NO_COLOR = '#888';

/** The curves of one key's chart: the selected runs that logged it as a scalar, in selection order. */
export function curveSpecsFor(
  key: string,
  selected: readonly RunRef[],
  metrics: readonly (readonly ApiMetric[])[],
  labels: ReadonlyMap<string, string>,
  colors: ReadonlyMap<string, string>,
): CurveSpec[] {
  const specs: CurveSpec[] = [];
  selected.forEach((ref, i) => {
    const list = metrics[i] ?? [];
    if (!list.some((m) => m.key === key && isScalarMetric(m))) return;
    const id = runKey(ref);
    specs.push({ ref, id, name: labels.get(id) ?? ref.run, color: colors.get(id) ?? NO_COLOR, originMs: firstPointMs(list) });
  });
  return specs;
}

/** The groups of one chart: only the runs that have its key; groups left empty are not drawn. */
export function groupSpecsFor(groups: readonly RunGroup[], specs: readonly CurveSpec[], colors: ReadonlyMap<string, string>): GroupSpec[] {
  const present = new Set(specs.map((s) => s.id));
  return groups.flatMap((g) => {
    const memberIds = g.members.map(runKey).filter((id) => present.has(id));
    if (memberIds.length === 0) return [];
    const runs = memberIds.length === 1 ? '1 run' : `${memberIds.length} runs`;
    return [{ id: g.id, name: `${g.label} (${runs})`, color: colors.get(g.id) ?? NO_COLOR, memberIds }];
  });
}

/** The line above the charts: what to do, or how many of the metrics are shown. */
export function chartsInfoText(selectedRuns: number, allKeys: number, shownKeys: number): string {
  if (selectedRuns === 0) return 'Select runs to plot their metrics.';
  if (allKeys === 0) return 'The selected runs have no metrics yet.';
  return `${shownKeys} of ${allKeys} metrics · ${selectedRuns} run${selectedRuns === 1 ? '' : 's'}`;
}
