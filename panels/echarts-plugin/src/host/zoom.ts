/**
 * Reading a zoom gesture: the x values at the plot's left and right edges,
 * against the x extent of what is drawn. Both hosts read zooms here.
 */

/** The edges tell something: finite, in order, over a chart that holds data. */
export function zoomEdgesReadable(edges: [number, number], extent: [number, number] | null): extent is [number, number] {
  const [x0, x1] = edges;
  return extent !== null && Number.isFinite(x0) && Number.isFinite(x1) && x1 > x0;
}

/**
 * The window the user zoomed to, from the x values at the plot's left and
 * right edges, or null when the view holds all the data (zoomed out).
 */
export function zoomWindow(edges: [number, number], extent: [number, number] | null): [number, number] | null {
  if (!zoomEdgesReadable(edges, extent)) return null;
  const [x0, x1] = edges;
  const slack = (extent[1] - extent[0]) * 1e-6;
  if (x0 <= extent[0] + slack && x1 >= extent[1] - slack) return null;
  return [Math.max(x0, extent[0]), Math.min(x1, extent[1])];
}

/** Two windows (null: everything) show the same x range. */
export function sameWindow(a: readonly [number, number] | null, b: readonly [number, number] | null): boolean {
  if (a === null || b === null) return a === b;
  return a[0] === b[0] && a[1] === b[1];
}
