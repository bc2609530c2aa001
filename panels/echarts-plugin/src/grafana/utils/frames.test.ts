// @vitest-environment happy-dom
import { FieldType, StreamingDataFrame, toDataFrame, type DataFrame } from '@grafana/data';
import { describe, expect, it } from 'vitest';
import { CurveStore } from './curveStore';
import { findCurveSources, isStepField, readSourcePoints, type FrameReadOptions } from './frames';
import { labelsAsScopedVars } from './labels';

const TIME: FrameReadOptions = { xAxis: 'time', stepField: 'step', seriesName: '' };
const STEP: FrameReadOptions = { ...TIME, xAxis: 'field' };

/** What Grafana's InfluxDB data source gives for a Flux query without pivot: one frame per series. */
function fluxFrame(field: string, run: string, times: number[], values: number[]): DataFrame {
  return toDataFrame({
    refId: 'A',
    fields: [
      { name: '_time', type: FieldType.time, values: times },
      {
        name: '_value',
        type: FieldType.number,
        values,
        labels: { _field: field, _measurement: 'cs_scalar', metric: 'train/loss', project: 'mnist', run },
      },
    ],
  });
}

describe('findCurveSources', () => {
  it('draws one curve per Flux frame, named "run metric"', () => {
    const frames = [fluxFrame('value', 'r1', [1, 2], [0.5, 0.4]), fluxFrame('value', 'r2', [1, 2], [0.7, 0.6])];
    const { sources, notes } = findCurveSources(frames, TIME);
    expect(sources.map((s) => s.name)).toEqual(['r1 train/loss', 'r2 train/loss']);
    expect(notes).toEqual([]);
    expect(new Set(sources.map((s) => s.id)).size).toBe(2);
  });

  it('reads InfluxQL frames (Time + Value, tags as labels) and decodes curvestream’s tag encoding', () => {
    const frame = toDataFrame({
      name: 'cs_scalar.value',
      fields: [
        { name: 'Time', type: FieldType.time, values: [10, 20] },
        { name: 'Value', type: FieldType.number, values: [1, 2], labels: { run: 'lr%3D0.1 100%25', metric: 'acc' } },
      ],
    });
    const { sources } = findCurveSources([frame], TIME);
    expect(sources.map((s) => s.name)).toEqual(['lr=0.1 100% acc']);
  });

  it('uses a step field of the same frame as x and does not draw it', () => {
    const frame = toDataFrame({
      fields: [
        { name: '_time', type: FieldType.time, values: [100, 200, 300] },
        { name: 'step', type: FieldType.number, values: [0, 10, 20], labels: { run: 'r1', metric: 'loss' } },
        { name: 'value', type: FieldType.number, values: [3, 2, 1], labels: { run: 'r1', metric: 'loss' } },
      ],
    });
    const { sources } = findCurveSources([frame], STEP);
    expect(sources).toHaveLength(1);
    expect(readSourcePoints(sources[0]!, 'field')).toEqual({ key: sources[0]!.id, step: [0, 10, 20], time_ms: [100, 200, 300], y: [3, 2, 1] });
  });

  it('joins the step of a sibling frame with the same labels by time (Flux without pivot)', () => {
    const frames = [fluxFrame('step', 'r1', [100, 200], [5, 6]), fluxFrame('value', 'r1', [100, 200], [0.5, 0.4])];
    const { sources } = findCurveSources(frames, STEP);
    expect(sources).toHaveLength(1);
    expect(readSourcePoints(sources[0]!, 'field').step).toEqual([5, 6]);
  });

  it('pairs each value with the step of its own label set in a Grafana Live wide frame', () => {
    const a = { run: 'a', metric: 'loss' };
    const b = { run: 'b', metric: 'loss' };
    const frame = toDataFrame({
      fields: [
        { name: 'time', type: FieldType.time, values: [1, 2] },
        { name: 'value', type: FieldType.number, values: [0.1, null], labels: a },
        { name: 'step', type: FieldType.number, values: [7, null], labels: a },
        { name: 'value', type: FieldType.number, values: [null, 0.2], labels: b },
        { name: 'step', type: FieldType.number, values: [null, 9], labels: b },
      ],
    });
    const { sources } = findCurveSources([frame], STEP);
    expect(sources.map((s) => s.name)).toEqual(['a loss', 'b loss']);
    expect(sources.map((s) => readSourcePoints(s, 'field').step)).toEqual([[7], [9]]);
  });

  it('leaves out series without a step field when x is the step field, and says so', () => {
    const { sources, notes } = findCurveSources([fluxFrame('value', 'r1', [1], [1])], STEP);
    expect(sources).toEqual([]);
    expect(notes).toEqual(['1 series without a "step" field left out (x axis: step)']);
  });

  it('names series from a template', () => {
    const { sources } = findCurveSources([fluxFrame('value', 'r1', [1], [1])], { ...TIME, seriesName: '${project}/${run}: ${_field}' });
    expect(sources[0]!.name).toBe('mnist/r1: value');
  });

  it('lets the series’ labels win over dashboard variables of the same name', () => {
    const dashboard: Record<string, string> = { run: 'All', env: 'prod' };
    // Grafana's replaceVariables: scoped variables first, then the dashboard's, unknown names left as they are
    const replaceVariables = (text: string, scoped: Record<string, { text: string }>) =>
      text.replace(/\$\{(\w+)\}/g, (whole, name: string) => scoped[name]?.text ?? dashboard[name] ?? whole);
    const interpolate = (template: string, labels: Record<string, string>) => replaceVariables(template, labelsAsScopedVars(labels));
    const { sources } = findCurveSources([fluxFrame('value', 'r1', [1], [1])], { ...TIME, seriesName: '${env} ${run}', interpolate });
    expect(sources[0]!.name).toBe('prod r1');
  });

  it('marks streaming frames and frames seen before as live', () => {
    const query = fluxFrame('value', 'r1', [1], [1]);
    const stream = StreamingDataFrame.fromDataFrameJSON({
      schema: { fields: [{ name: 'time', type: FieldType.time }, { name: 'value', type: FieldType.number }] },
      data: { values: [[1], [2]] },
    });
    expect(findCurveSources([query, stream], TIME).sources.map((s) => s.live)).toEqual([false, true]);
    expect(findCurveSources([query], TIME, new Set([query])).sources[0]!.live).toBe(true);
  });
});

