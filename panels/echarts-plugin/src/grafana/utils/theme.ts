import type { GrafanaTheme2 } from '@grafana/data';
import type { ChartTheme } from '../../types/chart';

/** The core's chart colours from Grafana's theme, so the panel looks like its neighbours. */
export function chartThemeFromGrafana(theme: GrafanaTheme2): ChartTheme {
  const { colors } = theme;
  return {
    name: theme.isDark ? 'dark' : 'light',
    text: colors.text.primary,
    mutedText: colors.text.secondary,
    axisLine: colors.border.medium,
    splitLine: colors.border.weak,
    tooltipBackground: colors.background.primary,
    tooltipBorder: colors.border.medium,
    tooltipText: colors.text.primary,
    sliderFill: colors.primary.transparent,
  };
}
