/** A chart this close to the viewport (CSS px) loads and draws: it is about to be scrolled to. */
export const NEAR_VIEWPORT_PX = 300;

/** Whether a box lies within `NEAR_VIEWPORT_PX` of the viewport; a hidden element (no box) never does. */
export function isNearViewport(rect: Pick<DOMRectReadOnly, 'top' | 'bottom' | 'width' | 'height'>, viewportHeight: number): boolean {
  if (rect.width === 0 && rect.height === 0) return false;
  return rect.bottom >= -NEAR_VIEWPORT_PX && rect.top <= viewportHeight + NEAR_VIEWPORT_PX;
}

/** A chart that can be asked to load before its observer first reports it near the viewport. */
export interface LoadsNearViewport {
  nearViewport(): boolean;
  loadNow(): void;
}

/**
 * Of these charts, those near the viewport now start loading at once, without
 * waiting a frame for their observers' first report: their queries leave sooner.
 * Every chart's position is read before any starts (one layout, not one per chart).
 */
export function loadChartsNearViewport(charts: Iterable<LoadsNearViewport>): void {
  const near = [...charts].filter((c) => c.nearViewport());
  for (const chart of near) chart.loadNow();
}