describe('isStepField', () => {
  it('knows a step field by name, by Flux _field, or by an InfluxQL name', () => {
    const frame = toDataFrame({ name: 'cs_scalar.step {run=r1}', fields: [{ name: 'Value', type: FieldType.number, values: [1] }] });
    expect(isStepField(frame.fields[0]!, frame, 'step')).toBe(true);
    expect(isStepField(frame.fields[0]!, frame, 'epoch')).toBe(false);
  });
});

describe('readSourcePoints', () => {
  it('keeps NaN and ±Inf, skips missing values, and starts at a given row', () => {
    const frame = toDataFrame({
      fields: [
        { name: '_time', type: FieldType.time, values: [1, 2, 3, 4, 5] },
        { name: '_value', type: FieldType.number, values: [NaN, null, Infinity, -Infinity, 1] },
      ],
    });
    const [source] = findCurveSources([frame], TIME).sources;
    const all = readSourcePoints(source!, 'time');
    expect(all.time_ms).toEqual([1, 3, 4, 5]);
    expect(all.y).toEqual([NaN, Infinity, -Infinity, 1]);
    expect(readSourcePoints(source!, 'time', 3).time_ms).toEqual([4, 5]);
  });
});

describe('the bridge’s groups table', () => {
  /** `GET /api/v1/groups/table` as a table data source gives it: a row per group and column. */
  const table = () =>
    toDataFrame({
      refId: 'G',
      fields: [
        { name: 'group', type: FieldType.string, values: ['lr=0.1', 'lr=0.01', 'lr=0.1', 'lr=0.01'] },
        { name: 'time_ms', type: FieldType.time, values: [1000, 1000, 2000, 2000] },
        { name: 'step', type: FieldType.number, values: [0, 0, 10, 10] },
        { name: 'x', type: FieldType.number, values: [0, 0, 10, 10] },
        { name: 'mean', type: FieldType.number, values: [5, 2, 4, 1] },
        { name: 'std', type: FieldType.number, values: [1, 1, 1, 1] },
        { name: 'min', type: FieldType.number, values: [3, 1, 2, 0] },
        { name: 'max', type: FieldType.number, values: [7, 3, 6, 2] },
        { name: 'count', type: FieldType.number, values: [4, 3, 4, 3] },
      ],
    });

  it('draws one curve per group, its mean, with the min–max as its band, and nothing of the other columns', () => {
    const { sources } = findCurveSources([table()], STEP);
    expect(sources.map((s) => s.name)).toEqual(['lr=0.1', 'lr=0.01']);
    const store = new CurveStore('field');
    const { curves } = store.update(sources);
    expect(curves[0]!.data).toMatchObject({ x: [0, 10], y: [5, 4] });
    expect(curves[0]!.band).toEqual({ x: [0, 10], lo: [3, 2], hi: [7, 6] });
    expect(curves[1]!.band).toEqual({ x: [0, 10], lo: [1, 0], hi: [3, 2] });
  });

  it('draws against time too, and without a step field on a step axis draws nothing', () => {
    const { sources } = findCurveSources([table()], TIME);
    expect(new CurveStore('time').update(sources).curves[1]!.data).toMatchObject({ x: [1000, 2000], y: [2, 1] });
    const noStep = findCurveSources([table()], { ...STEP, stepField: 'epoch' });
    expect(noStep.sources).toEqual([]);
  });
});
