import type { LineSeriesOption } from 'echarts/charts';
import type { AlertKind, ApiAlert, XMode } from '../types/api';
import type { ChartMarker, SeriesData } from '../types/chart';
import { formatStep } from './format';
import { runKey, type RunRef } from './runs';
import { lowerBound } from './series';

export const ALERT_LABELS: Record<AlertKind, string> = {
  nonfinite: 'NaN/Inf',
  spike: 'spike',
  plateau: 'plateau',
  threshold: 'threshold',
  stalled: 'stalled',
  lost: 'lost',
  code: 'alert',
};
export const ALERT_COLORS: Record<AlertKind, string> = {
  nonfinite: '#d1242f',
  spike: '#e8590c',
  plateau: '#8250df',
  threshold: '#bf8700',
  stalled: '#57606a',
  lost: '#24292f',
  code: '#0969da',
};
/** Kinds whose step has no value to pin: the value is not finite, or the alert is about the whole run. */
const NO_PIN: ReadonlySet<AlertKind> = new Set<AlertKind>(['nonfinite', 'stalled', 'lost', 'code']);

/** Index of the first point whose step is >= step, on a curve whose steps rise with x. */
function stepIndex(data: SeriesData, step: number): number {
  return lowerBound(data.step, step);
}

/** The x of a step on this curve: the step itself, or (time axes) between the points around it. */
function xOfStep(data: SeriesData, step: number, xMode: XMode): number | null {
  if (xMode === 'step') return step;
  const n = data.step.length;
  if (n === 0) return null;
  const i = stepIndex(data, step);
  if (i < n && data.step[i] === step) return data.x[i]!;
  if (i === 0 || i >= n) return null; // outside what the curve holds: nowhere to put it
  const s0 = data.step[i - 1]!;
  const s1 = data.step[i]!;
  const t = (step - s0) / (s1 - s0);
  return data.x[i - 1]! + (data.x[i]! - data.x[i - 1]!) * t;
}

/** The curve's own finite value at exactly this step, else null. */
function valueAtStep(data: SeriesData, step: number): number | null {
  const i = stepIndex(data, step);
  if (i >= data.step.length || data.step[i] !== step) return null;
  const y = data.y[i]!;
  return Number.isFinite(y) ? y : null;
}

/**
 * The markers of one curve (one run's metric key) from alert records: a
 * vertical line at the step where the alert fired with a short label, a pin at
 * the curve's value when the curve holds that step with a finite value (a
 * non-finite alert has no value to pin), and the alert's window of steps as a
 * shaded band when it spans more than one step. Alerts about the whole run
 * (key "") mark every curve of the run; alerts of other runs or keys are
 * ignored; the same kind at the same step is marked once. On time axes a step
 * the curve does not span cannot be placed and is left out (a window end that
 * cannot be placed leaves the band out).
 */
/**
 * The alerts a chart of `key` over these runs marks (those `alertMarkers` can
 * take), as text: equal texts draw the same markers, so a new alerts list
 * that changes nothing here needs no redraw.
 */
export function chartAlertsText(alerts: readonly ApiAlert[], refs: readonly RunRef[], key: string): string {
  const runs = new Set(refs.map(runKey));
  return JSON.stringify(
    alerts.filter((a) => runs.has(runKey(a)) && marksChartOf(a, key)),
  );
}

/** An alert of this key (or of its whole run) of a kind the chart marks. */
function marksChartOf(alert: ApiAlert, key: string): boolean {
  return (alert.key === key || alert.key === '') && alert.kind in ALERT_LABELS;
}

export function alertMarkers(
  alerts: readonly ApiAlert[],
  ref: RunRef,
  key: string,
  data: SeriesData,
  xMode: XMode,
): ChartMarker[] {
  const seen = new Set<string>();
  const out: ChartMarker[] = [];
  for (const alert of alerts) {
    if (alert.project !== ref.project || alert.run !== ref.run || !marksChartOf(alert, key)) continue;
    const step = alert.fired_step ?? alert.step;
    const id = `${alert.kind === 'code' ? alert.id : alert.kind}@${step}`;
    if (seen.has(id)) continue;
    const x = xOfStep(data, step, xMode);
    if (x === null) continue;
    seen.add(id);
    const label = alert.kind === 'code' ? alert.rule : ALERT_LABELS[alert.kind]; // a script's alert: its title
    const marker: ChartMarker = {
      x,
      y: NO_PIN.has(alert.kind) ? null : valueAtStep(data, step),
      kind: alert.kind,
      label,
      detail: `${label} at step ${formatStep(step)}${alert.message ? `: ${alert.message}` : ''}`,
    };
    const w = alert.window;
    if (w && w.to_step > w.from_step) {
      const x0 = xOfStep(data, w.from_step, xMode);
      const x1 = xOfStep(data, w.to_step, xMode);
      if (x0 !== null && x1 !== null) marker.window = [x0, x1];
    }
    out.push(marker);
  }
  return out.sort((a, b) => a.x - b.x);
}

/**
 * ECharts mark lines, pins and window bands for markers, to merge into a line
 * series. On a log axis a pin at a value ≤ 0 is left out (its line stays).
 */
export function markerOptions(
  markers: readonly ChartMarker[],
  logY = false,
): Pick<LineSeriesOption, 'markLine' | 'markPoint' | 'markArea'> {
  return {
    markLine: {
      silent: false,
      symbol: ['none', 'none'],
      animation: false,
      data: markers.map((m) => ({
        xAxis: m.x,
        name: m.detail,
        lineStyle: { color: ALERT_COLORS[m.kind], type: 'dashed', width: 1 },
        label: { show: true, formatter: m.label, position: 'insideEndTop', color: ALERT_COLORS[m.kind], fontSize: 10 },
      })),
    },
    markPoint: {
      animation: false,
      data: markers
        .filter((m) => m.y !== null && (!logY || m.y > 0))
        .map((m) => ({
          coord: [m.x, m.y!],
          name: m.detail,
          value: m.label,
          symbol: 'pin',
          symbolSize: 26,
          itemStyle: { color: ALERT_COLORS[m.kind] },
          label: { show: false },
        })),
    },
    markArea: {
      silent: true,
      animation: false,
      label: { show: false },
      data: markers
        .filter((m) => m.window)
        .map((m) => [
          { xAxis: m.window![0], name: m.detail, itemStyle: { color: ALERT_COLORS[m.kind], opacity: 0.15 } },
          { xAxis: m.window![1] },
        ]),
    },
  };
}
