import type { PanelOptions } from '../types/options';

/** Every option's default: the options builder, the migration and the tests read them from here. */
export const DEFAULT_OPTIONS: Readonly<PanelOptions> = Object.freeze({
  xAxis: 'time',
  stepField: 'step',
  seriesName: '',
  smoothing: 0,
  smoothingKind: 'ema',
  showEnvelope: true,
  logY: false,
  ignoreOutliers: false,
  zoomSlider: true,
  zoomSetsTimeRange: true,
});

/** The panel version whose options the migration handler reads: the first release. */
export const FIRST_RELEASE = '0.1.0';

/** Labels whose values the bridge writes percent-encoded (`%`, `\` and control characters). */
export const CURVESTREAM_TAGS: readonly string[] = ['project', 'run', 'metric'];
