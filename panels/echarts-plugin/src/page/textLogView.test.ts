// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';
import { DETAIL } from '../constants/defaults';
import type { RunRef } from '../core/runs';
import type { ApiText } from '../types/api';
import type { TextsQuery } from './api';
import { TextLogView } from './textLogView';

const RUN: RunRef = { project: 'p', run: 'r1' };
const OTHER: RunRef = { project: 'p', run: 'r2' };

function line(i: number, text = `line ${i}`, level = 20): ApiText {
  return { key: 'log', step: i, time_ms: 1e12 + i * 1000.5, level, text };
}

/** A bridge holding `lines` per run, answering like GET …/texts, and the queries it was asked. */
function fakeBridge(lines: Map<string, ApiText[]>) {
  const asked: { run: string; query: TextsQuery }[] = [];
  const api = {
    async texts(ref: RunRef, query: TextsQuery): Promise<ApiText[]> {
      asked.push({ run: ref.run, query });
      const all = lines.get(ref.run) ?? [];
      if (query.afterMs === null || query.afterMs === undefined) return all.slice(-query.limit);
      return all.filter((l) => l.time_ms > query.afterMs!).slice(0, query.limit);
    },
  };
  return { api, asked };
}

function shown(view: TextLogView): string[] {
  return [...view.root.querySelectorAll('[data-testid="text-row"] .text-body')].map((e) => e.textContent ?? '');
}

describe('TextLogView', () => {
  it('loads a run’s newest lines, then adds pushed lines without asking the bridge', async () => {
    const { api, asked } = fakeBridge(new Map([['r1', [line(1), line(2)]]]));
    const view = new TextLogView(api);
    await view.show(RUN);
    expect(shown(view)).toEqual(['line 1', 'line 2']);
    expect(asked).toEqual([{ run: 'r1', query: { limit: DETAIL.textLimit, afterMs: null } }]);

    view.append(RUN, [line(3)]);
    view.append(OTHER, [line(9)]); // another run's lines are not this log's
    expect(shown(view)).toEqual(['line 1', 'line 2', 'line 3']);
    expect(asked).toHaveLength(1);
    const list = view.root.querySelector('[data-testid="text-log"]') as HTMLElement;
    expect(list.dataset.count).toBe('3');
    expect((list.lastElementChild as HTMLElement).dataset.timeMs).toBe(String(line(3).time_ms));
  });

  it('asks only for the lines newer than the newest shown when it loads the same run again', async () => {
    const lines = new Map([['r1', [line(1), line(2)]]]);
    const { api, asked } = fakeBridge(lines);
    const view = new TextLogView(api);
    await view.show(RUN);
    view.append(RUN, [line(3)]);
    lines.set('r1', [line(1), line(2), line(3), line(4)]);
    await view.show(RUN);
    expect(asked[1]).toEqual({ run: 'r1', query: { limit: DETAIL.textLimit, afterMs: line(3).time_ms } });
    expect(shown(view)).toEqual(['line 1', 'line 2', 'line 3', 'line 4']);
  });

  it('keeps a line once when it is pushed while a load brings it too', async () => {
    const { api } = fakeBridge(new Map([['r1', [line(1), line(2)]]]));
    const view = new TextLogView(api);
    const loading = view.show(RUN);
    view.append(RUN, [line(2)]);
    await loading;
    expect(shown(view)).toEqual(['line 1', 'line 2']);
  });

  it('loads everything again after a gap, and a new run from scratch', async () => {
    const lines = new Map([
      ['r1', [line(1)]],
      ['r2', [line(7, 'other run')]],
    ]);
    const { api, asked } = fakeBridge(lines);
    const view = new TextLogView(api);
    await view.show(RUN);
    view.append(RUN, [line(5)]);
    lines.set('r1', [line(1), line(2), line(3), line(4), line(5)]); // 2..4 were dropped by the socket
    await view.reload(RUN);
    expect(asked[1]!.query.afterMs).toBeNull();
    expect(shown(view)).toEqual(['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);

    await view.show(OTHER);
    expect(asked[2]).toEqual({ run: 'r2', query: { limit: DETAIL.textLimit, afterMs: null } });
    expect(shown(view)).toEqual(['other run']);
  });

  it('applies the filter to pushed lines', async () => {
    const { api } = fakeBridge(new Map([['r1', [line(1, 'warn', 30)]]]));
    const view = new TextLogView(api);
    await view.show(RUN);
    const level = view.root.querySelector('[data-testid="text-level"]') as HTMLSelectElement;
    level.value = '21';
    level.dispatchEvent(new Event('change'));
    view.append(RUN, [line(2, 'info', 20), line(3, 'error', 40)]);
    expect(shown(view)).toEqual(['warn', 'error']);
    expect(view.root.querySelector('[data-testid="text-count"]')!.textContent).toBe('2 of 3 lines');
  });

  it('keeps the newest lines within the limit as lines are pushed', async () => {
    const many = Array.from({ length: DETAIL.textLimit }, (_, i) => line(i));
    const { api } = fakeBridge(new Map([['r1', many]]));
    const view = new TextLogView(api);
    await view.show(RUN);
    view.append(RUN, [line(DETAIL.textLimit), line(DETAIL.textLimit + 1)]);
    const texts = shown(view);
    expect(texts).toHaveLength(DETAIL.textLimit);
    expect(texts[0]).toBe('line 2');
    expect(texts[texts.length - 1]).toBe(`line ${DETAIL.textLimit + 1}`);
  }, 30_000); // thousands of DOM lines in happy-dom: slow on a busy machine, not a figure
});
