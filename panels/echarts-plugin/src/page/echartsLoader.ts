/**
 * ECharts, most of the page's script (~600 KB), is a script of its own
 * (assets/echarts.js), asked for when the first chart comes near the viewport,
 * right after that chart's query: app.js is small, so the page builds itself
 * and sends its first queries before the browser compiles and runs ECharts (a
 * preload made the browser compile it first, and the first query left ~60 ms
 * later); a chart is made once both are there.
 */
type ECharts = typeof import('./echarts');

let loading: Promise<ECharts> | null = null;

/** ECharts' module, loaded once. */
export function loadECharts(): Promise<ECharts> {
  return (loading ??= import('./echarts'));
}
