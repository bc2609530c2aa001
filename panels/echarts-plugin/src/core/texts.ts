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
