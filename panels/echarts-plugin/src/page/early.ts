/**
 * The page's first script (assets/early.js, a few KB): it asks for the first
 * page of the runs table and the first keys of the runs the URL names before
 * app.js has loaded; the app then takes these answers (earlyFetch.ts).
 */
import { ApiClient } from './api';
import { FIRST_KEYS } from './sectionLayout';
import { keySearch } from './keySearch';
import { firstPageQuery } from './runsQuery';
import { readToken } from './token';
import { parseViewState } from './urlState';

const api = new ApiClient(document.baseURI, readToken);
const state = parseViewState(window.location.search || window.location.hash);
const { search, tag, group, configKey, configValue, alerting } = state;
api.startRunsTableEarly(firstPageQuery({ search, tag, group, configKey, configValue, alerting }, state.sort, state.runs));
api.startKeysEarly(state.runs, { ...keySearch(state.metricFilter), offset: 0, limit: FIRST_KEYS });
