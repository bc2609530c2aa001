/** The read token the page sends as `Authorization: Bearer …`, kept in localStorage. */
export const TOKEN_KEY = 'curvestream.readToken';

/** localStorage, or null where the browser refuses it (private modes, sandboxed frames). */
export function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

export function readToken(): string | null {
  return storage()?.getItem(TOKEN_KEY) ?? null;
}
