/** The chart filter's text as a search of metric keys on the bridge (`GET /api/v1/keys`). */
import type { KeysQuery } from './api';

/**
 * `/…/` is a regular expression, text with `*`, `?` or `[` a glob pattern
 * (the whole key, `*` crossing `/`), anything else words that must all appear
 * in the key (any case).
 */
export function keySearch(text: string): Pick<KeysQuery, 'q' | 'match'> {
  const trimmed = text.trim();
  if (trimmed.length >= 2 && trimmed.startsWith('/') && trimmed.endsWith('/')) return { q: trimmed.slice(1, -1), match: 'regex' };
  if (/[*?[]/.test(trimmed)) return { q: trimmed, match: 'glob' };
  return { q: trimmed, match: 'words' };
}

/** A key's section: the part before its first `/` ("" without one), as the bridge makes them. */
export function sectionOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}
