/**
 * Stable `data-testid` of the panel, for browser tests. The container also carries:
 * - `data-instance`: the ECharts instance id (stays the same while the panel lives);
 * - `data-points`: JSON object, series name -> points drawn inside the visible x range;
 * - `data-update`: how the last data changed the chart (`structure`, `append`, `data`, `unchanged`);
 * - `data-x-axis`: `time` or `field`; `data-smoothing`: `on`/`off`; `data-envelope`: `true`/`false`;
 * - `data-window`: the zoomed x range as JSON `[from, to]`, or `null`;
 * - `data-notes`: remarks shown under the chart (hidden values, frames that were left out).
 */
export const TEST_IDS = {
  panel: 'curvestream-panel',
  chart: 'curvestream-panel-chart',
  notes: 'curvestream-panel-notes',
} as const;
