/**
 * The bridge's binary series answer (`Accept: application/vnd.curvestream.series`,
 * docs/http-api.md): a small JSON header with the JSON answer's fields, then
 * little-endian columns read in place as typed arrays. No number is parsed
 * from text; NaN and ±Infinity are IEEE values in `y`.
 *
 *     magic "CSS1" · header length (uint32 LE) · header JSON · zero padding to 8
 *     per series: x float64[n] · y float64[n] · step int64[n] · time_ms float64[n]
 */
import { parseApiNumber } from '../core/numbers';
import type { ParsedSeries, SeriesPoint } from '../core/series';
import type { ApiPoint, ApiSeriesColumnsHeader, ApiSeriesManyColumnsHeader } from '../types/api';

export const SERIES_MEDIA_TYPE = 'application/vnd.curvestream.series';

/** One series of a binary answer: its JSON fields and its columns, views over the answer's bytes. */
export interface SeriesColumns {
  header: ApiSeriesColumnsHeader;
  x: Float64Array;
  y: Float64Array;
  step: BigInt64Array;
  timeMs: Float64Array;
}

const MAGIC = 'CSS1';
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The series of a binary answer, in the answer's order (one for the single-series endpoint). */
export function decodeSeriesColumns(body: ArrayBuffer): SeriesColumns[] {
  const bytes = new Uint8Array(body);
  if (bytes.length < 8 || String.fromCharCode(...bytes.subarray(0, 4)) !== MAGIC) {
    throw new Error('not a curvestream series answer');
  }
  const length = new DataView(body).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length))) as
    | ApiSeriesColumnsHeader
    | ApiSeriesManyColumnsHeader;
  const start = 8 + length + ((8 - ((8 + length) % 8)) % 8);
  const headers = 'series' in header ? header.series : [header];
  return headers.map((h) => {
    const { n, offset } = h.points;
    const at = start + offset;
    if (at + 32 * n > body.byteLength) throw new Error(`series ${h.key}: the answer ends inside its columns`);
    return {
      header: h,
      x: float64s(body, at, n),
      y: float64s(body, at + 8 * n, n),
      step: int64s(body, at + 16 * n, n),
      timeMs: float64s(body, at + 24 * n, n),
    };
  });
}

function float64s(body: ArrayBuffer, at: number, n: number): Float64Array {
  if (LITTLE_ENDIAN) return new Float64Array(body, at, n);
  const view = new DataView(body, at, 8 * n);
  return Float64Array.from({ length: n }, (_, i) => view.getFloat64(8 * i, true));
}

function int64s(body: ArrayBuffer, at: number, n: number): BigInt64Array {
  if (LITTLE_ENDIAN) return new BigInt64Array(body, at, n);
  const view = new DataView(body, at, 8 * n);
  return BigInt64Array.from({ length: n }, (_, i) => view.getBigInt64(8 * i, true));
}

function parsePoint(point: ApiPoint | null | undefined): SeriesPoint | null {
  if (!point) return null;
  return { x: point.x, y: parseApiNumber(point.y), step: point.step, timeMs: point.time_ms };
}

/** A column copied into a plain array (an indexed loop: several times faster than `Array.from` here). */
function numbers(column: Float64Array): number[] {
  const n = column.length;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = column[i]!;
  return out;
}

/**
 * Int64 values as numbers, rounded as `Number(bigint)` rounds them (exact up to 2^53): read as
 * two 32-bit halves, high × 2^32 + low, one rounding. A `BigInt` per value cost several times more.
 */
function int64Numbers(column: BigInt64Array): number[] {
  const n = column.length;
  const out = new Array<number>(n);
  if (!LITTLE_ENDIAN) {
    for (let i = 0; i < n; i++) out[i] = Number(column[i]!);
    return out;
  }
  const halves = new Int32Array(column.buffer, column.byteOffset, 2 * n);
  for (let i = 0; i < n; i++) out[i] = halves[2 * i + 1]! * 4294967296 + (halves[2 * i]! >>> 0);
  return out;
}

/** A decoded series as the core takes it (its arrays copied once into plain arrays). */
export function columnsToParsed(series: SeriesColumns): ParsedSeries {
  const { header: h } = series;
  const n = series.x.length;
  return {
    xMode: h.x,
    start: h.start ?? null,
    end: h.end ?? null,
    raw: Boolean(h.raw),
    total: h.total ?? n,
    points: { x: numbers(series.x), y: numbers(series.y), step: int64Numbers(series.step), timeMs: numbers(series.timeMs) },
    before: parsePoint(h.before),
    after: parsePoint(h.after),
  };
}
