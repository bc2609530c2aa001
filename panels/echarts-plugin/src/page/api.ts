import type { RunRef } from '../core/runs';
import type { ParsedSeries } from '../core/series';
import type {
  ApiAlert,
  ApiAlertsResponse,
  ApiGroups,
  ApiKeys,
  ApiRunsTable,
  ApiHistogram,
  ApiHistogramsResponse,
  ApiMetric,
  ApiMetricsManyResponse,
  ApiMetricsResponse,
  ApiRun,
  ApiRunEdit,
  ApiRunsResponse,
  ApiSeriesResponse,
  ApiText,
  ApiTextsResponse,
  XMode,
} from '../types/api';
import { startEarly, takeEarly } from './earlyFetch';
import { runsTableParams, type RunsTableQuery } from './runsQuery';
import { columnsToParsed, decodeSeriesColumns, SERIES_MEDIA_TYPE } from './seriesBinary';
import { encodeRunParam as runParam } from './urlState';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface TextsQuery {
  /** One key's lines; null or absent: every key's. */
  key?: string | null;
  limit: number;
  /** Only lines newer than this wall time (ms since the epoch). */
  afterMs?: number | null;
}

/** A search of metric keys (`GET /api/v1/keys`): words, a glob pattern or a regular expression. */
export interface KeysQuery {
  q: string;
  match: 'words' | 'glob' | 'regex';
  offset: number;
  limit: number;
  /** Read the runs' keys again (the bridge keeps them a few seconds): a key was seen that the page does not know. */
  fresh?: boolean;
}

/** Groups of runs as one curve each (`GET /api/v1/groups/series`). */
export interface GroupsQuery extends SeriesQuery {
  groupBy: string;
}

export interface SeriesQuery {
  x: XMode;
  width: number;
  start?: number;
  end?: number;
}

/** A promise that rejects as `fetch` does (an AbortError) once the signal aborts. */
function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new DOMException('The request was aborted', 'AbortError'));
  return new Promise<T>((resolve, reject) => {
    signal.addEventListener('abort', () => reject(new DOMException('The request was aborted', 'AbortError')), { once: true });
    promise.then(resolve, reject);
  });
}

/**
 * The bridge's HTTP API, resolved against the page's own URL so the page
 * works under any base path. Names go into paths with encodeURIComponent;
 * metric keys only into query strings.
 */
export class ApiClient {
  constructor(
    private readonly base: string,
    private readonly token: () => string | null,
  ) {}

