import { describe, expect, it } from 'vitest';
import { sampleRun } from '../testing/apiSamples';
import { runNameParts } from './runName';

describe('runNameParts', () => {
  it('shows the name with the suffix that tells runs of one name apart', () => {
    const parts = runNameParts(sampleRun({ run: 'lr=0.1-k3x9q2', name: 'lr=0.1' }));
    expect(parts).toMatchObject({ name: 'lr=0.1', suffix: 'k3x9q2' });
    expect(runNameParts(sampleRun({ run: 'lr=0.1-a0b1c2', name: 'lr=0.1' })).suffix).toBe('a0b1c2');
  });

  it('shows an identity that is not the name and a suffix whole, and nothing for a run named by its identity', () => {
    expect(runNameParts(sampleRun({ run: 'my-id', name: 'x' }))).toMatchObject({ name: 'x', suffix: 'my-id' });
    expect(runNameParts(sampleRun({ run: 'exp1' }))).toMatchObject({ name: 'exp1', suffix: '' });
    expect(runNameParts(sampleRun({ run: 'exp1', name: '' })).suffix).toBe('');
  });

  it('says when a run was resumed and whether its steps went back', () => {
    const once = [{ started_ms: 0, after_step: 9, back_to_step: null }];
    const plain = runNameParts(sampleRun({ run: 'a-000000', name: 'a', resumes: once }));
    expect(plain.stepsBack).toBe(false);
    expect(plain.resumed).toBe('resumed 1970-01-01T00:00:00.000Z after step 9');
    const back = runNameParts(sampleRun({ run: 'a-000000', name: 'a', resumes: [
      { started_ms: 0, after_step: 9, back_to_step: null },
      { started_ms: 1000, after_step: 20, back_to_step: 5 },
    ] }));
    expect(back.stepsBack).toBe(true);
    expect(back.resumed.split('\n')[1]).toBe('resumed 1970-01-01T00:00:01.000Z after step 20; steps went back to 5');
    const unknown = [{ started_ms: 0, after_step: null, back_to_step: null }];
    const offline = runNameParts(sampleRun({ run: 'a', resumes: unknown }));
    expect(offline.resumed).toBe('resumed 1970-01-01T00:00:00.000Z offline, where it had ended unknown');
    expect(runNameParts(sampleRun({ run: 'a' })).resumed).toBe('');
  });
});
