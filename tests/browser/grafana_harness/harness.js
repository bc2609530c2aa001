/*
 * The browser test's stand-in for Grafana: loads the built plugin (plugin/module.js)
 * with requirejs the way Grafana's SystemJS loader does (AMD, with React and the real
 * @grafana/data provided), and renders its panel with PanelProps-shaped data built by
 * @grafana/data itself. The test drives it through `window.harness`.
 */
/* global requirejs */
requirejs.config({
  baseUrl: '.',
  paths: {
    react: 'vendor/react',
    'react-dom': 'vendor/react-dom',
    'react/jsx-runtime': 'vendor/react-jsx-runtime',
    '@grafana/data': 'vendor/grafana-data',
    'curvestream-panel': 'plugin/module',
  },
});
requirejs.onError = (error) => {
  window.harnessError = String(error && error.stack ? error.stack : error);
};

requirejs(['react', 'react-dom', '@grafana/data', 'curvestream-panel'], (React, ReactDOM, grafana, panelModule) => {
  const { PanelPlugin, ThemeContext, createTheme, toDataFrame, FieldType, StreamingDataFrame, LoadingState, EventBusSrv, dateTime } =
    grafana;
  // Grafana's app fills the option editors' registry with its React editors (public/app);
  // the options builder only needs the ids to exist, the editors are never rendered here.
  const editorIds = ['text', 'number', 'slider', 'boolean', 'radio', 'select'];
  grafana.standardEditorsRegistry.setInit(() => editorIds.map((id) => ({ id, name: id, editor: () => null })));
  const plugin = panelModule.plugin;
  const theme = createTheme({ colors: { mode: 'dark' } });
  document.body.style.background = theme.colors.background.canvas;
  document.body.style.color = theme.colors.text.primary;
  document.getElementById('panel-frame').style.background = theme.colors.background.primary;

  const container = document.getElementById('panel');
  let root = ReactDOM.createRoot(container);
  let props = null;
  let stream = null;
  const timeRangeChanges = [];

  const HOUR_START = Date.UTC(2025, 11, 2, 10, 0, 0);
  const SECOND = 1000;

  function timeRange(from, to) {
    return { from: dateTime(from), to: dateTime(to), raw: { from: dateTime(from), to: dateTime(to) } };
  }

  function loss(run, i) {
    return 2 * Math.exp(-i / (150 + 60 * run)) + 0.08 * Math.sin(i * 0.7 + run) + 0.1 * run;
  }

  function labelsOf(run) {
    return { _field: 'value', _measurement: 'cs_scalar', metric: 'train/loss', project: 'mnist', run: `lr=0.${run + 1}` };
  }

  function render(next) {
    props = { ...props, ...next };
    root.render(React.createElement(ThemeContext.Provider, { value: theme }, React.createElement(plugin.panel, props)));
  }

  function mount(series, options, range, timeZone = 'browser') {
    props = {
      id: 1,
      data: { state: LoadingState.Done, series, timeRange: range },
      timeRange: range,
      timeZone,
      options: { ...plugin.defaults, ...options },
      transparent: false,
      width: 900,
      height: 420,
      fieldConfig: { defaults: {}, overrides: [] },
      renderCounter: 0,
      title: 'train/loss',
      eventBus: new EventBusSrv(),
      onOptionsChange: () => {},
      onFieldConfigChange: () => {},
      replaceVariables: (text) => text,
      onChangeTimeRange: (r) => timeRangeChanges.push({ from: r.from, to: r.to }),
    };
    render({});
  }

  /** Flux answers: one frame per run, `_time` + `_value`, tags as labels (InfluxDB data source). */
  function showQuery({ runs, points, options = {}, timeZone = 'browser' }) {
    const series = [];
    for (let run = 0; run < runs; run++) {
      const times = [];
      const values = [];
      for (let i = 0; i < points; i++) {
        times.push(HOUR_START + i * SECOND);
        values.push(loss(run, i));
      }
      series.push(
        toDataFrame({
          refId: 'A',
          fields: [
            { name: '_time', type: FieldType.time, values: times },
            { name: '_value', type: FieldType.number, values, labels: labelsOf(run) },
          ],
        }),
      );
    }
    mount(series, options, timeRange(HOUR_START, HOUR_START + points * SECOND), timeZone);
  }

  /** A Grafana Live frame: one wide StreamingDataFrame, a value and a step field per run. */
  function streamRows(runs, from, count) {
    const values = [[]];
    for (let run = 0; run < runs; run++) values.push([], []);
    for (let i = from; i < from + count; i++) {
      values[0].push(HOUR_START + i * SECOND);
      for (let run = 0; run < runs; run++) {
        values[1 + 2 * run].push(loss(run, i));
        values[2 + 2 * run].push(i * 10);
      }
    }
    return values;
  }

  function startStream({ runs, points, maxLength = 100000, options = {} }) {
    const fields = [{ name: 'time', type: FieldType.time }];
    for (let run = 0; run < runs; run++) {
      const labels = { metric: 'train/loss', project: 'mnist', run: `lr=0.${run + 1}` };
      fields.push({ name: 'value', type: FieldType.number, labels }, { name: 'step', type: FieldType.number, labels });
    }
    const frame = StreamingDataFrame.fromDataFrameJSON({ schema: { fields }, data: { values: streamRows(runs, 0, points) } }, { maxLength });
    stream = { frame, runs, next: points };
    mount([frame], options, timeRange(HOUR_START, HOUR_START + 3600 * SECOND));
  }

  /** New rows pushed into the same frame, then a new PanelData, as Grafana Live does. */
  function push(count) {
    stream.frame.push({ data: { values: streamRows(stream.runs, stream.next, count) } });
    stream.next += count;
    render({ data: { ...props.data, series: [stream.frame] } });
  }

  function setSize(width, height) {
    render({ width, height });
  }

  /** The dashboard's time zone changed ("utc", "browser" or an IANA name). */
  function setTimeZone(timeZone) {
    render({ timeZone });
  }

  /** The panel's options changed in the editor. */
  function setOptions(options) {
    render({ options: { ...props.options, ...options } });
  }

  function setTimeRange(from, to) {
    const range = timeRange(from, to);
    render({ timeRange: range, data: { ...props.data, timeRange: range } });
  }

  function unmount() {
    root.unmount();
    root = ReactDOM.createRoot(container);
  }

  window.harness = {
    pluginInfo: () => ({
      isPanelPlugin: plugin instanceof PanelPlugin,
      hasPanel: typeof plugin.panel === 'function',
      hasMigration: typeof plugin.onPanelMigration === 'function',
      defaults: plugin.defaults,
    }),
    showQuery,
    startStream,
    push,
    setSize,
    setTimeRange,
    setTimeZone,
    setOptions,
    unmount,
    timeRangeChanges,
  };
  window.harnessReady = true;
});
