import { FieldType, getFieldDisplayName, type DataFrame, type Field, type Labels } from '@grafana/data';
import type { LiveSeriesFrame } from '../../types/api';
import type { CurveSource, StepSource } from '../types/curves';
import type { XAxisSource } from '../types/options';
import { automaticSeriesName, decodeCurvestreamLabels, formatSeriesName, seriesKey } from './labels';

export interface FrameReadOptions {
  xAxis: XAxisSource;
  stepField: string;
  /** The series name template; empty = automatic. */
  seriesName: string;
  /**
   * Replaces dashboard variables in the template, given a series' labels:
   * the panel passes Grafana's `replaceVariables` with the labels as scoped
   * variables, so `${run}` is the series' run even when the dashboard has a
   * variable of that name.
   */
  interpolate?: (template: string, labels: Labels) => string;
}

export interface FoundCurves {
  sources: CurveSource[];
  /** Why some data is not drawn (no time field, no step field). */
  notes: string[];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Is this the step field? By name (a pivoted Flux table, a Grafana Live
 * frame), by Flux's `_field` label, or by an InfluxQL name such as
 * `cs_scalar.step {run=...}`.
 */
export function isStepField(field: Field, frame: DataFrame, stepField: string): boolean {
  if (field.type !== FieldType.number || stepField === '') return false;
  if (field.name === stepField || field.labels?._field === stepField) return true;
  const suffix = new RegExp(`\\.${escapeRegExp(stepField)}(?:$|\\s|\\{)`);
  const names = [field.config?.displayNameFromDS];
  if (frame.fields.filter((f) => f.type === FieldType.number).length === 1) names.push(frame.name);
  return names.some((n) => typeof n === 'string' && (n === stepField || suffix.test(n)));
}

function timeFieldOf(frame: DataFrame): Field | undefined {
  return frame.fields.find((f) => f.type === FieldType.time);
}

/** Steps by time, for a step field that lives in a frame of its own. */
function stepsByTime(times: ArrayLike<unknown>, steps: ArrayLike<unknown>): Map<number, number> {
  const out = new Map<number, number>();
  const n = Math.min(times.length, steps.length);
  for (let i = 0; i < n; i++) {
    const t = times[i];
    const s = steps[i];
    if (typeof t === 'number' && typeof s === 'number') out.set(t, s);
  }
  return out;
}

interface StepCandidate {
  key: string;
  frame: DataFrame;
  field: Field;
  times: ArrayLike<unknown>;
}

/** The step values of a value field: from its own frame (same labels first), else from a sibling frame. */
function stepSourceFor(frame: DataFrame, field: Field, key: string, candidates: readonly StepCandidate[]): StepSource | null {
  const inFrame = candidates.filter((c) => c.frame === frame);
  const own = inFrame.find((c) => c.key === key) ?? (inFrame.length === 1 ? inFrame[0] : undefined);
  if (own) return { kind: 'aligned', values: own.field.values };
  const sibling = candidates.find((c) => c.key === key);
  return sibling ? { kind: 'byTime', steps: stepsByTime(sibling.times, sibling.field.values) } : null;
}

/** Is this frame one that Grafana Live keeps growing? */
function isStreamingFrame(frame: DataFrame, previous: ReadonlySet<object>): boolean {
  return 'packetInfo' in frame || previous.has(frame);
}

/**
 * The curves in the panel's frames: every numeric field that is not the step
 * field, with the time field of its frame. Works for Flux (one frame per
 * series, `_time` + `_value`, tags as labels), InfluxQL (`Time` + `Value`,
 * tags as labels) and Grafana Live frames (one wide frame, a value and a step
 * field per label set). `previousFrames` are the frame objects of the last
 * update: a frame seen again was mutated in place and only grows.
 */
export function findCurveSources(
  frames: readonly DataFrame[],
  options: FrameReadOptions,
  previousFrames: ReadonlySet<object> = new Set(),
): FoundCurves {
  const notes: string[] = [];
  const candidates: StepCandidate[] = [];
  const timed: { frame: DataFrame; time: Field }[] = [];
  let withoutTime = 0;
  for (const frame of frames) {
    const time = timeFieldOf(frame);
    if (!time) {
      if (frame.fields.some((f) => f.type === FieldType.number)) withoutTime++;
      continue;
    }
    timed.push({ frame, time });
    for (const field of frame.fields) {
      if (isStepField(field, frame, options.stepField)) {
        candidates.push({ key: seriesKey(field.labels, frame.refId), frame, field, times: time.values });
      }
    }
  }
  if (withoutTime > 0) notes.push(`${withoutTime} frame${withoutTime === 1 ? '' : 's'} without a time field left out`);

  const sources: CurveSource[] = [];
  const seen = new Map<string, number>();
  let withoutStep = 0;
  for (const { frame, time } of timed) {
    const groups = groupSources(frame, time, options);
    if (groups) {
      sources.push(...groups);
      continue;
    }
    for (const field of frame.fields) {
      if (field.type !== FieldType.number || isStepField(field, frame, options.stepField)) continue;
      const key = seriesKey(field.labels, frame.refId);
      const steps = stepSourceFor(frame, field, key, candidates);
      if (options.xAxis === 'field' && !steps) {
        withoutStep++;
        continue;
      }
      const labels = decodeCurvestreamLabels(field.labels);
      const parts = { labels, fieldName: field.name, displayName: getFieldDisplayName(field, frame, frames as DataFrame[]) };
      const template = options.seriesName.trim() ? (options.interpolate?.(options.seriesName, labels) ?? options.seriesName) : '';
      const name = template ? formatSeriesName(template, parts) : automaticSeriesName(parts);
      const baseId = JSON.stringify([frame.refId ?? '', frame.name ?? '', field.name, key]);
      const count = (seen.get(baseId) ?? 0) + 1;
      seen.set(baseId, count);
      sources.push({
        id: count === 1 ? baseId : `${baseId}#${count}`,
        name: name || field.name,
        labels,
        frame,
        live: isStreamingFrame(frame, previousFrames),
        times: time.values,
        values: field.values,
        steps,
      });
    }
  }
  if (withoutStep > 0) {
    notes.push(`${withoutStep} series without a "${options.stepField}" field left out (x axis: ${options.stepField})`);
  }
  return { sources, notes };
}

/**
 * A frame of the bridge's groups table (`GET /api/v1/groups/table`, read by a table data source): a `mean`
 * field with `min` and `max` beside it, a row per group and pixel column. Each value of its `group` field
 * (a string) becomes one curve, the mean, with the min–max as its band; the other columns are not drawn.
 * Null for any other frame.
 */
export function groupSources(frame: DataFrame, time: Field, options: FrameReadOptions): CurveSource[] | null {
  const numeric = (name: string) => frame.fields.find((f) => f.name === name && f.type === FieldType.number);
  const mean = numeric('mean');
  const lo = numeric('min');
  const hi = numeric('max');
  if (!mean || !lo || !hi) return null;
  const groupField = frame.fields.find((f) => f.name === 'group' && f.type === FieldType.string);
  const step = frame.fields.find((f) => isStepField(f, frame, options.stepField));
  if (options.xAxis === 'field' && !step) return [];
  const rows = new Map<string, number[]>();
  for (let i = 0; i < time.values.length; i++) {
    const name = groupField ? String(groupField.values[i]) : (frame.name ?? mean.name);
    const list = rows.get(name);
    if (list) list.push(i);
    else rows.set(name, [i]);
  }
  return [...rows].map(([name, at]) => {
    const pick = (values: ArrayLike<unknown>) => at.map((i) => values[i]);
    return {
      id: JSON.stringify([frame.refId ?? '', frame.name ?? '', 'group', name]),
      name,
      labels: { group: name },
      frame,
      live: false,
      times: pick(time.values),
      values: pick(mean.values) as Field['values'],
      steps: step ? { kind: 'aligned', values: pick(step.values) } : null,
      band: { lo: pick(lo.values), hi: pick(hi.values) },
    };
  });
}

function stepAt(steps: StepSource | null, index: number, time: number): number {
  if (!steps) return NaN;
  const s = steps.kind === 'aligned' ? steps.values[index] : steps.steps.get(time);
  return typeof s === 'number' ? s : NaN;
}

/**
 * The points of a source from row `from` on, in the bridge's live-frame shape
 * (so the core's `liveFrameToSeries` turns them into a sorted series). Rows
 * without a value (null: a wide frame's gap) or without a time are skipped;
 * NaN and ±Inf are kept. With x = step field, rows without a step are skipped.
 */
export function readSourcePoints(source: CurveSource, xAxis: XAxisSource, from = 0): LiveSeriesFrame {
  const out: LiveSeriesFrame = { key: source.id, step: [], time_ms: [], y: [] };
  const n = Math.min(source.times.length, source.values.length);
  for (let i = Math.max(0, from); i < n; i++) {
    const t = source.times[i];
    const v: unknown = source.values[i];
    if (typeof t !== 'number' || typeof v !== 'number') continue;
    const step = stepAt(source.steps, i, t);
    if (xAxis === 'field' && !Number.isFinite(step)) continue;
    out.step.push(step);
    out.time_ms.push(t);
    out.y.push(v);
  }
  return out;
}
