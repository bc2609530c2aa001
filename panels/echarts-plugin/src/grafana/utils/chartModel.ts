import { countInRange } from '../../core/series';
import type { XMode } from '../../types/api';
import type { ChartModel, ChartSettings, ChartTheme, TimeZone } from '../../types/chart';
import type { HeldCurve } from '../types/curves';
import type { PanelOptions, XAxisSource } from '../types/options';

/** The core's x mode for the panel's x axis. */
export function xModeOf(xAxis: XAxisSource): XMode {
  return xAxis === 'field' ? 'step' : 'time';
}

/** The core's settings from the panel's options, Grafana's theme and the dashboard's time zone. */
export function chartSettings(options: PanelOptions, theme: ChartTheme, timeZone: TimeZone): ChartSettings {
  return {
    xMode: xModeOf(options.xAxis),
    logY: options.logY,
    ignoreOutliers: options.ignoreOutliers,
    smoothing: options.smoothing,
    smoothingKind: options.smoothingKind,
    showEnvelope: options.showEnvelope,
    theme,
    timeZone,
    zoomSlider: options.zoomSlider,
  };
}

export function chartModel(
  curves: readonly HeldCurve[],
  options: PanelOptions,
  theme: ChartTheme,
  timeZone: TimeZone,
  widthPx: number,
  xWindow: [number, number] | null,
): ChartModel {
  return {
    series: curves.map((c) => ({
      id: c.id,
      name: c.name,
      color: c.color,
      data: c.data,
      ...(c.dxRef === undefined ? {} : { dxRef: c.dxRef }),
      ...(c.band ? { band: c.band } : {}),
    })),
    settings: chartSettings(options, theme, timeZone),
    widthPx,
    xWindow,
  };
}

/** Points of each series inside the visible x range (all of them when not zoomed), by name. */
export function pointsInView(model: ChartModel): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of model.series) {
    const n = model.xWindow ? countInRange(s.data, model.xWindow[0], model.xWindow[1]) : s.data.x.length;
    out[s.name] = (out[s.name] ?? 0) + n;
  }
  return out;
}
