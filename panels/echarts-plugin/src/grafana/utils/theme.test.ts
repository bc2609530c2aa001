// @vitest-environment happy-dom
import { createTheme } from '@grafana/data';
import { describe, expect, it } from 'vitest';
import { chartThemeFromGrafana } from './theme';

describe('chartThemeFromGrafana', () => {
  it('takes the chart’s colours from Grafana’s dark and light themes', () => {
    const dark = createTheme({ colors: { mode: 'dark' } });
    const light = createTheme({ colors: { mode: 'light' } });
    expect(chartThemeFromGrafana(dark).name).toBe('dark');
    expect(chartThemeFromGrafana(light).name).toBe('light');
    expect(chartThemeFromGrafana(dark).text).toBe(dark.colors.text.primary);
    expect(chartThemeFromGrafana(dark).text).not.toBe(chartThemeFromGrafana(light).text);
  });
});
