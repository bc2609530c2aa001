import type { SmoothingKind } from '../../types/chart';

/** Where the x axis comes from: the frames' time field, or a numeric field such as `step`. */
export type XAxisSource = 'time' | 'field';

/** The panel's options, as saved in the dashboard JSON. */
export interface PanelOptions {
  xAxis: XAxisSource;
  /** The numeric field used as x when `xAxis` is `field` (and for the tooltip's step otherwise). */
  stepField: string;
  /**
   * Series name template: `${label}` is replaced by a label's value (e.g.
   * `${run} ${metric}`), `${__field.name}` by the field name. Empty: the run
   * and metric labels when present, otherwise Grafana's display name.
   */
  seriesName: string;
  /** 0 = off, up to 0.999. */
  smoothing: number;
  smoothingKind: SmoothingKind;
  /** Draw a min/max band while smoothing, so spikes stay visible. */
  showEnvelope: boolean;
  logY: boolean;
  /** Scale the y axis to the 1st..99th percentile instead of min..max. */
  ignoreOutliers: boolean;
  /** Show the zoom slider under the plot (zooming with the mouse wheel works without it). */
  zoomSlider: boolean;
  /** With a time x axis, a zoom sets the dashboard's time range. */
  zoomSetsTimeRange: boolean;
}
