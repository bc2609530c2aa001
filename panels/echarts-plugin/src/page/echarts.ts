/** ECharts, with only the parts the page uses (keeps the bundle small). */
import { getInstanceByDom, init, use } from 'echarts/core';
import { HeatmapChart, LineChart, ScatterChart } from 'echarts/charts';
import {
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  MarkPointComponent,
  TooltipComponent,
  VisualMapContinuousComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

use([
  LineChart,
  ScatterChart,
  HeatmapChart,
  GridComponent,
  TooltipComponent,
  DataZoomComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  MarkPointComponent,
  VisualMapContinuousComponent,
  CanvasRenderer,
]);

// getInstanceByDom: browser tests reach a chart's instance through it (tests/browser/test_page_zoom.py)
export { getInstanceByDom, init };
export type { EChartsType } from 'echarts/core';
