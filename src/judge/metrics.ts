/**
 * The metrics a budget can name, and where their samples come from in an Analysis. Two kinds:
 *
 * - distributions (the speed metrics of SPEC §6): samples in ms, grouped by labels; a budget
 *   scope selects groups, their samples are pooled (across runs too) and percentiles come from
 *   an HDR histogram over the pool;
 * - single values (the Track B scorecard rows, a few API counters, the turnover window's
 *   percentiles and swap rate): one value per run.
 */
import { type Analysis, SPEED_METRIC_KEYS } from '../analyze/schema.ts';
import { SPEED_METRIC_INFO } from '../analyze/speed.ts';

export type Stat = 'p' | 'avg' | 'min' | 'max' | 'count' | 'rate' | 'value';

export interface DistributionMetric {
  kind: 'distribution';
  name: string;
  unit: 'ms';
  labels: string[];
  /** What SPEC §6 says: judged or report-only (the default mode of a budget on it). */
  role: 'judged' | 'report';
  description: string;
}

export interface ValueMetric {
  kind: 'value';
  name: string;
  unit: string;
  /** The statistic names a budget may use for it (`value` always). */
  stats: Stat[];
  description: string;
  read(analysis: Analysis): number | null;
  /** Words that must stay beside the value (a projection: `projected to 50 sessions; …`). */
  qualify?(analysis: Analysis): string | null;
}

export type BudgetMetric = DistributionMetric | ValueMetric;

/** A single-value metric; `read` gives its value in one run's analysis (null: that run has none). */
const valueMetric = (
  name: string,
  unit: string,
  stats: Stat[],
  description: string,
  read: ValueMetric['read'],
): ValueMetric => ({ kind: 'value', name, unit, stats, description, read });

/** A Track B scorecard row as a budget metric: `scorecard.<row id>`, its measured value. */
const scorecardMetric = (id: string, unit: string, stats: Stat[], description: string): ValueMetric => ({
  ...valueMetric(
    `scorecard.${id}`,
    unit,
    stats,
    description,
    (a) => a.scorecard.rows.find((r) => r.id === id)?.measured ?? null,
  ),
  // A headroom projected from fewer sessions says so wherever its value is shown.
  qualify: (a) => {
    const row = a.scorecard.rows.find((r) => r.id === id);
    if (!row?.projected) return null;
    const observed =
      row.observed === null || row.observed === undefined
        ? ''
        : `; measured ${row.observed}% at ${row.observedAt}`;
    return `projected to ${a.scorecard.at} sessions${observed}`;
  },
});

const VALUE_METRICS: ValueMetric[] = [
  scorecardMetric('rest-core-headroom', '%', ['value'], 'REST core headroom at 50 sessions (projected)'),
  scorecardMetric('graphql-headroom', '%', ['value'], 'GraphQL headroom at 50 sessions (projected)'),
  scorecardMetric('peak-concurrency', 'in flight', ['value', 'max'], 'peak concurrent API calls'),
  scorecardMetric('max-1s', 'req/s', ['value', 'rate'], 'most requests started in any 1 s window'),
  scorecardMetric('max-10s', 'req/s', ['value', 'rate'], 'most requests per second over any 10 s window'),
  scorecardMetric(
    'writes-per-minute',
    'writes/min',
    ['value', 'rate'],
    'most REST writes in any 60 s window',
  ),
  scorecardMetric('limited-answers', 'answers', ['value', 'count'], '403 / 429 / retry-after answers'),
  valueMetric('api.calls', 'calls', ['value', 'count'], 'API calls', (a) => a.api.totals.calls),
  valueMetric(
    'api.errors',
    'calls',
    ['value', 'count'],
    'API calls answered ≥ 400',
    (a) => a.api.totals.errors,
  ),
];

/** A turnover window row's percentile (SPEC §6 turnover metrics), null without a window. */
const turnoverWindow =
  (operation: string, stat: 'p50' | 'p95') =>
  (a: Analysis): number | null =>
    a.turnover?.window?.rows.find((r) => r.operation === operation)?.latency?.[stat] ?? null;

const TURNOVER_OPERATIONS: Array<[string, string, string]> = [
  ['wake', 'time-to-wake', 'time to wake (park → awake)'],
  ['wake_first_touch', 'wake-first-touch', "a woken session's first request"],
  ['park', 'park', 'park (snapshot and free)'],
  ['step', 'step', 'one profile step'],
];

const TURNOVER_METRICS: ValueMetric[] = [
  valueMetric(
    'turnover.swaps-done',
    '%',
    ['value', 'min'],
    'swaps done of those asked in the steady turnover window',
    (a) => a.turnover?.window?.swaps.donePct ?? null,
  ),
  valueMetric(
    'turnover.given-up',
    'operations',
    ['value', 'count'],
    'actor operations that failed for good (reaction give_up), whole run',
    (a) => a.turnover?.failures.byReaction.give_up ?? null,
  ),
  ...TURNOVER_OPERATIONS.flatMap(([operation, slug, what]) =>
    (['p50', 'p95'] as const).map((stat) =>
      valueMetric(
        `turnover.${slug}.${stat}`,
        'ms',
        ['value', 'max'],
        `${stat} of ${what} in the steady turnover window`,
        turnoverWindow(operation, stat),
      ),
    ),
  ),
];

export const BUDGET_METRICS: ReadonlyMap<string, BudgetMetric> = new Map<string, BudgetMetric>([
  ...SPEED_METRIC_KEYS.map((name): [string, BudgetMetric] => [
    name,
    { kind: 'distribution', name, unit: 'ms', ...SPEED_METRIC_INFO[name] },
  ]),
  ...[...VALUE_METRICS, ...TURNOVER_METRICS].map((m): [string, BudgetMetric] => [m.name, m]),
]);

export function knownMetricNames(): string[] {
  return [...BUDGET_METRICS.keys()];
}

export interface SampleGroup {
  labels: Record<string, string>;
  values: number[];
}

/** Every group of a distribution metric across the inputs (their samples pool when judged). */
export function distributionGroups(name: string, analyses: readonly Analysis[]): SampleGroup[] {
  const out: SampleGroup[] = [];
  for (const a of analyses) {
    const metric = a.speed?.metrics[name as keyof NonNullable<Analysis['speed']>['metrics']];
    if (metric) for (const g of metric.groups) out.push({ labels: g.labels, values: g.values });
  }
  return out;
}

/** Values of a label key seen in any speed metric of the inputs (for `per:`). */
export function labelValuesSeen(key: string, analyses: readonly Analysis[]): Set<string> {
  const seen = new Set<string>();
  for (const a of analyses) {
    for (const metric of Object.values(a.speed?.metrics ?? {})) {
      for (const g of metric.groups) if (g.labels[key] !== undefined) seen.add(g.labels[key]);
    }
  }
  return seen;
}
