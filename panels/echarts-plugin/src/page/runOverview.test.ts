// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';
import type { ApiAlert, ApiKeys, ApiMetric, ApiRun } from '../types/api';
import { keyValueRows, LAST_VALUES_MAX_KEYS, RunOverview, runAlerts, runFacts, sectionFilter } from './runOverview';

function run(extra: Partial<ApiRun> = {}): ApiRun {
  return {
    project: 'p', run: 'base-k3x9q2', name: 'base', resumes: [], state: 'running', reason: '', started_ms: 1_000_000,
    updated_ms: 1_060_000, tags: ['a', 'b'], group: 'sweep', config: { lr: 0.1, layers: [2, 3] }, host: 'gpu-1',
    git_commit: 'abc123', git_dirty: true, points: 1500, meta: {} as ApiRun['meta'], pending_batches: null,
    alerts_firing: 0, clock_offset_s: null, clock_correction_s: null, summary: {}, notes: '', ...extra,
  };
}

function alert(id: string, state: ApiAlert['state'], started_ms: number, runName = 'base-k3x9q2'): ApiAlert {
  return {
    id, rule: 'r', kind: 'plateau', severity: 'warning', project: 'p', run: runName, key: 'loss', state, step: 1,
    time_ms: 0, value: 1, message: '', window: {} as ApiAlert['window'], fired_step: 1, started_ms, ended_ms: null,
    version: 1, time_ns: 0,
  };
}

describe('runFacts', () => {
  it('names the run, its identity, state, host, git and tags; a running run lasts until now', () => {
    const facts = Object.fromEntries(runFacts(run(), 1_120_000).map(([field, , text]) => [field, text]));
    expect(facts.name).toBe('base');
    expect(facts.run).toBe('base-k3x9q2');
    expect(facts.git).toBe('abc123 (dirty)');
    expect(facts.tags).toBe('a, b');
    expect(runFacts(run({ notes: 'lr warm-up' }), 0).find(([f]) => f === 'notes')?.[2]).toBe('lr warm-up');
    expect(facts.duration).toBe('2m 00s');
    expect(facts.points).toBe('1,500 (1.5k)');
  });

  it('tells why a run failed and leaves out what it does not have', () => {
    const facts = new Map(runFacts(run({ state: 'failed', reason: 'OOM', host: '', git_commit: '', tags: [] }), 0).map(([f, , t]) => [f, t]));
    expect(facts.get('state')).toBe('failed: OOM');
    expect(facts.get('duration')).toBe('1m 00s');
    expect(facts.has('host') || facts.has('git') || facts.has('tags')).toBe(false);
  });
});

describe('keyValueRows', () => {
  it('writes values as the filters do, keys in natural order', () => {
    expect(keyValueRows({ layer10: 1, layer2: 'x', opt: { beta: 0.9 } })).toEqual([
      ['layer2', 'x'],
      ['layer10', '1'],
      ['opt', '{"beta":0.9}'],
    ]);
    expect(keyValueRows(null)).toEqual([]);
  });
});

describe('sectionFilter', () => {
  it('is a regular expression of the section’s keys only', () => {
    expect(sectionFilter('layer.1')).toBe('/^layer\\.1\\//');
    expect(new RegExp(sectionFilter('layer.1').slice(1, -1)).test('layer.1/w')).toBe(true);
    expect(new RegExp(sectionFilter('layer.1').slice(1, -1)).test('layer.10/w')).toBe(false);
    expect(new RegExp(sectionFilter('').slice(1, -1)).test('loss')).toBe(true);
    expect(new RegExp(sectionFilter('').slice(1, -1)).test('train/loss')).toBe(false);
  });
});

describe('runAlerts', () => {
  it('keeps the run’s alerts, firing first, then the newest', () => {
    const alerts = [alert('1', 'resolved', 5), alert('2', 'firing', 1), alert('3', 'resolved', 9), alert('4', 'firing', 9, 'other')];
    expect(runAlerts(alerts, { project: 'p', run: 'base-k3x9q2' }).map((a) => a.id)).toEqual(['2', '3', '1']);
  });
});

describe('RunOverview', () => {
  function overview(total: number) {
    const asked: string[] = [];
    const api = {
      async keys(): Promise<ApiKeys> {
        asked.push('keys');
        return { total, matched: total, sections: [{ name: 'train', offset: 0, keys: 1 }, { name: 'val', offset: 1, keys: 1 }], offset: 0, limit: 0, keys: [], runs: [] };
      },
      async metrics(): Promise<ApiMetric[]> {
        asked.push('metrics');
        return [{ key: 'train/loss', kind: 'scalar', count: 10, first_step: 0, last_step: 9, last_value: 0.25, first_ms: 0, last_ms: 0 }];
      },
    };
    const opened: string[] = [];
    const view = new RunOverview(api, { openCharts: (f) => opened.push(f) });
    return { view, asked, opened };
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

  it('shows the config, last values and links to each section’s charts; asks again once the run grew', async () => {
    const { view, asked, opened } = overview(2);
    const r = run();
    view.show({ project: 'p', run: r.run }, r, []);
    await settle();
    const cells = [...view.root.querySelectorAll('[data-testid="run-config"] tr')].map((tr) => tr.textContent);
    expect(cells).toEqual(['layers[2,3]', 'lr0.1']);
    expect(view.root.querySelector('[data-testid="run-last-values"] [data-key="train/loss"] td')!.textContent).toBe('0.25');
    const links = [...view.root.querySelectorAll<HTMLAnchorElement>('[data-testid="run-charts-link"]')];
    expect(links.map((a) => a.dataset.section ?? null)).toEqual([null, 'train', 'val']);
    links[2]!.click();
    expect(opened).toEqual(['/^val\\//']);
    expect(asked).toEqual(['keys', 'metrics']);
    view.update(r, []);
    expect(asked).toHaveLength(2);
    r.points += 10;
    view.update(r, []);
    await settle();
    expect(asked).toEqual(['keys', 'metrics', 'keys', 'metrics']);
  });

  it('leaves the last values out for a run with many keys', async () => {
    const { view, asked } = overview(LAST_VALUES_MAX_KEYS + 1);
    view.show({ project: 'p', run: 'base-k3x9q2' }, run(), []);
    await settle();
    expect(asked).toEqual(['keys']);
    expect(view.root.querySelector('[data-testid="run-last-values"]')).toBeNull();
  });
});
