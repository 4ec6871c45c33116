/**
 * The shape of the report data (built by model.ts, drawn by client/main.ts). Self-contained:
 * the browser code type-checks against it without Node's types (what it imports imports nothing).
 */
import type { BracketRow } from '../results/bracket-row.ts';

export interface ScorecardRowData {
  id: string;
  title: string;
  measured: number | null;
  limit: number;
  comparison: '>=' | '<' | '<=' | '==';
  unit: string;
  verdict: 'pass' | 'fail' | 'unknown';
  basis: string;
  /** The figure as every report shows it (a projection says so, the measured figure beside it). */
  shown: string;
  projected?: boolean;
}

export type BracketRowData = BracketRow;

export interface PruningData {
  threshold: number;
  metrics: string;
  decisions: Array<{
    id: string;
    kept: boolean;
    representative: boolean;
    neighbours: string[];
    reason: string;
  }>;
}

export interface Percentiles {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
}

export interface LatencyGroup {
  id: string;
  title: string;
  explain: string;
  rows: Array<{ name: string; p: Percentiles }>;
}

/** Something that happened at a moment of the run, drawn on every timeline. */
export interface TimelineMarker {
  tMs: number;
  label: string;
  kind: 'restart' | 'ready' | 'fault' | 'marker';
}

export interface GaugeGroup {
  name: string;
  /** The label that varies between the lines (e.g. `state`). */
  by: string;
  lines: Array<{ label: string; t: number[]; v: number[] }>;
}

/** A budget check row (docs/budgets.md), when the results carry them. */
export interface BudgetRow {
  budget?: string;
  metric: string;
  scope: string;
  /** Limits by statistic, in the metric's unit (ms for durations), when known. */
  limits?: Record<string, number>;
  measured: string;
  limit: string;
  verdict: 'pass' | 'fail' | 'unknown';
  judged: boolean;
}

/**
 * Runs over time (a speed run): one row per session, each run from its creation to its end, and
 * what happened around restarts. Times in run ms.
 */
export interface RunsOverTime {
  durationMs: number;
  sessions: string[];
  /** `session`: index into `sessions`. */
  runs: Array<{
    session: number;
    createdMs: number;
    activityMs: number | null;
    endedMs: number | null;
    status: string | null;
  }>;
  restarts: Array<{ kind: string; killMs: number; readyMs: number | null }>;
  recoveries: Array<{
    session: number;
    kind: string;
    killMs: number | null;
    lostMs: number | null;
    retryMs: number | null;
    eventMs: number;
  }>;
  unrecovered: Array<{
    session: number;
    kind: string;
    killMs: number | null;
    lostMs: number | null;
    status: string | null;
    errorCode: string | null;
    open: boolean;
  }>;
  skipped: Array<{ session: number | null; tMs: number }>;
  /** Runs past the analysis' timeline limit, not drawn. */
  leftOut: number;
}

/** One stacked bar per recovery: the control plane's share, the provider's, the budget line. */
export interface RecoverySplit {
  bars: Array<{
    label: string;
    adapter: string;
    kind: string;
    controlPlaneMs: number;
    providerMs: number;
    /** The judged control-plane limit for this recovery's scope (p95), when a budget has one. */
    limitMs: number | null;
  }>;
  /** Cut runs never recovered: no bar, named. */
  unrecovered: string[];
  /** Which budget set the line comes from. */
  budget: string | null;
}

export interface UnitReport {
  id: string;
  heading: string;
  whatItTells: string | null;
  runs: number;
  seed: number | null;
  dir: string | null;
  verdict: 'pass' | 'fail' | 'unknown';
  verdictWords: string;
  /** How the run's trace ended: `completed`, or `interrupted`/`failed`/null (no footer): partial. */
  ended: 'completed' | 'interrupted' | 'failed' | null;
  /** Whether `verdict` is the Track B scorecard's (an A2 cell) or the unit's other budgets'. */
  scorecardJudged: boolean;
  projected: boolean;
  figures: Array<[string, string]>;
  bracket: BracketRowData[];
  scorecard: ScorecardRowData[];
  budgets: BudgetRow[] | null;
  durationMs: number;
  sessions: number;
  calls: { binMs: number; values: number[] };
  calls10s: { binMs: number; values: number[] };
  first60s: number[];
  perSession: { ids: string[]; calls: number[]; unattributed: number; more: number };
  burn: { binMs: number; resources: Array<{ resource: string; points: number[]; limit: number | null }> };
  latency: LatencyGroup[];
  gauges: GaugeGroup[];
  /** One group per speed metric (time to first activity, boot, ...), series per label set. */
  speed: LatencyGroup[];
  /** Whether the run made GitHub calls (no cost charts when it made none). */
  githubCalls: number;
  runsOverTime: RunsOverTime | null;
  recoverySplit: RecoverySplit | null;
  markers: TimelineMarker[];
  turnover: { latency: LatencyGroup | null; states: GaugeGroup | null } | null;
  warnings: string[];
}

export interface ScaleMetric {
  id: string;
  title: string;
  unit: string;
  better: 'lower' | 'higher';
}

export interface ReportData {
  version: number;
  kind: 'run' | 'matrix';
  title: string;
  source: string;
  generator: string;
  overall: { verdict: 'pass' | 'fail' | 'unknown'; words: string };
  units: UnitReport[];
  scale: {
    metrics: ScaleMetric[];
    scenarios: Array<{ id: string; title: string }>;
    cells: Array<{
      id: string;
      scenario: string;
      topology: string;
      scale: number;
      values: Record<string, number | null>;
    }>;
  } | null;
  pruning: PruningData | null;
  overrides: string[];
  repeats: number;
}
