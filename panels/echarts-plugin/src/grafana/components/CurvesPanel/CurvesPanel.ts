import { ThemeContext, type PanelProps } from '@grafana/data';
import { createElement, useContext, useEffect, useMemo, useRef } from 'react';
import { TIMING } from '../../../constants/defaults';
import { plotWidthPx } from '../../../core/options';
import { resolveTimeZone } from '../../../core/timeZone';
import { ChartHost } from '../../../host/chartHost';
import type { ChartTheme, TimeZone } from '../../../types/chart';
import { TEST_IDS } from '../../constants/testIds';
import { init } from '../../echarts';
import type { UpdateKind } from '../../types/curves';
import type { PanelOptions } from '../../types/options';
import { chartModel, pointsInView } from '../../utils/chartModel';
import { CurveStore } from '../../utils/curveStore';
import { findCurveSources } from '../../utils/frames';
import { labelsAsScopedVars } from '../../utils/labels';
import { normalizeOptions } from '../../utils/migration';
import { chartThemeFromGrafana } from '../../utils/theme';
import { timeRangeOf } from '../../utils/zoom';
import { panelCss } from './styles';

/** What the panel keeps between renders, outside React state (drawing never re-renders React). */
interface PanelState {
  store: CurveStore;
  stepField: string;
  window: [number, number] | null;
  /** Options and theme of the last full option: when they change, the next draw is full. */
  drawnSettings: string;
  widthPx: number;
  sourceNotes: string[];
}

function settingsKey(options: PanelOptions, theme: ChartTheme, timeZone: TimeZone): string {
  return JSON.stringify([options, theme, timeZone]);
}

/**
 * The curvestream panel: the data frames of the query (or of Grafana Live)
 * drawn by the chart core in one long-lived ECharts instance.
 */
export function CurvesPanel(props: PanelProps<PanelOptions>) {
  const { data, width, height, timeRange, replaceVariables } = props;
  const options = useMemo(() => normalizeOptions(props.options), [props.options]);
  const grafanaTheme = useContext(ThemeContext);
  const theme = useMemo(() => chartThemeFromGrafana(grafanaTheme), [grafanaTheme]);
  // the dashboard's zone: "utc", "browser" or an IANA name
  const timeZone = resolveTimeZone(props.timeZone);

  const rootRef = useRef<HTMLDivElement>(null);
  const chartRef = useRef<HTMLDivElement>(null);
  const notesRef = useRef<HTMLDivElement>(null);
  const hostRef = useRef<ChartHost | null>(null);
  const state = useRef<PanelState>({
    store: new CurveStore(options.xAxis),
    stepField: options.stepField,
    window: null,
    drawnSettings: '',
    widthPx: 1,
    sourceNotes: [],
  }).current;
  // the zoom handler outlives renders: it reads the latest props from here
  const latest = useRef({ options, theme, timeZone, onChangeTimeRange: props.onChangeTimeRange });
  latest.current = { options, theme, timeZone, onChangeTimeRange: props.onChangeTimeRange };

  const draw = (kind: UpdateKind) => {
    const host = hostRef.current;
    const root = rootRef.current;
    if (!host || !root) return;
    const { options: o, theme: t, timeZone: z } = latest.current;
    const settings = settingsKey(o, t, z);
    const full = kind === 'structure' || settings !== state.drawnSettings;
    const model = chartModel(state.store.curves, o, t, z, state.widthPx, state.window);
    const layers = host.draw(model, full);
    state.drawnSettings = settings;
    const notes = [...state.sourceNotes, ...layers.notes];
    if (model.series.length === 0) notes.unshift('No data');
    if (notesRef.current) notesRef.current.textContent = notes.join(' · ');
    Object.assign(root.dataset, {
      instance: host.instanceId,
      points: JSON.stringify(pointsInView(model)),
      update: full ? 'structure' : kind,
      xAxis: o.xAxis,
      timeZone: z,
      smoothing: layers.smoothingOn ? 'on' : 'off',
      envelope: String(layers.envelopeOn),
      window: JSON.stringify(state.window),
      notes: notes.join(' · '),
    });
  };

  // one ECharts instance for the panel's life
  useEffect(() => {
    const host = new ChartHost(chartRef.current!, {
      init,
      zoomSettle: TIMING.panelZoomSettleMs,
      onUserZoom: (window) => {
        state.window = window;
        const { options: o, onChangeTimeRange } = latest.current;
        if (window && o.xAxis === 'time' && o.zoomSetsTimeRange) onChangeTimeRange(timeRangeOf(window));
        draw('data');
      },
    });
    hostRef.current = host;
    // a new instance has no option yet: the data effect (run after this one) sets the full option
    state.drawnSettings = '';
    return () => {
      host.dispose();
      hostRef.current = null;
    };
  }, []); // created once, on mount

  useEffect(() => {
    hostRef.current?.resize();
    const widthPx = plotWidthPx(width, window.devicePixelRatio);
    if (widthPx !== state.widthPx) {
      state.widthPx = widthPx;
      draw('data');
    }
  }, [width, height]);

  // a new dashboard time range brings new data: show all of it
  const from = timeRange.from.valueOf();
  const to = timeRange.to.valueOf();
  const firstRange = useRef(true);
  useEffect(() => {
    if (firstRange.current) {
      firstRange.current = false;
      return;
    }
    state.window = null;
    hostRef.current?.showWindow(null);
    draw('data');
  }, [from, to]);

  useEffect(() => {
    if (options.xAxis !== state.store.xAxis || options.stepField !== state.stepField) {
      state.store = new CurveStore(options.xAxis);
      state.stepField = options.stepField;
      state.window = null;
    }
    const found = findCurveSources(
      data.series,
      {
        xAxis: options.xAxis,
        stepField: options.stepField,
        seriesName: options.seriesName,
        interpolate: (template, labels) => replaceVariables(template, labelsAsScopedVars(labels)),
      },
      state.store.previousFrames,
    );
    state.sourceNotes = found.notes;
    const update = state.store.update(found.sources);
    if (update.kind !== 'unchanged' || settingsKey(options, theme, timeZone) !== state.drawnSettings) draw(update.kind);
  }, [data, options, theme, timeZone, replaceVariables]);

  return createElement(
    'div',
    {
      ref: rootRef,
      'data-testid': TEST_IDS.panel,
      style: { position: 'relative', width, height },
    },
    createElement('style', null, panelCss(grafanaTheme)),
    createElement('div', { ref: chartRef, 'data-testid': TEST_IDS.chart, style: { width, height } }),
    createElement('div', { ref: notesRef, className: 'cs-panel-notes', 'data-testid': TEST_IDS.notes }),
  );
}
