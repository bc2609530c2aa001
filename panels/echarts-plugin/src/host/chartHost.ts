import type { init as initECharts, EChartsType } from 'echarts/core';
import { computeLayers, type ChartLayers } from '../core/layers';
import { buildChartOption, buildDataUpdate, GRID, zoomWindowOption } from '../core/options';
import { extentOf } from '../core/series';
import { drawnSeriesIds, RAW_LINE_WIDTH, seriesIds } from '../core/seriesOptions';
import type { ChartModel, ChartSettings } from '../types/chart';
import { debounce, onceATask } from '../utils/timers';
import { summarizeSeries, type DrawnSeries } from './drawnSeries';
import { zoomEdgesReadable, zoomWindow } from './zoom';

export interface ChartHostOptions {
  /** ECharts' `init`, from the host's own registration of the parts it draws with. */
  init: typeof initECharts;
  /**
   * When a zoom gesture is reported: `'task'` once per input task that moved it, as soon as
   * ECharts has applied it and before the next frame paints the old lines at the new window
   * (the page, whose newer query aborts the older one), or after it rested this many ms
   * (a wheel gesture sends many events; the Grafana panel hands each one to the dashboard).
   */
  zoomSettle: 'task' | number;
  /** The user zoomed: the window in x values, clamped to the data, or null for all of it. */
  onUserZoom(window: [number, number] | null): void;
  /** A click inside the plot, at these x and y values. */
  onPlotClick?(x: number, y: number): void;
}

/**
 * One ECharts instance, shared by the bridge's page and the Grafana panel:
 * created once per element, given a full option when the chart's structure
 * changes and only data otherwise (a live frame never rebuilds the chart),
 * resized with its element, disposed when its owner goes. It reads the
 * user's zooms as x windows.
 */
export class ChartHost {
  private readonly chart: EChartsType;
  /** The x extent of what was drawn last: a zoom is read against it. */
  private extent: [number, number] | null = null;
  /** Settings of the last full option: which zoom components the chart has. */
  private zoomSettings: Pick<ChartSettings, 'zoomSlider'> = {};
  /** The ids of the series ECharts holds (set by the last full option). */
  private seriesIds = '';
  private readonly zoomSettled: { (): void; cancel(): void };

  /** The element's size when the chart last fitted it (CSS px). */
  private size: [number, number];

  constructor(
    private readonly element: HTMLElement,
    private readonly options: ChartHostOptions,
  ) {
    this.size = sizeOf(element);
    this.chart = options.init(element, null, { renderer: 'canvas' });
    this.zoomSettled =
      options.zoomSettle === 'task' ? onceATask(() => this.reportZoom()) : debounce(() => this.reportZoom(), options.zoomSettle);
    this.chart.on('datazoom', () => {
      // the values under the pointer change with the window: the tooltip goes until the pointer moves again,
      // instead of being laid out again after each redraw of the zoom (a layout of the whole page, ~20 ms)
      this.chart.dispatchAction({ type: 'hideTip' });
      this.zoomSettled();
    });
    if (options.onPlotClick) {
      const onClick = options.onPlotClick;
      this.chart.getZr().on('click', (event: { offsetX: number; offsetY: number }) => {
        const at = [event.offsetX, event.offsetY];
        if (!this.chart.containPixel({ gridIndex: 0 }, at)) return;
        const [x, y] = this.chart.convertFromPixel({ gridIndex: 0 }, at) as number[];
        if (Number.isFinite(x) && Number.isFinite(y)) onClick(x!, y!);
      });
    }
  }

  /** ECharts' own id of the instance: the same for as long as the host lives. */
  get instanceId(): string {
    return this.chart.id;
  }

  /**
   * Draw a model: `full` sets the whole option (runs, axis mode or settings
   * changed), otherwise only the data, the y bounds and the tooltip change
   * (and with `withWindow` the shown window, `model.xWindow`, in the same drawing).
   * Data that adds or removes a layer (a first NaN, smoothing's line) is drawn
   * in full: only a full option adds and removes series.
   */
  draw(model: ChartModel, full: boolean, layers: ChartLayers = computeLayers(model), withWindow = false): ChartLayers {
    const ids = drawnSeriesIds(layers).join('\n');
    if (full || ids !== this.seriesIds) {
      // the slider may come or go with the options: dataZoom is replaced too (ids keep the wheel zoom)
      this.chart.setOption(buildChartOption(model, layers), { replaceMerge: ['series', 'dataZoom'] });
      this.zoomSettings = model.settings;
      this.seriesIds = ids;
    } else {
      const zoom = withWindow ? zoomWindowOption(this.zoomSettings, model.xWindow ?? null) : {};
      this.chart.setOption({ ...buildDataUpdate(model, layers), ...zoom });
    }
    this.extent = extentOf(model.series.map((s) => s.data.x));
    return layers;
  }

  /**
   * Make some curves stand out (their raw lines drawn wide and opaque, the others faint), or
   * none (null): a style change of the raw lines only, merged by id, their data untouched.
   */
  highlight(curveIds: readonly string[], on: ReadonlySet<string> | null, normalOpacity: number): void {
    if (this.chart.isDisposed()) return;
    const series = curveIds.map((id) => {
      const lit = on?.has(id) ?? false;
      const opacity = on === null ? normalOpacity : lit ? 1 : 0.08;
      return { id: seriesIds(id).raw, lineStyle: { opacity, width: lit ? 2 * RAW_LINE_WIDTH : RAW_LINE_WIDTH }, z: lit ? 5 : 2 };
    });
    this.chart.setOption({ series });
  }

  /** Where the data point (x, y) is drawn, in CSS px from the chart's top left; null where it cannot be told. */
  pixelOf(x: number, y: number): [number, number] | null {
    const at = this.chart.convertToPixel({ gridIndex: 0 }, [x, y]) as number[] | undefined;
    return at && Number.isFinite(at[0]) && Number.isFinite(at[1]) ? [at[0]!, at[1]!] : null;
  }

  /** Show a window (or everything) without reporting it as the user's zoom. */
  showWindow(window: [number, number] | null): void {
    this.chart.setOption(zoomWindowOption(this.zoomSettings, window));
  }

  /** Fit the chart to its element; nothing when the element kept its size (a resize redraws everything). */
  resize(): void {
    const size = sizeOf(this.element);
    if (size[0] === this.size[0] && size[1] === this.size[1]) return;
    this.size = size;
    this.chart.resize();
  }

  /** The series ECharts holds now. */
  drawnSeries(): DrawnSeries[] {
    return summarizeSeries(this.chart.getOption() as { series?: Record<string, unknown>[] } | undefined);
  }

  dispose(): void {
    this.zoomSettled.cancel();
    this.chart.dispose();
  }

  /** The x values at the plot's edges after the user zoomed; edges that tell nothing are not reported. */
  private reportZoom(): void {
    if (this.chart.isDisposed()) return;
    const at = (px: number) => Number((this.chart.convertFromPixel({ gridIndex: 0 }, [px, 0]) as number[] | undefined)?.[0]);
    const edges: [number, number] = [at(GRID.left), at(this.chart.getWidth() - GRID.right)];
    if (!zoomEdgesReadable(edges, this.extent)) return;
    this.options.onUserZoom(zoomWindow(edges, this.extent));
  }
}

function sizeOf(element: HTMLElement): [number, number] {
  return [element.clientWidth, element.clientHeight];
}
