import { describe, expect, it } from 'vitest';
import golden from '../../../../tests/golden/series_binary.json';
import { parseApiNumbers } from '../core/numbers';
import { columnsToParsed, decodeSeriesColumns } from './seriesBinary';

/**
 * The golden answer (made by the bridge's encoder, curvestream_bridge.series_binary.encode, and checked
 * byte for byte against it by tests/bridge/test_series_binary_golden.py) for two series:
 * y = NaN, +Inf, -Inf, -0.0 and a subnormal; steps up to 2^53 - 1; neighbours with NaN and -Inf.
 */
const FROM_THE_BRIDGE = golden.body_base64;

function body(base64: string): ArrayBuffer {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  return bytes.buffer;
}

describe('decodeSeriesColumns', () => {
  it('reads the golden answer as the header and columns it was made from, bit for bit', () => {
    const series = decodeSeriesColumns(body(FROM_THE_BRIDGE));
    expect(series.map((s) => s.header)).toEqual(golden.header.series);
    expect(series).toHaveLength(golden.columns.length);
    series.forEach((s, i) => {
      const want = golden.columns[i]!;
      expect(Array.from(s.x)).toEqual(parseApiNumbers(want.x));
      expect(Array.from(s.y)).toEqual(parseApiNumbers(want.y)); // toEqual tells -0 from 0 and matches NaN
      expect(Array.from(s.step)).toEqual(want.step.map((n) => BigInt(n)));
      expect(Array.from(s.timeMs)).toEqual(parseApiNumbers(want.time_ms));
    });
  });

  it('reads every series of a bridge answer as typed arrays over its bytes', () => {
    const buffer = body(FROM_THE_BRIDGE);
    const [a, b] = decodeSeriesColumns(buffer);
    expect(a!.header.run).toBe('lr/0.1 ü');
    expect(a!.y).toBeInstanceOf(Float64Array);
    expect(a!.y.buffer).toBe(buffer); // a view, not a copy
    expect(Array.from(a!.y)).toEqual([NaN, Infinity, -Infinity, -0, 1e-310]);
    expect(Object.is(a!.y[3], -0)).toBe(true);
    expect(Array.from(a!.step)).toEqual([0n, 1n, 2n, 3n, 9007199254740991n]);
    expect(Array.from(a!.timeMs)).toEqual([1700000000000, 1700000000000.5, 2, 3, 4]);
    expect(Array.from(b!.x)).toEqual([2, 3]);
    expect(Array.from(b!.y)).toEqual([0.1, 0.2]);
    expect(Array.from(b!.timeMs)).toEqual([1700000000002.25, 1700000000003]);
  });

  it('gives the core the same parsed series as the JSON answer would', () => {
    const [a, b] = decodeSeriesColumns(body(FROM_THE_BRIDGE)).map(columnsToParsed);
    expect(a).toEqual({
      xMode: 'step',
      start: null,
      end: null,
      raw: true,
      total: 5,
      points: {
        x: [0, 1, 2, 3, 9007199254740991],
        y: [NaN, Infinity, -Infinity, -0, 1e-310],
        step: [0, 1, 2, 3, 9007199254740991],
        timeMs: [1700000000000, 1700000000000.5, 2, 3, 4],
      },
      before: null,
      after: null,
    });
    expect(b!.raw).toBe(false);
    expect(b!.total).toBe(9);
    expect(b!.before).toEqual({ x: 1, y: NaN, step: 1, timeMs: 1700000000001 });
    expect(b!.after).toEqual({ x: 4, y: -Infinity, step: 4, timeMs: 1700000000004.5 });
  });

  it('turns int64 steps into the numbers Number(bigint) gives, past 2^32, below zero and past 2^53', () => {
    const steps = [0n, 1n, 4294967295n, 4294967296n, 4294967297n, -1n, -4294967296n, -4294967297n,
      9007199254740991n, 9007199254740993n, 2n ** 62n + 12345n, -(2n ** 63n), 2n ** 63n - 1n];
    const n = steps.length;
    const header = new TextEncoder().encode(JSON.stringify({ key: 'k', x: 'step', points: { n, offset: 0 } }));
    const pad = (8 - ((8 + header.length) % 8)) % 8;
    const bytes = new Uint8Array(8 + header.length + pad + 32 * n);
    bytes.set(new TextEncoder().encode('CSS1'));
    new DataView(bytes.buffer).setUint32(4, header.length, true);
    bytes.set(header, 8);
    const columns = new DataView(bytes.buffer, 8 + header.length + pad);
    steps.forEach((step, i) => columns.setBigInt64(16 * n + 8 * i, step, true));
    const [parsed] = decodeSeriesColumns(bytes.buffer).map(columnsToParsed);
    expect(parsed!.points.step).toEqual(steps.map((s) => Number(s)));
  });

  it('refuses a body that is not a series answer, or ends inside its columns', () => {
    expect(() => decodeSeriesColumns(new TextEncoder().encode('{"series": []}').buffer as ArrayBuffer)).toThrow(/not a curvestream/);
    const whole = new Uint8Array(body(FROM_THE_BRIDGE));
    expect(() => decodeSeriesColumns(whole.slice(0, whole.length - 8).buffer)).toThrow(/ends inside/);
  });
});
