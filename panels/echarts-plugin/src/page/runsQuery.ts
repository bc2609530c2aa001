/** What the page asks the bridge for the runs table (`GET /api/v1/runs/table`), and how a header sorts. */
import type { RunRef } from '../core/runs';
import type { RunFilter } from './runFilter';
import { encodeRunParam } from './urlState';

/** Rows per page of the runs table. */
export const RUNS_PAGE_SIZE = 100;

export interface RunsTableQuery {
  filter: RunFilter;
  /** A column name (`started`, `run`, …), `-` first for descending. */
  sort: string;
  offset: number;
  limit: number;
  /** Runs whose rows the answer carries wherever they are (`selected`): the page's selection. */
  selected: readonly RunRef[];
}

/** The query string parameters of a query, in a fixed order (an early request and the app's must match). */
export function runsTableParams(query: RunsTableQuery): [string, string][] {
  const { filter } = query;
  const params: [string, string][] = [];
  if (filter.search.trim()) params.push(['q', filter.search]);
  if (filter.tag) params.push(['tag', filter.tag]);
  if (filter.group) params.push(['group', filter.group]);
  if (filter.configKey) {
    params.push(['config_key', filter.configKey]);
    if (filter.configValue) params.push(['config_value', filter.configValue]);
  }
  if (filter.alerting) params.push(['alerting', 'true']);
  params.push(['sort', query.sort], ['offset', String(query.offset)], ['limit', String(query.limit)]);
  for (const ref of query.selected) params.push(['run', encodeRunParam(ref)]);
  return params;
}

/** The first page a view shows. */
export function firstPageQuery(filter: RunFilter, sort: string, selected: readonly RunRef[]): RunsTableQuery {
  return { filter, sort, offset: 0, limit: RUNS_PAGE_SIZE, selected };
}

/** Columns the table sorts by, and the direction a first click picks (newest, most points first). */
export const SORTABLE: Readonly<Record<string, 'asc' | 'desc'>> = {
  project: 'asc',
  run: 'asc',
  state: 'asc',
  started: 'desc',
  group: 'asc',
  points: 'desc',
};

/** A click on a column's header: that column in its first direction, or the other direction when it sorts already. */
export function nextSort(current: string, column: string): string {
  const field = current.replace(/^-/, '');
  if (field === column) return current.startsWith('-') ? column : `-${column}`;
  return SORTABLE[column] === 'desc' ? `-${column}` : column;
}

/** "1–100 of 10,000" for a page of `shown` rows. */
export function rangeText(offset: number, shown: number, matched: number): string {
  if (matched === 0) return '0 of 0';
  const fmt = (n: number) => n.toLocaleString('en-US');
  return `${fmt(offset + 1)}–${fmt(offset + shown)} of ${fmt(matched)}`;
}
