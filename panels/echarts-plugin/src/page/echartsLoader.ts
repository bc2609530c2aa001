/**
 * ECharts, most of the page's script (~600 KB), is a chunk of its own
 * (assets/echarts.js, preloaded by index.html): app.js is small, so the page
 * builds itself and sends its first queries while the browser still compiles
 * and runs ECharts; a chart is made once both are there.
 */
type ECharts = typeof import('./echarts');

let loading: Promise<ECharts> | null = null;

/** ECharts' module, loaded once. */
export function loadECharts(): Promise<ECharts> {
  return (loading ??= import('./echarts'));
}
