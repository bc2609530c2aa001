/** ECharts, with only the parts the charts use (keeps the bundle small). */
import { init, use } from 'echarts/core';
import { LineChart, ScatterChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, TooltipComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

use([LineChart, ScatterChart, GridComponent, TooltipComponent, DataZoomComponent, LegendComponent, CanvasRenderer]);

export { init };
export type { EChartsType } from 'echarts/core';
