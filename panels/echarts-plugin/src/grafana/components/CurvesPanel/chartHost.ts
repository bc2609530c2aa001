import { buildChartOption, buildDataUpdate, computeLayers, GRID, type ChartLayers } from '../../../core/options';
import type { ChartModel } from '../../../types/chart';
import { TIMING } from '../../constants/defaults';
import { init, type EChartsType } from '../../echarts';
import type { PanelOptions } from '../../types/options';
import { adaptOption } from '../../utils/chartModel';
import { extentOf, zoomWindow } from '../../utils/zoom';

/**
 * One ECharts instance for the panel's whole life: created once, given a
 * full option when the chart's structure changes and only data otherwise,
 * resized with the panel, disposed on unmount.
 */
export class ChartHost {
  private readonly chart: EChartsType;
  private extent: [number, number] | null = null;
  private zoomTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    element: HTMLElement,
    private readonly onUserZoom: (window: [number, number] | null) => void,
  ) {
    this.chart = init(element, null, { renderer: 'canvas' });
    // a wheel gesture sends many events: report the zoom once it settles
    this.chart.on('datazoom', () => {
      if (this.zoomTimer !== null) clearTimeout(this.zoomTimer);
      this.zoomTimer = setTimeout(() => this.reportZoom(), TIMING.zoomDebounceMs);
    });
  }

  /** ECharts' own id of the instance: the same for as long as the panel lives. */
  get instanceId(): string {
    return this.chart.id;
  }

  draw(model: ChartModel, full: boolean, options: PanelOptions): ChartLayers {
    const layers = computeLayers(model);
    if (full) this.chart.setOption(adaptOption(buildChartOption(model, layers), options), { replaceMerge: ['series'] });
    else this.chart.setOption(adaptOption(buildDataUpdate(model, layers), options));
    this.extent = extentOf(model.series.map((s) => s.data.x));
    return layers;
  }

  /** Show a window (or everything) without reporting it as the user's zoom. */
  showWindow(window: [number, number] | null): void {
    const range = window ? { startValue: window[0], endValue: window[1] } : { start: 0, end: 100 };
    this.chart.setOption({ dataZoom: [range, range] });
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
