/**
 * ECharts for the Grafana panel, with only the parts the curves use. Bundled
 * into module.js: Grafana does not provide ECharts to plugins.
 */
import { init, use } from 'echarts/core';
import { LineChart, ScatterChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, TooltipComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

use([CanvasRenderer, LineChart, ScatterChart, GridComponent, LegendComponent, TooltipComponent, DataZoomComponent]);

export { init };
export type { EChartsType } from 'echarts/core';
