import type { ApiNumber } from '../types/api';

/**
 * A JSON value from the API as a number. Non-finite values arrive as the
 * strings "NaN", "Infinity" and "-Infinity"; they become the matching
 * JavaScript numbers so they can be kept and shown, never dropped.
 * Anything unreadable (null, garbage) becomes NaN rather than vanishing.
 */
export function parseApiNumber(value: unknown): number {
  if (typeof value === 'number') {
    return value;
  }
  if (typeof value === 'string') {
    switch (value) {
      case 'NaN':
        return NaN;
      case 'Infinity':
      case '+Infinity':
        return Infinity;
      case '-Infinity':
        return -Infinity;
      default: {
        const trimmed = value.trim();
        return trimmed === '' ? NaN : Number(trimmed);
      }
    }
  }
  return NaN;
}

export function parseApiNumbers(values: readonly unknown[]): number[] {
  const out = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    out[i] = parseApiNumber(values[i]);
  }
  return out;
}

/** The inverse of parseApiNumber: what the API would send for `value`. */
export function toApiNumber(value: number): ApiNumber {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  return value;
}

export type ValueKind = 'finite' | 'nan' | 'posinf' | 'neginf';

export function valueKind(value: number): ValueKind {
  if (Number.isFinite(value)) return 'finite';
  if (Number.isNaN(value)) return 'nan';
  return value > 0 ? 'posinf' : 'neginf';
}
