import { configValueText } from '../core/groups';
import type { ApiRun } from '../types/api';

export { configValueText };

export interface RunFilter {
  /** Words that must all appear (any case) in the run's project, name, tags, group, host, state or config. */
  search: string;
  tag: string;
  group: string;
  configKey: string;
  /** Compared with configValueText(value); empty = any run that has the key. */
  configValue: string;
  /** Only runs with firing alerts. */
  alerting?: boolean;
}

function haystack(run: ApiRun): string {
  const parts = [run.project, run.run, run.state, run.group ?? '', run.host ?? '', run.git_commit ?? '', ...(run.tags ?? [])];
  for (const [k, v] of Object.entries(run.config ?? {})) parts.push(`${k}=${configValueText(v)}`);
  return parts.join('\n').toLowerCase();
}

export function matchesRun(run: ApiRun, filter: RunFilter): boolean {
  if (filter.alerting && !(run.alerts_firing ?? 0)) return false;
  if (filter.tag && !(run.tags ?? []).includes(filter.tag)) return false;
  if (filter.group && (run.group ?? '') !== filter.group) return false;
  if (filter.configKey) {
    const config = run.config ?? {};
    if (!Object.prototype.hasOwnProperty.call(config, filter.configKey)) return false;
    if (filter.configValue && configValueText(config[filter.configKey]) !== filter.configValue) return false;
  }
  const words = filter.search.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length) {
    const text = haystack(run);
    if (!words.every((w) => text.includes(w))) return false;
  }
  return true;
}

/** Newest first (by start time, then by last update), ties by project and run name. */
export function sortRunsNewestFirst(runs: readonly ApiRun[]): ApiRun[] {
  const t = (r: ApiRun) => r.started_ms ?? r.updated_ms ?? -Infinity;
  return [...runs].sort(
    (a, b) => t(b) - t(a) || a.project.localeCompare(b.project) || a.run.localeCompare(b.run),
  );
}

export function filterRuns(runs: readonly ApiRun[], filter: RunFilter): ApiRun[] {
  return sortRunsNewestFirst(runs.filter((r) => matchesRun(r, filter)));
}

export function newestRun(runs: readonly ApiRun[]): ApiRun | null {
  return sortRunsNewestFirst(runs)[0] ?? null;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** The choices of the filter drop-downs. */
export function filterChoices(runs: readonly ApiRun[]): { tags: string[]; groups: string[]; configKeys: string[] } {
  const tags = new Set<string>();
  const groups = new Set<string>();
  const keys = new Set<string>();
  for (const r of runs) {
    for (const t of r.tags ?? []) tags.add(t);
    if (r.group) groups.add(r.group);
    for (const k of Object.keys(r.config ?? {})) keys.add(k);
  }
  const sorted = (s: Set<string>) => [...s].sort(collator.compare);
  return { tags: sorted(tags), groups: sorted(groups), configKeys: sorted(keys) };
}

/** The distinct values of one config key among the runs, as configValueText. */
export function configValues(runs: readonly ApiRun[], key: string): string[] {
  const values = new Set<string>();
  for (const r of runs) {
    const config = r.config ?? {};
    if (Object.prototype.hasOwnProperty.call(config, key)) values.add(configValueText(config[key]));
  }
  const list = [...values];
  const numeric = list.every((v) => v.trim() !== '' && Number.isFinite(Number(v)));
  return numeric ? list.sort((a, b) => Number(a) - Number(b)) : list.sort(collator.compare);
}
