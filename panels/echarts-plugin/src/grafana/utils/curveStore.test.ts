// @vitest-environment happy-dom
import { CircularDataFrame, FieldType, StreamingDataFrame, toDataFrame, type DataFrame } from '@grafana/data';
import { describe, expect, it } from 'vitest';
import type { FrameReadOptions } from './frames';
import { findCurveSources } from './frames';
import { CurveStore } from './curveStore';

const TIME: FrameReadOptions = { xAxis: 'time', stepField: 'step', seriesName: '' };

function update(store: CurveStore, frames: DataFrame[], options = TIME) {
  return store.update(findCurveSources(frames, options, store.previousFrames).sources);
}

function liveFrame(maxLength: number) {
  return StreamingDataFrame.fromDataFrameJSON(
    {
      schema: {
        fields: [
          { name: 'time', type: FieldType.time },
          { name: 'value', type: FieldType.number, labels: { run: 'r1', metric: 'loss' } },
          { name: 'step', type: FieldType.number, labels: { run: 'r1', metric: 'loss' } },
        ],
      },
      data: { values: [[1000, 2000], [0.9, 0.8], [1, 2]] },
    },
    { maxLength },
  );
}

describe('CurveStore', () => {
  it('appends the new rows of a Grafana Live frame pushed in place', () => {
    const store = new CurveStore('time');
    const frame = liveFrame(100);
    expect(update(store, [frame]).kind).toBe('structure');
    frame.push({ data: { values: [[3000, 4000], [0.7, 0.6], [3, 4]] } });
    const next = update(store, [frame]);
    expect(next.kind).toBe('append');
    expect(next.curves[0]!.data).toEqual({ x: [1000, 2000, 3000, 4000], y: [0.9, 0.8, 0.7, 0.6], step: [1, 2, 3, 4], timeMs: [1000, 2000, 3000, 4000] });
    expect(update(store, [frame]).kind).toBe('unchanged');
  });

  it('drops what a bounded live buffer dropped', () => {
    const store = new CurveStore('field');
    const frame = liveFrame(3);
    update(store, [frame], { ...TIME, xAxis: 'field' });
    frame.push({ data: { values: [[3000, 4000], [0.7, 0.6], [3, 4]] } });
    const next = update(store, [frame], { ...TIME, xAxis: 'field' });
    expect(next.kind).toBe('append');
    expect(next.curves[0]!.data.x).toEqual([2, 3, 4]);
  });

  it('follows a CircularDataFrame mutated in place', () => {
    const frame = new CircularDataFrame({ append: 'tail', capacity: 10 });
    frame.addField({ name: 'time', type: FieldType.time });
    frame.addField({ name: 'value', type: FieldType.number });
    frame.add({ time: 1, value: 1 });
    const store = new CurveStore('time');
    update(store, [frame]);
    frame.add({ time: 2, value: 2 });
    const next = update(store, [frame]);
    expect(next.kind).toBe('append');
    expect(next.curves[0]!.data.y).toEqual([1, 2]);
  });

  it('reads a new query result again, keeping the chart’s structure and colours', () => {
    const store = new CurveStore('time');
    const frame = (values: number[]) =>
      toDataFrame({
        fields: [
          { name: '_time', type: FieldType.time, values: [1, 2] },
          { name: '_value', type: FieldType.number, values, labels: { run: 'r1' } },
        ],
      });
    const first = update(store, [frame([1, 2])]);
    const second = update(store, [frame([1, 5])]);
    expect(second.kind).toBe('data');
    expect(second.curves[0]!.data.y).toEqual([1, 5]);
    expect(second.curves[0]!.color).toBe(first.curves[0]!.color);
  });

  it('reports a structure change when series come or go', () => {
    const store = new CurveStore('time');
    const f = (run: string) =>
      toDataFrame({
        fields: [
          { name: '_time', type: FieldType.time, values: [1] },
          { name: '_value', type: FieldType.number, values: [1], labels: { run } },
        ],
      });
    update(store, [f('a')]);
    expect(update(store, [f('a'), f('b')]).kind).toBe('structure');
    expect(update(store, [f('b')]).kind).toBe('structure');
  });
});
