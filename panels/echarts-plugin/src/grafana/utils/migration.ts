import type { PanelMigrationHandler } from '@grafana/data';
import { clampSmoothing } from '../../core/smoothing';
import { DEFAULT_OPTIONS } from '../constants/defaults';
import type { PanelOptions } from '../types/options';

type MigrationModel = Parameters<PanelMigrationHandler<Partial<PanelOptions>>>[0];

type Stored = Partial<Record<keyof PanelOptions, unknown>> & Record<string, unknown>;

function pick<T>(value: unknown, allowed: readonly T[], fallback: T): T {
  return allowed.includes(value as T) ? (value as T) : fallback;
}

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function text(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

/**
 * Options as saved in a dashboard, made whole: every option present, each
 * value of the right kind (else its default), smoothing within 0..0.999.
 * `xAxis: "step"`, the bridge's word for it, means the `step` field.
 */
export function normalizeOptions(stored: unknown): PanelOptions {
  const o: Stored = stored && typeof stored === 'object' ? (stored as Stored) : {};
  const d = DEFAULT_OPTIONS;
  const xAxis = o.xAxis === 'step' ? 'field' : pick(o.xAxis, ['time', 'field'] as const, d.xAxis);
  const smoothing = typeof o.smoothing === 'number' ? clampSmoothing(o.smoothing) : d.smoothing;
  return {
    xAxis,
    stepField: text(o.stepField, d.stepField).trim() || d.stepField,
    seriesName: text(o.seriesName, d.seriesName),
    smoothing,
    smoothingKind: pick(o.smoothingKind, ['ema', 'time'] as const, d.smoothingKind),
    showEnvelope: bool(o.showEnvelope, d.showEnvelope),
    logY: bool(o.logY, d.logY),
    ignoreOutliers: bool(o.ignoreOutliers, d.ignoreOutliers),
    zoomSlider: bool(o.zoomSlider, d.zoomSlider),
    zoomSetsTimeRange: bool(o.zoomSetsTimeRange, d.zoomSetsTimeRange),
  };
}

/**
 * Grafana calls this when a dashboard was saved with another plugin version
 * (or none: provisioned JSON). Every version since the first release (0.1.0)
 * stores the same option names, so migrating is making the options whole;
 * a later rename adds its case here, keyed on `panel.pluginVersion`.
 */
export function migrateOptions(panel: MigrationModel): PanelOptions {
  return normalizeOptions(panel.options);
}
