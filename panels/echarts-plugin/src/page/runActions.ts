import { TEST_IDS } from '../constants/testIds';
import type { RunRef } from '../core/runs';
import type { ApiRun } from '../types/api';
import { ApiError, type ApiClient } from './api';
import { el } from './dom';

export interface RunActionsHost {
  /** The run's name changed: read the runs again. */
  onRenamed(ref: RunRef): void;
  /** The run is gone: take it out of the selection and read the runs again. */
  onDeleted(ref: RunRef): void;
  onError(error: unknown): void;
}

/** The bridge's write token, asked for once when a write is refused, kept for this page only. */
let writeToken: string | null = null;

/** True once done; false when the user gave no token. */
async function withWriteToken(call: (token: string | null) => Promise<unknown>): Promise<boolean> {
  try {
    await call(writeToken);
  } catch (error) {
    if (!(error instanceof ApiError) || (error.status !== 401 && error.status !== 403)) throw error;
    const given = window.prompt('This bridge wants its write token for that:');
    if (!given) return false;
    writeToken = given;
    await call(given);
  }
  return true;
}

/**
 * A runs table row's menu: rename the run (the name shown; its identity and
 * curves stay) or delete it, for good, once the user confirmed.
 */
export function runMenu(run: ApiRun, api: ApiClient, host: RunActionsHost): HTMLElement {
  const ref = { project: run.project, run: run.run };
  const rename = el('button', { type: 'button', 'data-testid': TEST_IDS.runRename, text: 'Rename…' });
  const remove = el('button', { type: 'button', class: 'danger', 'data-testid': TEST_IDS.runDelete, text: 'Delete…' });
  const menu = el(
    'details',
    { class: 'run-menu', 'data-testid': TEST_IDS.runMenu },
    el('summary', { title: 'Rename or delete this run', 'aria-label': `Actions for ${run.project}/${run.run}`, text: '⋯' }),
    el('div', { class: 'run-menu-items' }, rename, remove),
  );
  menu.addEventListener('click', (event) => event.stopPropagation()); // not a click on the row (selection)
  rename.addEventListener('click', () => {
    menu.open = false;
    const name = window.prompt(`New name for ${run.project}/${run.run} (its identity stays):`, run.name);
    if (name === null || !name.trim() || name === run.name) return;
    withWriteToken((token) => api.editRun(ref, { name: name.trim() }, token)).then(
      (done) => done && host.onRenamed(ref),
      (error) => host.onError(error),
    );
  });
  remove.addEventListener('click', () => {
    menu.open = false;
    const what = `${run.project}/${run.run}${run.name !== run.run ? ` (${run.name})` : ''}`;
    if (!window.confirm(`Delete ${what} and every point, alert and record of it? This cannot be undone.`)) return;
    withWriteToken((token) => api.deleteRun(ref, token)).then(
      (done) => done && host.onDeleted(ref),
      (error) => host.onError(error),
    );
  });
  return menu;
}
