/**
 * Whole API shapes for tests: what the bridge could send, with the fields a test is about given.
 * Every field of the generated types is filled, so a test never builds an answer the bridge cannot give.
 */
import type { ApiAlert, ApiHistogram, ApiMetric, ApiRun } from '../types/api';

export function sampleRun(fields: Partial<ApiRun> = {}): ApiRun {
  const run = fields.run ?? 'r';
  return {
    project: 'p', run, name: run, resumes: [], state: 'finished', reason: '', started_ms: null, updated_ms: null, tags: [], group: '',
    config: {}, host: '', git_commit: '', git_dirty: null, points: 0, meta: {}, pending_batches: null,
    alerts_firing: 0, clock_offset_s: null, clock_correction_s: null, summary: {}, notes: '', ...fields,
  };
}

export function sampleMetric(fields: Partial<ApiMetric> & { key: string }): ApiMetric {
  return { kind: 'scalar', count: 1, first_step: 0, last_step: 0, last_value: 0, first_ms: 0, last_ms: 0, ...fields };
}

/** A firing alert; unless given, it fired at its step and its window is that step alone. */
export function sampleAlert(fields: Partial<ApiAlert> = {}): ApiAlert {
  const step = fields.step ?? 0;
  return {
    id: 'a1', rule: 'rule', kind: 'spike', severity: 'warning', project: 'p', run: 'r', key: 'loss', state: 'firing',
    step, time_ms: 0, value: null, message: '', window: { from_step: step, to_step: step }, fired_step: step,
    started_ms: 0, ended_ms: null, version: 1, time_ns: 0, ...fields,
  };
}

export function sampleHistogram(fields: Partial<ApiHistogram> & Pick<ApiHistogram, 'edges' | 'counts'>): ApiHistogram {
  return { step: 0, time_ms: 0, min: null, max: null, sum: null, count: null, ...fields };
}
