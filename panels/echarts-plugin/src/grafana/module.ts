import { PanelPlugin } from '@grafana/data';
import { CurvesPanel } from './components/CurvesPanel/CurvesPanel';
import { DEFAULT_OPTIONS } from './constants/defaults';
import type { PanelOptions } from './types/options';
import { migrateOptions } from './utils/migration';

const X_AXIS = ['X axis'];
const SMOOTHING = ['Smoothing'];
const Y_AXIS = ['Y axis'];
const smoothingOn = (o: PanelOptions) => o.smoothing > 0;

export const plugin = new PanelPlugin<PanelOptions>(CurvesPanel)
  .setPanelOptions((builder) =>
    builder
      .addRadio({
        path: 'xAxis',
        name: 'X axis',
        description: 'Time, or a numeric field of the frames such as the training step.',
        category: X_AXIS,
        defaultValue: DEFAULT_OPTIONS.xAxis,
        settings: {
          options: [
            { value: 'time', label: 'Time' },
            { value: 'field', label: 'Step field' },
          ],
        },
      })
      .addTextInput({
        path: 'stepField',
        name: 'Step field',
        description:
          'Name of the step field (a field name, Flux _field or InfluxQL column). Also shown in the tooltip when x is time.',
        category: X_AXIS,
        defaultValue: DEFAULT_OPTIONS.stepField,
      })
      .addBooleanSwitch({
        path: 'zoomSlider',
        name: 'Zoom slider',
        description: 'The mouse wheel zooms with or without it.',
        category: X_AXIS,
        defaultValue: DEFAULT_OPTIONS.zoomSlider,
      })
      .addBooleanSwitch({
        path: 'zoomSetsTimeRange',
        name: 'Zoom sets the dashboard time range',
        category: X_AXIS,
        defaultValue: DEFAULT_OPTIONS.zoomSetsTimeRange,
        showIf: (o) => o.xAxis === 'time',
      })
      .addTextInput({
        path: 'seriesName',
        name: 'Series name',
        description: 'Labels as ${label}, e.g. ${run} ${metric}; dashboard variables work too. Empty: run and metric.',
        defaultValue: DEFAULT_OPTIONS.seriesName,
        settings: { placeholder: '${run} ${metric}' },
      })
      .addSliderInput({
        path: 'smoothing',
        name: 'Smoothing',
        description: '0 is off. The raw curve stays drawn, faint, under the smoothed one.',
        category: SMOOTHING,
        defaultValue: DEFAULT_OPTIONS.smoothing,
        settings: { min: 0, max: 0.999, step: 0.001 },
      })
      .addRadio({
        path: 'smoothingKind',
        name: 'Kind',
        category: SMOOTHING,
        defaultValue: DEFAULT_OPTIONS.smoothingKind,
        settings: {
          options: [
            { value: 'ema', label: 'EMA', description: "TensorBoard's debiased EMA, per point" },
            { value: 'time', label: 'Time-weighted EMA', description: 'Weights by the x distance between points' },
          ],
        },
        showIf: smoothingOn,
      })
      .addBooleanSwitch({
        path: 'showEnvelope',
        name: 'Min/max band',
        description: 'Keeps spikes visible while smoothing.',
        category: SMOOTHING,
        defaultValue: DEFAULT_OPTIONS.showEnvelope,
        showIf: smoothingOn,
      })
      .addBooleanSwitch({
        path: 'logY',
        name: 'Log scale',
        category: Y_AXIS,
        defaultValue: DEFAULT_OPTIONS.logY,
      })
      .addBooleanSwitch({
        path: 'ignoreOutliers',
        name: 'Ignore outliers',
        description: 'Scale to the 1st..99th percentile of the visible values.',
        category: Y_AXIS,
        defaultValue: DEFAULT_OPTIONS.ignoreOutliers,
      }),
  )
  .setMigrationHandler(migrateOptions);
