import type { ApiText } from '../types/api';

/** A text line's level by name: Python logging levels, `text` for plain text (level 0). */
export type TextLevel = 'text' | 'debug' | 'info' | 'warning' | 'error' | 'critical';

/** The levels a filter offers, with the lowest Python level each one shows. */
export const TEXT_LEVELS: readonly { name: TextLevel; min: number }[] = [
  { name: 'debug', min: 1 },
  { name: 'info', min: 11 },
  { name: 'warning', min: 21 },
  { name: 'error', min: 31 },
  { name: 'critical', min: 41 },
];

/** 0 -> text, 1..10 debug, ..20 info, ..30 warning, ..40 error, above critical (custom levels fall in between). */
export function textLevel(level: number): TextLevel {
  if (!(level > 0)) return 'text';
  let name: TextLevel = 'debug';
  for (const l of TEXT_LEVELS) if (level >= l.min) name = l.name;
  return name;
}

export interface TextFilter {
  /** Words that must all appear (any case) in the line or its key. */
  search: string;
  /** Lowest Python level shown; 0 = everything, plain text included. */
  minLevel: number;
  /** Only this key; '' = every key. */
  key: string;
}

/** The lines a filter lets through, in their order (oldest first, so the newest is at the bottom). */
export function filterTexts(rows: readonly ApiText[], filter: TextFilter): ApiText[] {
  const words = filter.search.toLowerCase().split(/\s+/).filter(Boolean);
  return rows.filter((row) => {
    if (filter.key && row.key !== filter.key) return false;
    if (filter.minLevel > 0 && !(row.level >= filter.minLevel)) return false;
    if (words.length) {
      const text = `${row.key}\n${row.text}`.toLowerCase();
      if (!words.every((w) => text.includes(w))) return false;
    }
    return true;
  });
}

/** What `mergeTexts` did, so a view can add rows instead of drawing them all again. */
export interface TextMerge {
  /** Every line, oldest first, at most `limit`. */
  rows: ApiText[];
  /** The lines that were new, oldest first. */
  added: ApiText[];
  /** The new lines are all newer than the lines before: they went to the end, nothing moved. */
  atEnd: boolean;
  /** How many of the oldest lines fell off to keep `limit`. */
  dropped: number;
}

function sameLine(a: ApiText, b: ApiText): boolean {
  return a.time_ms === b.time_ms && a.key === b.key && a.step === b.step && a.level === b.level && a.text === b.text;
}

/** Whether `line` is in `rows` (oldest first): only the lines of its time can be it. */
function holds(rows: readonly ApiText[], line: ApiText): boolean {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]!.time_ms < line.time_ms) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < rows.length && rows[i]!.time_ms === line.time_ms; i++) if (sameLine(rows[i]!, line)) return true;
  return false;
}

/**
 * `rows` with the `incoming` lines (pushed live, or fetched again) added:
 * oldest first by time, each line once, the newest `limit` kept. Lines the
 * rows already hold (the same time, key, step, level and text) are not added.
 */
export function mergeTexts(rows: readonly ApiText[], incoming: readonly ApiText[], limit: number): TextMerge {
  const added: ApiText[] = [];
  const seen = new Set<string>();
  for (const line of incoming) {
    const id = JSON.stringify([line.time_ms, line.key, line.step, line.level, line.text]);
    if (seen.has(id) || holds(rows, line)) continue;
    seen.add(id);
    added.push(line);
  }
  if (added.length === 0) return { rows: [...rows], added, atEnd: true, dropped: 0 };
  added.sort((a, b) => a.time_ms - b.time_ms);
  const last = rows[rows.length - 1];
  const atEnd = last === undefined || added[0]!.time_ms >= last.time_ms;
  // sort is stable: lines of the same time keep the order they came in
  const merged = atEnd ? [...rows, ...added] : [...rows, ...added].sort((a, b) => a.time_ms - b.time_ms);
  const dropped = Math.max(0, merged.length - Math.max(0, limit));
  return { rows: dropped ? merged.slice(dropped) : merged, added, atEnd, dropped };
}

/** The time of the newest line (rows oldest first), or null for none: where a fetch of newer lines starts. */
export function newestTextMs(rows: readonly ApiText[]): number | null {
  const last = rows[rows.length - 1];
  return last === undefined ? null : last.time_ms;
}
