// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';
import type { ApiRun, ApiRunsTable } from '../types/api';
import type { RunFilter } from './runFilter';
import { RunsPanel } from './runsPanel';
import type { RunsTableQuery } from './runsQuery';

const NO_FILTER: RunFilter = { search: '', tag: '', group: '', configKey: '', configValue: '', alerting: false };

function run(name: string, points: number, state: ApiRun['state'] = 'running'): ApiRun {
  return {
    project: 'p', run: name, name, resumes: [], state, reason: '', started_ms: 1e12, updated_ms: 1e12, tags: [],
    group: '', config: {}, host: '', git_commit: '', git_dirty: null, points, meta: {} as ApiRun['meta'],
    pending_batches: null, alerts_firing: 0, clock_offset_s: null, clock_correction_s: null, summary: {}, notes: '',
  };
}

function table(runs: ApiRun[]): ApiRunsTable {
  return {
    total: runs.length, matched: runs.length, offset: 0, limit: 100, sort: '-started', runs, selected: [], selected_hidden: 0,
    count_by: 'group', counts: [], facets: { tags: [], groups: [], config_keys: [] },
  };
}

/** A panel over a bridge whose next answers are queued by the test; what it was told. */
function panelOver(answers: ApiRunsTable[]) {
  const told = { pages: 0, numbers: 0 };
  const panel = new RunsPanel(NO_FILTER, '-started', [], {
    onSelectionChange: () => undefined,
    onFilterChange: () => undefined,
    loadPage: async (_query: RunsTableQuery) => structuredClone(answers.shift()!),
    onPage: () => told.pages++,
    onNumbers: () => told.numbers++,
    onError: (error) => {
      throw error;
    },
  });
  return { panel, told };
}

function cells(panel: RunsPanel): Record<string, string> {
  const rows = [...panel.root.querySelectorAll<HTMLElement>('[data-testid="run-row"]')];
  return Object.fromEntries(rows.map((r) => [r.dataset.run!, r.querySelector<HTMLElement>('[data-testid="run-points"]')!.dataset.points!]));
}

describe('RunsPanel.refreshNumbers', () => {
  it('moves the point counts of the rows shown in place, without drawing the rows again', async () => {
    const { panel, told } = panelOver([table([run('a', 10), run('b', 5, 'finished')]), table([run('a', 1500), run('b', 5, 'finished')])]);
    await panel.reload();
    expect(panel.showsRunning()).toBe(true);
    const rowBefore = panel.root.querySelector('[data-testid="run-row"]');
    await panel.refreshNumbers();
    expect(cells(panel)).toEqual({ a: '1500', b: '5' });
    expect(panel.root.querySelector('[data-testid="run-row"]')).toBe(rowBefore);
    expect(panel.root.querySelector('[data-testid="run-points"]')!.textContent).toBe('1.5k');
    expect(told).toEqual({ pages: 1, numbers: 1 });
  });

  it('draws the page anew when its rows changed (a sort by points moved them)', async () => {
    const { panel, told } = panelOver([table([run('a', 10), run('b', 20)]), table([run('b', 30), run('a', 10)])]);
    await panel.reload();
    await panel.refreshNumbers();
    const order = [...panel.root.querySelectorAll<HTMLElement>('[data-testid="run-row"]')].map((r) => r.dataset.run);
    expect(order).toEqual(['b', 'a']);
    expect(told).toEqual({ pages: 2, numbers: 0 });
  });

  it('shows no running run when every row stopped', async () => {
    const { panel } = panelOver([table([run('a', 10, 'finished'), run('b', 20, 'lost')])]);
    expect(panel.showsRunning()).toBe(false);
    await panel.reload();
    expect(panel.showsRunning()).toBe(false);
  });
});
