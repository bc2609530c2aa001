import type { ApiMetric } from '../types/api';

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'variant' });

/** Only scalar metrics become line charts (texts and histograms have no y). */
export function isScalarMetric(metric: ApiMetric): boolean {
  return metric.kind === undefined || metric.kind === null || metric.kind === 'scalar';
}

/** The union of the scalar metric keys of several runs, in natural order ("step2" before "step10"). */
export function unionMetricKeys(lists: readonly (readonly ApiMetric[])[]): string[] {
  const keys = new Set<string>();
  for (const list of lists) for (const m of list) if (isScalarMetric(m)) keys.add(m.key);
  return [...keys].sort(collator.compare);
}

/** Keys whose text holds every word of the filter (any case). */
export function filterMetricKeys(keys: readonly string[], filter: string): string[] {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [...keys];
  return keys.filter((k) => {
    const text = k.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

/** The time of a run's first point, from its metrics: the origin of relative x. */
export function firstPointMs(metrics: readonly ApiMetric[]): number | null {
  let first: number | null = null;
  for (const m of metrics) {
    const t = m.first_ms;
    if (typeof t === 'number' && Number.isFinite(t) && (first === null || t < first)) first = t;
  }
  return first;
}
