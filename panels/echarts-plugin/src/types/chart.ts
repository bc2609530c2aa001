import type { AlertKind, XMode } from './api';

/**
 * One curve as the core handles it: parallel arrays sorted by x.
 * `y` keeps NaN and ±Infinity as JavaScript numbers; they are never dropped.
 */
export interface SeriesData {
  x: number[];
  y: number[];
  step: number[];
  timeMs: number[];
}

export type SmoothingKind = 'ema' | 'time';

/**
 * Where times are shown (x labels, tooltips): the browser's local time, UTC,
 * or an IANA zone name such as `Europe/Berlin` (Grafana's dashboard zone).
 */
export type TimeZone = 'browser' | 'utc' | (string & {});

export interface ChartTheme {
  name: 'light' | 'dark';
  text: string;
  mutedText: string;
  axisLine: string;
  splitLine: string;
  tooltipBackground: string;
  tooltipBorder: string;
  tooltipText: string;
  sliderFill: string;
}

/** View settings shared by every chart of a host. */
export interface ChartSettings {
  xMode: XMode;
  logY: boolean;
  /** Scale the y axis to the 1st..99th percentile instead of min..max. */
  ignoreOutliers: boolean;
  /** 0 = off, up to 0.999. */
  smoothing: number;
  smoothingKind: SmoothingKind;
  /** Draw a min/max band while smoothing, so spikes stay visible. */
  showEnvelope: boolean;
  theme: ChartTheme;
  /** Time zone of the time axis labels and the tooltip's times; default `browser`. */
  timeZone?: TimeZone;
  /** A zoom slider under the plot (the mouse wheel zooms with or without it); default shown. */
  zoomSlider?: boolean;
}

/** A shaded band: for each x the lowest and highest value. */
export interface Band {
  x: number[];
  lo: number[];
  hi: number[];
}

/** A mark on a curve at one x (an alert): a vertical line with a label, and a pin at the value when known. */
export interface ChartMarker {
  x: number;
  /** The curve's value at x, where the pin goes; null = line only. */
  y: number | null;
  kind: AlertKind;
  /** Short text on the line. */
  label: string;
  /** Long text for the hover. */
  detail: string;
  /** The alert's window of steps in x units, drawn as a band; absent = none. */
  window?: [number, number];
}

/** One curve of a chart: one run's values of the chart's metric key (or a group's mean). */
export interface ChartSeriesInput {
  /** Stable and unique within the chart; series ids are derived from it. */
  id: string;
  /** Legend and tooltip label. */
  name: string;
  color: string;
  data: SeriesData;
  /** Mean x distance between raw points: the unit of the time-weighted EMA. */
  dxRef?: number;
  /**
   * A band computed elsewhere (a group's min–max or ±std): drawn instead of
   * the smoothing envelope, whether smoothing is on or not.
   */
  band?: Band;
  /** Marks at given x values (alerts), drawn on the curve. */
  markers?: ChartMarker[];
}

export interface ChartModel {
  series: ChartSeriesInput[];
  settings: ChartSettings;
  /** Plot width in device pixels: sets the envelope's bucket count. */
  widthPx: number;
  /** The visible x range; null = everything. The y range follows it. */
  xWindow?: [number, number] | null;
  /**
   * Lines may leave out points outside this x range (core/lineRange.ts): set by a
   * host that draws again before it shows more; null or absent = whole lines.
   */
  drawnRange?: [number, number] | null;
  /**
   * The x axis's extent when it is not the data's: a range the bridge answered the whole
   * series over (columns snapped to rollup buckets widen it), which the axis must span
   * exactly for the M4 points to draw the raw line; null or absent = the data's extent.
   */
  xExtent?: [number, number] | null;
  /** Shown as the tooltip's first line (the metric key). */
  title?: string;
  /** False: no legend in the chart (its host shows one of its own); default: one when there are several names. */
  legend?: boolean;
}
