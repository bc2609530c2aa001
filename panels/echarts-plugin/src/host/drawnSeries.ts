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
      points: Array.isArray(s.data) ? s.data.length : 0,
      lineOpacity: typeof lineStyle?.opacity === 'number' ? lineStyle.opacity : null,
      area: Boolean(s.areaStyle),
      markLines: Array.isArray(markLine?.data) ? markLine.data.length : 0,
      markAreas: Array.isArray(markArea?.data) ? markArea.data.length : 0,
    };
  });
}
