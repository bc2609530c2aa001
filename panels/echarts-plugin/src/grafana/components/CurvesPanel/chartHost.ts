import { buildChartOption, buildDataUpdate, computeLayers, GRID, zoomWindowOption, type ChartLayers } from '../../../core/options';
import type { ChartModel, ChartSettings } from '../../../types/chart';
import { TIMING } from '../../../constants/defaults';
import { init, type EChartsType } from '../../echarts';
import { extentOf, zoomWindow } from '../../utils/zoom';

/**
 * One ECharts instance for the panel's whole life: created once, given a
 * full option when the chart's structure changes and only data otherwise,
 * resized with the panel, disposed on unmount.
 */
export class ChartHost {
  private readonly chart: EChartsType;
  private extent: [number, number] | null = null;
  /** Settings of the last full option: which zoom components the chart has. */
  private settings: Pick<ChartSettings, 'zoomSlider'> = {};
  private zoomTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    element: HTMLElement,
    private readonly onUserZoom: (window: [number, number] | null) => void,
  ) {
    this.chart = init(element, null, { renderer: 'canvas' });
    // a wheel gesture sends many events: report the zoom once it settles
    this.chart.on('datazoom', () => {
      if (this.zoomTimer !== null) clearTimeout(this.zoomTimer);
      this.zoomTimer = setTimeout(() => this.reportZoom(), TIMING.panelZoomSettleMs);
    });
  }

  /** ECharts' own id of the instance: the same for as long as the panel lives. */
  get instanceId(): string {
    return this.chart.id;
  }

  draw(model: ChartModel, full: boolean): ChartLayers {
    const layers = computeLayers(model);
    if (full) {
      // the slider may come or go with the options: dataZoom is replaced too (ids keep the wheel zoom)
      this.chart.setOption(buildChartOption(model, layers), { replaceMerge: ['series', 'dataZoom'] });
      this.settings = model.settings;
    } else {
      this.chart.setOption(buildDataUpdate(model, layers));
    }
    this.extent = extentOf(model.series.map((s) => s.data.x));
    return layers;
  }

  /** Show a window (or everything) without reporting it as the user's zoom. */
  showWindow(window: [number, number] | null): void {
    this.chart.setOption(zoomWindowOption(this.settings, window));
  }

  resize(): void {
    this.chart.resize();
  }

  dispose(): void {
    if (this.zoomTimer !== null) clearTimeout(this.zoomTimer);
    this.chart.dispose();
  }

  /** The x values at the plot's edges after the user zoomed. */
  private reportZoom(): void {
    this.zoomTimer = null;
    if (this.chart.isDisposed()) return;
    const at = (px: number) => Number((this.chart.convertFromPixel({ gridIndex: 0 }, [px, 0]) as number[] | undefined)?.[0]);
    const edges: [number, number] = [at(GRID.left), at(this.chart.getWidth() - GRID.right)];
    this.onUserZoom(zoomWindow(edges, this.extent));
  }
}
