/** The line above the charts: what to do, or how many of the metrics are shown. */
export function chartsInfoText(selectedRuns: number, allKeys: number, shownKeys: number): string {
  if (selectedRuns === 0) return 'Select runs to plot their metrics.';
  if (allKeys === 0) return 'The selected runs have no metrics yet.';
  return `${shownKeys} of ${allKeys} metrics · ${selectedRuns} run${selectedRuns === 1 ? '' : 's'}`;
}
