import type { ApiRun } from '../types/api';

/** How the runs table names a run: the name its trainer gave it, and what tells it
 * apart from other runs of that name (the identity's suffix, or the whole identity
 * when it is not the name and a suffix). */
export interface RunNameParts {
  name: string;
  /** '' when the identity is the name itself. */
  suffix: string;
  /** A resumed run: when, and whether its steps went back (its curve overlaps on a step axis). */
  resumed: string;
  stepsBack: boolean;
}

export function runNameParts(run: ApiRun): RunNameParts {
  const name = run.name || run.run;
  let suffix = '';
  if (run.run !== name) suffix = run.run.startsWith(`${name}-`) ? run.run.slice(name.length + 1) : run.run;
  const resumes = run.resumes;
  const lines = resumes.map((r) => {
    const after = r.after_step === null ? 'offline, where it had ended unknown' : `after step ${r.after_step}`;
    const back = r.back_to_step === null ? '' : `; steps went back to ${r.back_to_step}`;
    return `resumed ${new Date(r.started_ms).toISOString()} ${after}${back}`;
  });
  return { name, suffix, resumed: lines.join('\n'), stepsBack: resumes.some((r) => r.back_to_step !== null) };
}
