/**
 * GETs a page starts before its main script has run: `early.ts`, a few KB
 * loaded beside app.js, asks for the runs list and the metrics of the runs the
 * URL names while the browser is still fetching and evaluating app.js (~700 KB,
 * most of it ECharts); the app's first request for the same URL and headers
 * takes that answer instead of asking again. Kept on `globalThis`, as the two
 * scripts are separate bundles. Once the app has asked for anything, an early
 * script that runs late starts nothing: the app asks for itself.
 */
const REGISTRY = '__curvestreamEarlyGets';

interface Registry {
  started: Map<string, Promise<Response>>;
  /** The app made its first request: too late to start anything early. */
  appAsked: boolean;
}

function registry(): Registry {
  const scope = globalThis as unknown as Record<string, Registry | undefined>;
  return (scope[REGISTRY] ??= { started: new Map(), appAsked: false });
}

function keyOf(url: URL, headers: Readonly<Record<string, string>>): string {
  const names = Object.keys(headers).sort();
  return JSON.stringify([url.href, ...names.map((n) => [n.toLowerCase(), headers[n]])]);
}

/** Start a GET now, for a later `takeEarly` of the same URL and headers (once per key). */
export function startEarly(url: URL, headers: Readonly<Record<string, string>>, get: typeof fetch = fetch): void {
  const key = keyOf(url, headers);
  const { started, appAsked } = registry();
  if (appAsked || started.has(key)) return;
  const answer = get(url, { headers: { ...headers } });
  // a failure belongs to whoever takes the answer; one nobody takes is no unhandled rejection
  answer.catch(() => undefined);
  started.set(key, answer);
}

/** The answer of a GET started early with this URL and headers, once; undefined if none was (the app's requests). */
export function takeEarly(url: URL, headers: Readonly<Record<string, string>>): Promise<Response> | undefined {
  const key = keyOf(url, headers);
  const reg = registry();
  reg.appAsked = true;
  const { started } = reg;
  const answer = started.get(key);
  started.delete(key);
  return answer;
}
