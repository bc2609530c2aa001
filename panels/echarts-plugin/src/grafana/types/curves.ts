import type { Field, Labels } from '@grafana/data';
import type { Band, SeriesData } from '../../types/chart';

/** Where a curve's step values come from. */
export type StepSource =
  | { kind: 'aligned'; values: ArrayLike<unknown> }
  | { kind: 'byTime'; steps: ReadonlyMap<number, number> };

/** One numeric field of the panel's frames that is drawn as a curve. */
export interface CurveSource {
  /** Stable across updates of the same series (refId, frame name, field name, labels). */
  id: string;
  name: string;
  labels: Labels;
  /** The frame object: a frame mutated in place (a CircularDataFrame) stays the same object. */
  frame: object;
  /** Grafana Live frames (StreamingDataFrame, or a frame seen before) grow at the end. */
  live: boolean;
  times: ArrayLike<unknown>;
  values: Field['values'];
  steps: StepSource | null;
  /** A band around the curve, row by row with `values` (a group of runs' min and max: the bridge's groups table). */
  band?: { lo: ArrayLike<unknown>; hi: ArrayLike<unknown> };
}

/** A curve as the panel holds it between updates. */
export interface HeldCurve {
  id: string;
  name: string;
  color: string;
  data: SeriesData;
  /** Mean x distance between points: the unit of the time-weighted EMA. */
  dxRef: number | undefined;
  /** Drawn around the curve instead of the smoothing envelope. */
  band?: Band;
}

/**
 * How the last update changed the curves: `structure` (series added, removed
 * or renamed, or settings changed: the full option is set), `append` (live
 * points added at the end), `data` (values replaced, e.g. a refreshed query),
 * `unchanged`. Only `structure` sets the whole option; the others set data only.
 */
export type UpdateKind = 'structure' | 'append' | 'data' | 'unchanged';
