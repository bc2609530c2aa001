import type { Labels } from '@grafana/data';
import { CURVESTREAM_TAGS } from '../constants/defaults';

/**
 * A tag value as the bridge wrote it, decoded: it percent-encodes `%`, `\`
 * and control characters (bridge `store/lineproto.py`), so `%25` is `%`.
 * Sequences that are not `%XX` stay as they are.
 */
export function decodeStoredTag(value: string): string {
  return value.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** The labels with curvestream's own tags (project, run, metric) decoded. */
export function decodeCurvestreamLabels(labels: Labels | undefined): Labels {
  const out: Labels = {};
  for (const [key, value] of Object.entries(labels ?? {})) {
    out[key] = CURVESTREAM_TAGS.includes(key) ? decodeStoredTag(value) : value;
  }
  return out;
}

/**
 * A key for "the same series": the labels without `_field`, sorted. Flux
 * without a pivot gives `step` and `value` as two frames whose labels differ
 * only in `_field`; InfluxQL gives them as two frames with equal tags.
 */
export function seriesKey(labels: Labels | undefined, refId = ''): string {
  const entries = Object.entries(labels ?? {})
    .filter(([key]) => key !== '_field')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([refId, entries]);
}

export interface NameParts {
  labels: Labels;
  fieldName: string;
  /** Grafana's display name of the field (`getFieldDisplayName`). */
  displayName: string;
}

/**
 * A series name from a template: `${label}` is a label's value, `${__field.name}`
 * the field name, `${__field.displayName}` Grafana's display name. Unknown
 * labels become empty. Dashboard variables are replaced before this.
 */
export function formatSeriesName(template: string, parts: NameParts): string {
  const text = template.replace(/\$\{([^}]+)\}/g, (_, raw: string) => {
    const key = raw.trim();
    if (key === '__field.name') return parts.fieldName;
    if (key === '__field.displayName') return parts.displayName;
    const label = key.startsWith('__field.labels.') ? key.slice('__field.labels.'.length) : key;
    return parts.labels[label] ?? '';
  });
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * The name of a series when no template is set: "run metric" from
 * curvestream's labels, else Grafana's display name.
 */
export function automaticSeriesName(parts: NameParts): string {
  const { run, metric } = parts.labels;
  if (run !== undefined) return metric === undefined ? run : `${run} ${metric}`;
  return parts.displayName || parts.fieldName;
}

/** Labels as Grafana's scoped variables: given to `replaceVariables`, they win over dashboard variables. */
export function labelsAsScopedVars(labels: Labels): Record<string, { text: string; value: string }> {
  const out: Record<string, { text: string; value: string }> = {};
  for (const [key, value] of Object.entries(labels)) out[key] = { text: value, value };
  return out;
}
