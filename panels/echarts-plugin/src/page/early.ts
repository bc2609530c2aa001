/**
 * The page's first script (assets/early.js, a few KB): it asks for the runs
 * list and the metrics of the runs the URL names before app.js has loaded;
 * the app then takes these answers (earlyFetch.ts).
 */
import { ApiClient } from './api';
import { readToken } from './token';
import { parseViewState } from './urlState';

const api = new ApiClient(document.baseURI, readToken);
api.startRunsEarly();
api.startMetricsManyEarly(parseViewState(window.location.search || window.location.hash).runs);
