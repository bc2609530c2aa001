/** What ECharts holds now, summed up per series: for tests that must not read pixels. */
export interface DrawnSeries {
  id: string;
  type: string;
  name: string;
  /** Points given to ECharts (gaps included). */
  points: number;
  lineOpacity: number | null;
  area: boolean;
  markLines: number;
  /** Shaded x ranges (alert windows). */
  markAreas: number;
}

/** Points of a series' data: an array of points, or x, y, x, y … in a typed array (one point per dimension). */
function pointsOf(series: Record<string, unknown>): number {
  const { data, dimensions } = series;
  if (Array.isArray(data)) return data.length;
  if (ArrayBuffer.isView(data) && 'length' in data) {
    const width = Array.isArray(dimensions) && dimensions.length > 0 ? dimensions.length : 1;
    return Math.floor((data as Float64Array).length / width);
  }
  return 0;
}

/** The series of an option read back from ECharts (`getOption()`), summed up. */
export function summarizeSeries(option: { series?: Record<string, unknown>[] } | undefined): DrawnSeries[] {
  return (option?.series ?? []).map((s) => {
    const lineStyle = s.lineStyle as { opacity?: number } | undefined;
    const markLine = s.markLine as { data?: unknown[] } | undefined;
    const markArea = s.markArea as { data?: unknown[] } | undefined;
    return {
      id: String(s.id ?? ''),
      type: String(s.type ?? ''),
      name: String(s.name ?? ''),
      points: pointsOf(s),
      lineOpacity: typeof lineStyle?.opacity === 'number' ? lineStyle.opacity : null,
      area: Boolean(s.areaStyle),
      markLines: Array.isArray(markLine?.data) ? markLine.data.length : 0,
      markAreas: Array.isArray(markArea?.data) ? markArea.data.length : 0,
    };
  });
}
