import type { CurveChartOption } from '../../core/options';
import { countInRange } from '../../core/series';
import type { XMode } from '../../types/api';
import type { ChartModel, ChartSettings, ChartTheme } from '../../types/chart';
import { GRID_BOTTOM_WITHOUT_SLIDER } from '../constants/defaults';
import type { HeldCurve } from '../types/curves';
import type { PanelOptions, XAxisSource } from '../types/options';

/** The core's x mode for the panel's x axis. */
export function xModeOf(xAxis: XAxisSource): XMode {
  return xAxis === 'field' ? 'step' : 'time';
}

export function chartSettings(options: PanelOptions, theme: ChartTheme): ChartSettings {
  return {
    xMode: xModeOf(options.xAxis),
    logY: options.logY,
    ignoreOutliers: options.ignoreOutliers,
    smoothing: options.smoothing,
    smoothingKind: options.smoothingKind,
    showEnvelope: options.showEnvelope,
    theme,
  };
}

export function chartModel(
  curves: readonly HeldCurve[],
  options: PanelOptions,
  theme: ChartTheme,
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
    })),
    settings: chartSettings(options, theme),
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

/**
 * The core's option adapted to the panel: the zoom slider hidden when the
 * option says so (the wheel still zooms). Works on a full option and on a
 * data-only update.
 */
export function adaptOption(option: CurveChartOption, options: PanelOptions): CurveChartOption {
  const out: CurveChartOption = { ...option };
  if (!options.zoomSlider && Array.isArray(option.dataZoom)) {
    out.dataZoom = option.dataZoom.map((z) => (z.type === 'slider' ? { ...z, show: false } : z));
    if (option.grid && !Array.isArray(option.grid)) out.grid = { ...option.grid, bottom: GRID_BOTTOM_WITHOUT_SLIDER };
  }
  return out;
}
