import { appendLivePoints, liveFrameToSeries } from '../../core/live';
import { assignColors } from '../../core/palette';
import { meanSpacing, xExtent } from '../../core/series';
import type { Band, SeriesData } from '../../types/chart';
import type { CurveSource, HeldCurve, UpdateKind } from '../types/curves';
import type { XAxisSource } from '../types/options';
import { xModeOf } from './chartModel';
import { readSourcePoints } from './frames';
import { dropOlderThan, planSourceChange, snapshotTimes, type SourceChange, type TimesSnapshot } from './streaming';

interface Held extends HeldCurve {
  snapshot: TimesSnapshot;
}

export interface StoreUpdate {
  kind: UpdateKind;
  curves: HeldCurve[];
}

function sameStructure(before: readonly HeldCurve[], after: readonly HeldCurve[]): boolean {
  if (before.length !== after.length) return false;
  return before.every((c, i) => c.id === after[i]!.id && c.name === after[i]!.name && c.color === after[i]!.color);
}

/**
 * The curves between updates of the panel's data. Each update reads only
 * what changed: new rows of live frames are appended to the held series
 * (the core's `appendLivePoints`, which skips points already held), rows a
 * bounded live buffer dropped are dropped too, and query results are read
 * again. Colours stay with their series.
 */
export class CurveStore {
  private held: Held[] = [];
  private frames = new Set<object>();

  constructor(readonly xAxis: XAxisSource) {}

  /** The frame objects of the last update: seen again, they were mutated in place. */
  get previousFrames(): ReadonlySet<object> {
    return this.frames;
  }

  get curves(): readonly HeldCurve[] {
    return this.held;
  }

  update(sources: readonly CurveSource[]): StoreUpdate {
    const byId = new Map(this.held.map((c) => [c.id, c]));
    const colors = assignColors(
      sources.map((s) => s.id),
      new Map(this.held.map((c) => [c.id, c.color])),
    );
    const changes = new Set<SourceChange['kind']>();
    const next = sources.map((source): Held => {
      const previous = byId.get(source.id);
      const change = planSourceChange(previous?.snapshot, source.times, source.live);
      changes.add(change.kind);
      const data = this.read(source, change, previous?.data);
      const extent = xExtent(data);
      const band = source.band ? this.readBand(source, data) : undefined;
      return {
        id: source.id,
        name: source.name,
        color: colors.get(source.id)!,
        data,
        dxRef: extent ? meanSpacing(extent[0], extent[1], data.x.length) : undefined,
        ...(band ? { band } : {}),
        snapshot: snapshotTimes(source.times),
      };
    });
    const structure = !sameStructure(this.held, next);
    this.held = next;
    this.frames = new Set(sources.map((s) => s.frame));
    let kind: UpdateKind = 'unchanged';
    if (structure) kind = 'structure';
    else if (changes.has('reload')) kind = 'data';
    else if (changes.has('append') || changes.has('slide')) kind = 'append';
    return { kind, curves: next };
  }

  /** The band's edges read as the curve's rows are (a table of groups: no live rows); none when they do not line up. */
  private readBand(source: CurveSource, data: SeriesData): Band | undefined {
    const mode = xModeOf(this.xAxis);
    const edge = (values: ArrayLike<unknown>) =>
      liveFrameToSeries(readSourcePoints({ ...source, values: values as CurveSource['values'] }, this.xAxis, 0), mode, null);
    const lo = edge(source.band!.lo);
    const hi = edge(source.band!.hi);
    if (lo.x.length !== data.x.length || hi.x.length !== data.x.length) return undefined;
    return { x: data.x.slice(), lo: lo.y, hi: hi.y };
  }

  private read(source: CurveSource, change: SourceChange, held: SeriesData | undefined): SeriesData {
    const mode = xModeOf(this.xAxis);
    const rows = (from: number) => liveFrameToSeries(readSourcePoints(source, this.xAxis, from), mode, null);
    if (!held || change.kind === 'reload') return rows(0);
    switch (change.kind) {
      case 'unchanged':
        return held;
      case 'append':
        return appendLivePoints(held, rows(change.from)).data;
      case 'slide':
        return appendLivePoints(dropOlderThan(held, change.firstTime), rows(change.from)).data;
    }
  }
}
