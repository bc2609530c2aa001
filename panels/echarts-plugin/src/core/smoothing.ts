/**
 * Smoothing of a curve's y values. Both functions return a new array of the
 * same length; non-finite inputs pass through unchanged (and leave the
 * running average alone), so NaN/Inf stay visible where they happened.
 */

export const MAX_SMOOTHING = 0.999;

export function clampSmoothing(weight: number): number {
  if (!Number.isFinite(weight) || weight <= 0) return 0;
  return Math.min(MAX_SMOOTHING, weight);
}

/**
 * Debiased exponential moving average, exactly as TensorBoard's scalar
 * dashboard computes it: a first-order IIR filter started at 0, divided by
 * (1 - weight^n) where n counts the finite points so far, and a constant
 * series left as it is.
 */
export function emaTensorBoard(ys: readonly number[], weight: number): number[] {
  const w = clampSmoothing(weight);
  const out = new Array<number>(ys.length);
  const first = ys[0];
  const isConstant = ys.every((v) => v === first);
  let last = ys.length > 0 ? 0 : NaN;
  let numAccum = 0;
  for (let i = 0; i < ys.length; i++) {
    const next = ys[i]!;
    if (isConstant || !Number.isFinite(next)) {
      out[i] = next;
      continue;
    }
    last = last * w + (1 - w) * next;
    numAccum++;
    const debias = w === 1 ? 1 : 1 - Math.pow(w, numAccum);
    out[i] = last / debias;
  }
  return out;
}

/**
 * Exponential moving average weighted by x distance, for irregular steps or
 * time axes: a point `dx` after the previous one decays the history by
 * weight^(dx / dxRef). With evenly spaced points dxRef apart it equals
 * emaTensorBoard. Passing the raw data's mean spacing as dxRef keeps the
 * smoothing the same whether the chart shows raw or M4-downsampled points.
 */
export function emaTimeWeighted(
  xs: readonly number[],
  ys: readonly number[],
  weight: number,
  dxRef: number | undefined,
): number[] {
  const w = clampSmoothing(weight);
  if (!(dxRef !== undefined && dxRef > 0 && Number.isFinite(dxRef))) {
    return emaTensorBoard(ys, w);
  }
  const out = new Array<number>(ys.length);
  const logW = w > 0 ? Math.log(w) : -Infinity;
  let numerator = 0;
  let denominator = 0;
  let lastX = NaN;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i]!;
    if (!Number.isFinite(y)) {
      out[i] = y;
      continue;
    }
    const x = xs[i]!;
    if (Number.isNaN(lastX)) {
      numerator = y;
      denominator = 1;
    } else {
      const dx = Math.max(0, x - lastX);
      const decay = w === 0 ? 0 : Math.exp((logW * dx) / dxRef);
      numerator = numerator * decay + y;
      denominator = denominator * decay + 1;
    }
    lastX = x;
    out[i] = numerator / denominator;
  }
  return out;
}