  url(path: string, params: Record<string, string | number | undefined> = {}): URL {
    const url = new URL(path, this.base);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  /** ws:// or wss:// URL of the live socket, same origin as the page. */
  liveUrl(): string {
    const url = this.url('api/v1/live');
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    // browsers cannot set headers on a WebSocket: the bridge also reads ?token=
    const token = this.token();
    if (token) url.searchParams.set('token', token);
    return url.toString();
  }

  private async getJson<T>(url: URL, signal?: AbortSignal): Promise<T> {
    const response = await this.get(url, 'application/json', signal);
    return (await response.json()) as T;
  }

  private headers(accept: string): Record<string, string> {
    const headers: Record<string, string> = { Accept: accept };
    const token = this.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  private async get(url: URL, accept: string, signal?: AbortSignal): Promise<Response> {
    const headers = this.headers(accept);
    // a GET started early (earlyFetch.ts) with the same URL and headers: its answer, not a second request
    // (aborting then only drops the answer: the early request was not made with this signal)
    const early = takeEarly(url, headers);
    const response = await (early ? abortable(early, signal) : fetch(url, { headers, ...(signal ? { signal } : {}) }));
    if (!response.ok) {
      let detail = response.statusText;
      try {
        const body = (await response.json()) as { detail?: unknown; error?: unknown };
        detail = String(body.detail ?? body.error ?? detail);
      } catch {
        // not JSON: keep the status text
      }
      throw new ApiError(response.status, `${response.status} ${detail}`);
    }
    return response;
  }

  /**
   * A write to a run (write token): `token` when given, else the page's token. Answers
   * the JSON body; an error status throws an ApiError with it.
   */
  private async send(method: 'PATCH' | 'DELETE', ref: RunRef, body: object | null, token: string | null): Promise<unknown> {
    const headers = this.headers('application/json');
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body) headers['Content-Type'] = 'application/json';
    const path = `api/v1/runs/${encodeURIComponent(ref.project)}/${encodeURIComponent(ref.run)}`;
    const response = await fetch(this.url(path), { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
    const answer = (await response.json().catch(() => ({}))) as { detail?: unknown };
    if (!response.ok) throw new ApiError(response.status, `${response.status} ${String(answer.detail ?? response.statusText)}`);
    return answer;
  }

  /** Set a run's name, tags or notes (its identity stays). */
  editRun(ref: RunRef, edit: ApiRunEdit, token: string | null = null): Promise<unknown> {
    return this.send('PATCH', ref, edit, token);
  }

  /** Delete a run and everything of it, for good. */
  deleteRun(ref: RunRef, token: string | null = null): Promise<unknown> {
    return this.send('DELETE', ref, null, token);
  }

  /** Every alert's latest change (firing or resolved). */
  async alerts(signal?: AbortSignal): Promise<ApiAlert[]> {
    const body = await this.getJson<ApiAlertsResponse>(this.url('api/v1/alerts'), signal);
    return Array.isArray(body.alerts) ? body.alerts : [];
  }

  /** Ask for the runs list now; the next `runs()` takes the answer. */
  startRunsEarly(): void {
    startEarly(this.url('api/v1/runs'), this.headers('application/json'));
  }

  /** Ask for these runs' metrics now; the next `metricsMany` of the same runs takes the answer. */
  startMetricsManyEarly(refs: readonly RunRef[]): void {
    if (refs.length > 0) startEarly(this.metricsManyUrl(refs), this.headers('application/json'));
  }

  private runsTableUrl(query: RunsTableQuery): URL {
    const url = this.url('api/v1/runs/table');
    for (const [k, v] of runsTableParams(query)) url.searchParams.append(k, v);
    return url;
  }

  /** Ask for a page of the runs table now; the next `runsTable` of the same query takes the answer. */
  startRunsTableEarly(query: RunsTableQuery): void {
    startEarly(this.runsTableUrl(query), this.headers('application/json'));
  }

  /** One page of the runs that match a filter, filtered, sorted and paged by the bridge. */
  runsTable(query: RunsTableQuery, signal?: AbortSignal): Promise<ApiRunsTable> {
    return this.getJson<ApiRunsTable>(this.runsTableUrl(query), signal);
  }

  private keysUrl(refs: readonly RunRef[], query: KeysQuery): URL {
    const url = this.url('api/v1/keys', {
      q: query.q,
      match: query.match,
      offset: query.offset,
      limit: query.limit,
      fresh: query.fresh ? 'true' : undefined,
    });
    for (const ref of refs) url.searchParams.append('run', runParam(ref));
    return url;
  }

  /** Ask for these runs' first keys now; the next `keys` of the same runs and query takes the answer. */
  startKeysEarly(refs: readonly RunRef[], query: KeysQuery): void {
    if (refs.length > 0) startEarly(this.keysUrl(refs, query), this.headers('application/json'));
  }

  /** The scalar keys of these runs in sections, searched, one range of them. */
  keys(refs: readonly RunRef[], query: KeysQuery, signal?: AbortSignal): Promise<ApiKeys> {
    return this.getJson<ApiKeys>(this.keysUrl(refs, query), signal);
  }

  /** One key of these runs, grouped, as a mean line and a band per group, computed by the bridge. */
  groupSeries(refs: readonly RunRef[], key: string, query: GroupsQuery, signal?: AbortSignal): Promise<ApiGroups> {
    const url = this.url('api/v1/groups/series', {
      key,
      group_by: query.groupBy,
      x: query.x,
      start: query.start,
      end: query.end,
      width: query.width,
    });
    for (const ref of refs) url.searchParams.append('run', runParam(ref));
    return this.getJson<ApiGroups>(url, signal);
  }

  async runs(signal?: AbortSignal): Promise<ApiRun[]> {
    const body = await this.getJson<ApiRunsResponse>(this.url('api/v1/runs'), signal);
    return Array.isArray(body.runs) ? body.runs : [];
  }

  private runPath(ref: RunRef, tail: string): string {
    return `api/v1/runs/${encodeURIComponent(ref.project)}/${encodeURIComponent(ref.run)}/${tail}`;
  }

  async metrics(ref: RunRef, signal?: AbortSignal): Promise<ApiMetric[]> {
    const body = await this.getJson<ApiMetricsResponse>(this.url(this.runPath(ref, 'metrics')), signal);
    return Array.isArray(body.metrics) ? body.metrics : [];
  }

  /** Several runs' metrics in one request, one list per run in order (a run the store does not know: none). */
  private metricsManyUrl(refs: readonly RunRef[]): URL {
    const url = this.url('api/v1/metrics');
    for (const ref of refs) url.searchParams.append('run', runParam(ref));
    return url;
  }

  async metricsMany(refs: readonly RunRef[], signal?: AbortSignal): Promise<ApiMetric[][]> {
    if (refs.length === 0) return [];
    const body = await this.getJson<ApiMetricsManyResponse>(this.metricsManyUrl(refs), signal);
    const runs = Array.isArray(body.runs) ? body.runs : [];
    if (runs.length !== refs.length) throw new Error(`${refs.length} runs asked, ${runs.length} answered`);
    return runs.map((r) => (Array.isArray(r.metrics) ? r.metrics : []));
  }

  series(ref: RunRef, key: string, query: SeriesQuery, signal?: AbortSignal): Promise<ApiSeriesResponse> {
    const url = this.url(this.runPath(ref, 'series'), {
      key,
      x: query.x,
      start: query.start,
      end: query.end,
      width: query.width,
    });
    return this.getJson<ApiSeriesResponse>(url, signal);
  }

  /**
   * One key of several runs in one request, read by the bridge together, as binary
   * columns (no number goes through text): one parsed series per run, in order.
   */
  async seriesMany(refs: readonly RunRef[], key: string, query: SeriesQuery, signal?: AbortSignal): Promise<ParsedSeries[]> {
    const url = this.url('api/v1/series', { key, x: query.x, start: query.start, end: query.end, width: query.width });
    for (const ref of refs) url.searchParams.append('run', runParam(ref));
    const response = await this.get(url, SERIES_MEDIA_TYPE, signal);
    const series = decodeSeriesColumns(await response.arrayBuffer());
    if (series.length !== refs.length) throw new Error(`${refs.length} runs asked, ${series.length} series answered`);
    return series.map(columnsToParsed);
  }

  /** At most `limit` histograms of a key, evenly spaced over the run (first and last kept). */
  async histograms(ref: RunRef, key: string, limit: number, signal?: AbortSignal): Promise<ApiHistogram[]> {
    const url = this.url(this.runPath(ref, 'histograms'), { key, limit });
    const body = await this.getJson<ApiHistogramsResponse>(url, signal);
    return Array.isArray(body.histograms) ? body.histograms : [];
  }

  /**
   * Text lines of a run (of one key, or all), oldest first: the newest
   * `limit`, or with `afterMs` only the lines newer than that (at most `limit`).
   */
  async texts(ref: RunRef, query: TextsQuery, signal?: AbortSignal): Promise<ApiText[]> {
    const url = this.url(this.runPath(ref, 'texts'), {
      key: query.key ?? undefined,
      limit: query.limit,
      after_ms: query.afterMs ?? undefined,
    });
    const body = await this.getJson<ApiTextsResponse>(url, signal);
    return Array.isArray(body.texts) ? body.texts : [];
  }
}
