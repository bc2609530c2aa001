import type { ChartTheme } from '../types/chart';

export const LIGHT_THEME: ChartTheme = {
  name: 'light',
  text: '#1f2328',
  mutedText: '#656d76',
  axisLine: '#d0d7de',
  splitLine: '#eaeef2',
  tooltipBackground: 'rgba(255,255,255,0.97)',
  tooltipBorder: '#d0d7de',
  tooltipText: '#1f2328',
  sliderFill: 'rgba(84,112,198,0.15)',
};

export const DARK_THEME: ChartTheme = {
  name: 'dark',
  text: '#e6edf3',
  mutedText: '#9198a1',
  axisLine: '#3d444d',
  splitLine: '#262c33',
  tooltipBackground: 'rgba(22,27,34,0.97)',
  tooltipBorder: '#3d444d',
  tooltipText: '#e6edf3',
  sliderFill: 'rgba(120,150,230,0.18)',
};

export function themeByName(name: 'light' | 'dark'): ChartTheme {
  return name === 'dark' ? DARK_THEME : LIGHT_THEME;
}
