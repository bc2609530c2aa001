import { configValueText } from '../core/groups';

export { configValueText };

/** The runs table's filters, evaluated by the bridge (`GET /api/v1/runs/table`, runs_table.py). */
export interface RunFilter {
  /** Words that must all appear (any case) in the run's project, name, tags, group, host, state or config. */
  search: string;
  tag: string;
  group: string;
  configKey: string;
  /** Compared with configValueText(value); empty = any run that has the key. */
  configValue: string;
  /** Only runs with firing alerts. */
  alerting?: boolean;
}
