import type { GrafanaTheme2 } from '@grafana/data';

/** The core's tooltip classes (`cs-tt-*`) and the panel's notes, in Grafana's colours. */
export function panelCss(theme: GrafanaTheme2): string {
  const muted = theme.colors.text.secondary;
  return `
.cs-panel-notes{position:absolute;top:2px;right:8px;font-size:11px;color:${muted};pointer-events:none;text-align:right}
.cs-tt-title{font-weight:600;margin-bottom:2px}
.cs-tt-x{color:${muted};margin-bottom:4px}
.cs-tt-rows{border-collapse:collapse}
.cs-tt-rows td{padding:1px 6px 1px 0;white-space:nowrap}
.cs-tt-chip{display:inline-block;width:10px;height:10px;border-radius:2px}
.cs-tt-name{max-width:220px;overflow:hidden;text-overflow:ellipsis}
.cs-tt-value{font-weight:600;font-variant-numeric:tabular-nums;text-align:right}
.cs-tt-raw{font-weight:400;color:${muted};margin-left:6px}
.cs-tt-where{color:${muted};font-size:11px}`;
}
