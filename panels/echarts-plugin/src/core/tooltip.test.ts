import { describe, expect, it } from 'vitest';
import { formatTooltipHtml, formatX, nearestIndex, rowPlace, sortRowsByValue, tooltipRows, type TooltipSeries } from './tooltip';

function curve(id: string, xs: number[], ys: number[], smoothed?: number[]): TooltipSeries {
  return {
    id,
    name: `run ${id}`,
    color: '#123456',
    data: { x: xs, y: ys, step: xs, timeMs: xs.map((x) => Date.UTC(2025, 0, 1) + x * 1000) },
    smoothed: smoothed ?? null,
  };
}

describe('nearestIndex', () => {
  it('finds the closest x on either side', () => {
    const xs = [0, 10, 20];
    expect(nearestIndex(xs, -5)).toBe(0);
    expect(nearestIndex(xs, 4)).toBe(0);
    expect(nearestIndex(xs, 6)).toBe(1);
    expect(nearestIndex(xs, 99)).toBe(2);
    expect(nearestIndex([], 1)).toBe(-1);
  });
});

describe('tooltipRows', () => {
  it('gives every curve its nearest point, even with different x', () => {
    const rows = tooltipRows([curve('a', [0, 10, 20], [1, 2, 3]), curve('b', [5, 15], [7, 8])], 11);
    expect(rows.map((r) => [r.id, r.x, r.value])).toEqual([
      ['a', 10, 2],
      ['b', 15, 8],
    ]);
  });

  it('leaves out a curve that ended before the hovered x', () => {
    const rows = tooltipRows([curve('a', [0, 10], [1, 2]), curve('b', [0, 100], [1, 2])], 50);
    expect(rows.map((r) => r.id)).toEqual(['b']);
  });

  it('carries the smoothed value', () => {
    const rows = tooltipRows([curve('a', [0, 10], [1, 2], [1, 1.5])], 10);
    expect(rows[0]!.smoothed).toBe(1.5);
  });
});

describe('sortRowsByValue', () => {
  it('puts +Inf first, NaN last', () => {
    const rows = tooltipRows(
      [
        curve('nan', [0], [NaN]),
        curve('low', [0], [-3]),
        curve('inf', [0], [Infinity]),
        curve('ninf', [0], [-Infinity]),
        curve('high', [0], [4]),
      ],
      0,
    );
    expect(sortRowsByValue(rows, false).map((r) => r.id)).toEqual(['inf', 'high', 'low', 'ninf', 'nan']);
  });

  it('sorts by the smoothed value when smoothing', () => {
    const rows = tooltipRows([curve('a', [0], [10], [1]), curve('b', [0], [5], [2])], 0);
    expect(sortRowsByValue(rows, true).map((r) => r.id)).toEqual(['b', 'a']);
    expect(sortRowsByValue(rows, false).map((r) => r.id)).toEqual(['a', 'b']);
  });
});

describe('formatTooltipHtml', () => {
  it('shows x, chip, name, value, step and time, sorted by value', () => {
    const rows = tooltipRows([curve('a', [0, 10], [1, 2]), curve('b', [0, 10], [5, NaN])], 0);
    const html = formatTooltipHtml(0, rows, { xMode: 'step', smoothing: false, timeZone: 'utc' });
    expect(html).toContain('step 0');
    expect(html).toContain('background:#123456');
    expect(html.indexOf('run b')).toBeLessThan(html.indexOf('run a'));
    expect(html).toContain('2025-01-01 00:00:00');
  });

  it('names non-finite values', () => {
    const rows = tooltipRows([curve('a', [0], [Infinity])], 0);
    expect(formatTooltipHtml(0, rows, { xMode: 'step', smoothing: false })).toContain('+Inf');
  });

  it('escapes run names', () => {
    const c = curve('x', [0], [1]);
    c.name = '<script>alert(1)</script>';
    const html = formatTooltipHtml(0, tooltipRows([c], 0), { xMode: 'step', smoothing: false });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;');
  });

  it('shows raw beside the smoothed value', () => {
    const rows = tooltipRows([curve('a', [0], [10], [4])], 0);
    const html = formatTooltipHtml(0, rows, { xMode: 'relative', smoothing: true });
    expect(html).toMatch(/>4<span class="cs-tt-raw">raw 10</);
  });

  it('leaves out a step the point does not have', () => {
    const c = curve('a', [0, 10], [1, 2]);
    c.data.step = [NaN, NaN];
    const html = formatTooltipHtml(10, tooltipRows([c], 10), { xMode: 'step', smoothing: false, timeZone: 'utc' });
    expect(html).not.toContain('NaN');
    expect(html).toContain('<td class="cs-tt-where">2025-01-01 00:00:10</td>');
  });

  it('formats x per axis mode', () => {
    expect(formatX(1500, 'step')).toBe('step 1,500');
    expect(formatX(90, 'relative')).toBe('1m 30s');
  });
});

describe('rowPlace', () => {
  it('names the step and the time, each only when known', () => {
    const timeMs = Date.UTC(2025, 0, 1, 8, 30);
    expect(rowPlace({ step: 1200, timeMs }, 'utc')).toBe('step 1,200 · 2025-01-01 08:30:00');
    expect(rowPlace({ step: NaN, timeMs }, 'utc')).toBe('2025-01-01 08:30:00');
    expect(rowPlace({ step: Infinity, timeMs: NaN }, 'utc')).toBe('');
    expect(rowPlace({ step: 3, timeMs: NaN }, 'utc')).toBe('step 3');
  });
});
