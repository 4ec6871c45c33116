/**
 * The one catalogue of named metrics: what budgets can name (src/judge/) and what `compare` and
 * the matrix measure (src/matrix/), each defined once with its unit, the direction that is
 * better and where its value is in an Analysis. Two kinds:
 *
 * - distributions (the speed metrics, docs/analysis.md#speed): samples in ms, grouped by labels;
 *   a budget scope selects groups, their samples are pooled (across runs too) and percentiles
 *   come from an HDR histogram over the pool;
 * - values: one number per run (the Track B scorecard rows, API counters, the turnover
 *   window's percentiles and swap rate).
 *
 * A new metric is an accumulator (or a finisher) that puts it in the Analysis and one entry
 * here; `compare` then measures it, and budgets can name it when it has `budgetStats`.
 */
import type { Analysis, AnalysisPercentiles } from './schema.ts';
import { SPEED_METRIC_KEYS } from './schema.ts';
import { SPEED_METRIC_INFO } from './speed.ts';

export type Better = 'lower' | 'higher';
/** The statistics a budget row may use (`p(95)`, `avg`, `max`, `count`, `rate`, `value`). */
export type Stat = 'p' | 'avg' | 'min' | 'max' | 'count' | 'rate' | 'value';
export type MetricGroup = 'scorecard' | 'cost' | 'latency' | 'spans' | 'speed' | 'turnover' | 'edges';

export interface DistributionMetric {
  kind: 'distribution';
  name: string;
  unit: 'ms';
  labels: string[];
  /** Judged or report-only (the default mode of a budget on it; docs/analysis.md#speed). */
  role: 'judged' | 'report';
  description: string;
}

export interface ValueMetric {
  kind: 'value';
  /** Stable name: what a budget names and `compare --json` reports (`scorecard.max-1s`). */
  name: string;
  /** In words, for tables and messages. */
  description: string;
  unit: string;
  better: Better;
  group: MetricGroup;
  /** A regression of it fails `compare` (exit 99): the Track B rows. */
  judged: boolean;
  /** The statistics a budget may use on it (`value` always); absent: budgets cannot name it. */
  budgetStats?: Stat[];
  /** Its value in one run's analysis (null: that run has none). */
  read(analysis: Analysis): number | null;
  /** Words that must stay beside the value wherever it is shown (a projection: `projected to 50 sessions; …`). */
  qualify?(analysis: Analysis): string | null;
  /**
   * Why the run cannot support a judgement of the value, when it says: a projection without a
   * steady window (no value at all), a turnover window too small (a value that breaches is judged
   * and fails; one that holds is not judged).
   */
  notJudged?(analysis: Analysis): string | null;
}

export type CatalogueMetric = DistributionMetric | ValueMetric;

/** `>=` limits want more (headroom); `<`, `<=` and `==` (exactly 0 answers) want less. */
export function betterFromComparison(comparison: string): Better {
  return comparison === '>=' || comparison === '>' ? 'higher' : 'lower';
}

/** A Track B scorecard row: `scorecard.<row id>`, its measured value. */
const scorecardMetric = (
  id: string,
  comparison: '>=' | '<' | '<=' | '==',
  unit: string,
  budgetStats: Stat[],
  description: string,
): ValueMetric => ({
  kind: 'value',
  name: `scorecard.${id}`,
  description,
  unit,
  better: betterFromComparison(comparison),
  group: 'scorecard',
  judged: true,
  budgetStats,
  read: (a) => a.scorecard.rows.find((r) => r.id === id)?.measured ?? null,
  notJudged: (a) => a.scorecard.rows.find((r) => r.id === id)?.notJudged ?? null,
  // A headroom projected from fewer sessions says so wherever its value is shown.
  qualify: (a) => {
    const row = a.scorecard.rows.find((r) => r.id === id);
    // A run whose GitHub had another hourly limit is judged on the 5,000/h token all the same.
    const limit =
      row?.runLimit === undefined
        ? ''
        : `on the 5,000/h token; the run's limit was ${row.runLimit.toLocaleString('en-US')}/h (${row.runLimitHeadroom ?? '–'}% against it)`;
    if (!row?.projected) return limit === '' ? null : limit;
    const observed =
      row.observed === null || row.observed === undefined
        ? ''
        : `; measured ${row.observed}% at ${row.observedAt}`;
    return `projected to ${a.scorecard.at} sessions${observed}${limit ? `; ${limit}` : ''}`;
  },
});

const cost = (
  name: string,
  description: string,
  unit: string,
  better: Better,
  read: ValueMetric['read'],
  budgetStats?: Stat[],
): ValueMetric => ({
  kind: 'value',
  name,
  description,
  unit,
  better,
  group: 'cost',
  judged: false,
  ...(budgetStats ? { budgetStats } : {}),
  read,
});

/** A turnover window row's percentile, null without a window. */
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

const turnover = (
  name: string,
  description: string,
  unit: string,
  better: Better,
  budgetStats: Stat[],
  read: ValueMetric['read'],
  ofWindow = true,
): ValueMetric => ({
  kind: 'value',
  name,
  description,
  unit,
  better,
  group: 'turnover',
  judged: false,
  budgetStats,
  read,
  // A steady window too small to judge a row that passes in it (docs/analysis.md#turnover).
  ...(ofWindow ? { notJudged: (a: Analysis) => a.turnover?.window?.notJudged ?? null } : {}),
});

type Edges = NonNullable<Analysis['edges']>;

/** What an edge figure is decides its better direction and the statistics a budget may use. */
const EDGE_KINDS = {
  share: { better: 'higher', budgetStats: ['value', 'min'] },
  cost: { better: 'lower', budgetStats: ['value', 'max'] },
  rate: { better: 'lower', budgetStats: ['value', 'rate', 'max'] },
  count: { better: 'lower', budgetStats: ['value', 'count', 'max'] },
} as const satisfies Record<string, { better: Better; budgetStats: Stat[] }>;

/** The figures of analysis.edges (docs/analysis.md#edges-any-control-plane-from-its-traffic): null without one. */
const EDGE_METRICS: readonly ValueMetric[] = (
  [
    [
      'github_calls_attributed_pct',
      'share',
      '%',
      'GitHub calls attributed to a session',
      (e) => e.attribution.github.attributedPct,
    ],
    [
      'cost_per_task_calls',
      'cost',
      'calls',
      'GitHub calls per completed session, the overhead shared over them',
      (e) => e.costPerTask.calls?.allIn ?? null,
    ],
    [
      'cost_per_task_points',
      'cost',
      'points',
      'primary-limit points per completed session, the overhead shared over them',
      (e) => e.costPerTask.points?.allIn ?? null,
    ],
    [
      'cost_per_task_tokens',
      'cost',
      'tokens',
      "model tokens per completed session, the control plane's own shared over them",
      (e) => e.costPerTask.tokens?.allIn ?? null,
    ],
    [
      'github_calls_per_active_hour',
      'rate',
      'calls/h',
      'GitHub calls per hour of the active window',
      (e) => e.activeWindow?.callsPerHour ?? null,
    ],
    [
      'points_per_active_hour',
      'rate',
      'points/h',
      'primary-limit points per hour of the active window',
      (e) => e.activeWindow?.pointsPerHour ?? null,
    ],
    [
      'tokens_per_active_hour',
      'rate',
      'tokens/h',
      'model tokens per hour of the active window',
      (e) => e.activeWindow?.tokensPerHour ?? null,
    ],
    [
      'orphaned_agents',
      'count',
      'agents',
      'agents still running after their control plane was gone',
      (e) => e.orphans.count,
    ],
    [
      'duplicated_tokens',
      'count',
      'tokens',
      'model tokens spent again on a session after a restart',
      (e) => e.duplicated.tokens,
    ],
    [
      'duplicated_writes',
      'count',
      'writes',
      'GitHub writes a session made again after a restart',
      (e) => e.duplicated.writes,
    ],
    [
      'blocked_attempts',
      'count',
      'attempts',
      'attempts to reach a host outside the world',
      (e) => e.blocked.attempts,
    ],
  ] as Array<[string, keyof typeof EDGE_KINDS, string, string, (e: Edges) => number | null]>
).map(([name, kind, unit, description, read]) => ({
  kind: 'value',
  name,
  description,
  unit,
  better: EDGE_KINDS[kind].better,
  group: 'edges',
  judged: false,
  budgetStats: [...EDGE_KINDS[kind].budgetStats],
  read: (a: Analysis) => (a.edges ? read(a.edges) : null),
}));

/** The value metrics every Analysis can be asked for, in the order compare lists them. */
export const VALUE_METRICS: readonly ValueMetric[] = [
  scorecardMetric(
    'rest-core-headroom',
    '>=',
    '%',
    ['value'],
    'REST core headroom at 50 sessions (projected)',
  ),
  scorecardMetric('graphql-headroom', '>=', '%', ['value'], 'GraphQL headroom at 50 sessions (projected)'),
  scorecardMetric('peak-concurrency', '<', 'in flight', ['value', 'max'], 'peak concurrent API calls'),
  scorecardMetric('max-1s', '<=', 'req/s', ['value', 'rate'], 'most requests started in any 1 s window'),
  scorecardMetric(
    'max-10s',
    '<=',
    'req/s',
    ['value', 'rate'],
    'most requests per second over any 10 s window',
  ),
  scorecardMetric(
    'writes-per-minute',
    '<',
    'writes/min',
    ['value', 'rate'],
    'most writes (REST and GraphQL mutations) in any 60 s window',
  ),
  scorecardMetric('limited-answers', '==', 'answers', ['value', 'count'], '403 / 429 / retry-after answers'),
  cost('api.calls', 'API calls', 'calls', 'lower', (a) => a.api.totals.calls, ['value', 'count']),
  cost('api.points', 'primary-limit points', 'points', 'lower', (a) => a.api.totals.points),
  cost(
    'api.polling-floor.mean',
    'calls per session per poll cycle (mean)',
    'calls',
    'lower',
    (a) => a.api.pollingFloor.perSessionCycle.all?.mean ?? null,
  ),
  cost(
    'api.shared-per-cycle.mean',
    'shared calls per poll cycle (mean)',
    'calls',
    'lower',
    (a) => a.api.pollingFloor.sharedPerCycle.all?.mean ?? null,
  ),
  cost(
    'api.not-modified-pct',
    'conditional requests answered 304',
    '%',
    'higher',
    (a) => a.api.conditional.notModifiedPct,
  ),
  cost('api.errors', 'API calls answered ≥ 400', 'calls', 'lower', (a) => a.api.totals.errors, [
    'value',
    'count',
  ]),
  cost('api.writes', 'writes (REST, GraphQL mutations)', 'calls', 'lower', (a) => a.api.totals.writes),
  cost(
    'api.dashboard-calls',
    'dashboard calls',
    'calls',
    'lower',
    (a) => a.api.counts.bySource.dashboard?.calls ?? null,
  ),
  turnover(
    'turnover.swaps-done',
    'swaps done of those asked in the steady turnover window',
    '%',
    'higher',
    ['value', 'min'],
    (a) => a.turnover?.window?.swaps.donePct ?? null,
  ),
  turnover(
    'turnover.given-up',
    'actor operations that failed for good (reaction give_up), whole run',
    'operations',
    'lower',
    ['value', 'count'],
    (a) => a.turnover?.failures.byReaction.give_up ?? null,
    false,
  ),
  ...TURNOVER_OPERATIONS.flatMap(([operation, slug, what]) =>
    (['p50', 'p95'] as const).map((stat) =>
      turnover(
        `turnover.${slug}.${stat}`,
        `${stat} of ${what} in the steady turnover window`,
        'ms',
        'lower',
        ['value', 'max'],
        turnoverWindow(operation, stat),
      ),
    ),
  ),
  ...EDGE_METRICS,
];

export const DISTRIBUTION_METRICS: readonly DistributionMetric[] = SPEED_METRIC_KEYS.map((name) => ({
  kind: 'distribution',
  name,
  unit: 'ms',
  ...SPEED_METRIC_INFO[name],
}));

/** Every metric a budget can name, by name. */
export const BUDGET_METRICS: ReadonlyMap<string, CatalogueMetric> = new Map<string, CatalogueMetric>([
  ...DISTRIBUTION_METRICS.map((m): [string, CatalogueMetric] => [m.name, m]),
  ...VALUE_METRICS.filter((m) => m.budgetStats).map((m): [string, CatalogueMetric] => [m.name, m]),
]);

/** A value measured in one run: a catalogue metric, or one of a family the analysis has. */
export interface MeasuredValue {
  metric: Omit<ValueMetric, 'read' | 'budgetStats'>;
  /** The title tables show (a scorecard row's own words, with its scale). */
  title: string;
  value: number | null;
}

const PERCENTILE_KEYS = ['p50', 'p95'] as const;

/**
 * Every value of one analysis, judged ones first: the catalogue's value metrics, then the
 * families whose members depend on the run (points per hour and sessions that fit per rate-limit
 * resource, latency per protocol, each span's p95, every percentile block of analysis.speed and
 * analysis.turnover).
 */
export function measureAll(a: Analysis): MeasuredValue[] {
  const out: MeasuredValue[] = [];
  const push = (metric: MeasuredValue['metric'], title: string, value: number | null | undefined) =>
    out.push({
      metric,
      title,
      value: value === undefined || value === null || !Number.isFinite(value) ? null : value,
    });
  const family = (
    name: string,
    description: string,
    unit: string,
    better: Better,
    group: MetricGroup,
    value: number | null | undefined,
  ) => push({ kind: 'value', name, description, unit, better, group, judged: false }, description, value);

  for (const metric of VALUE_METRICS) {
    // The window's percentiles come below, with every other turnover percentile.
    if (metric.group === 'turnover' && metric.unit === 'ms') continue;
    // Only runs that have a dashboard measure its calls.
    if (metric.name === 'api.dashboard-calls' && a.api.counts.bySource.dashboard === undefined) continue;
    // Only a run measured from a world's edges has edge figures.
    if (metric.group === 'edges' && a.edges === undefined) continue;
    const row =
      metric.group === 'scorecard'
        ? a.scorecard.rows.find((r) => `scorecard.${r.id}` === metric.name)
        : undefined;
    push(metric, row?.title ?? metric.description, metric.read(a));
    if (metric.name === 'api.points') {
      for (const [resource, p] of Object.entries(a.api.projection.byResource).sort(([x], [y]) =>
        x < y ? -1 : 1,
      )) {
        family(
          `api.points-per-hour.${resource}`,
          `${resource} points per hour`,
          'points/h',
          'lower',
          'cost',
          p.pointsPerHour,
        );
        family(
          `api.sessions-that-fit.${resource}`,
          `sessions that fit under the ${resource} limit`,
          'sessions',
          'higher',
          'cost',
          p.sessionsThatFit,
        );
      }
    }
  }

  for (const [protocol, p] of Object.entries(a.api.latency) as Array<[string, AnalysisPercentiles | null]>) {
    if (p === null) continue;
    for (const k of PERCENTILE_KEYS)
      family(
        `api.latency.${protocol}.${k}`,
        `API call latency (${protocol}) ${k}`,
        'ms',
        'lower',
        'latency',
        p[k],
      );
  }
  for (const span of a.spans.byName) {
    if (span.latency === null) continue;
    family(`span.${span.name}.p95`, `${span.name} p95`, 'ms', 'lower', 'spans', span.latency.p95);
  }
  for (const [key, group] of [
    ['speed', 'speed'],
    ['turnover', 'turnover'],
  ] as const) {
    for (const { path, percentiles } of percentileBlocks((a as Record<string, unknown>)[key], key)) {
      for (const k of PERCENTILE_KEYS)
        family(`${path}.${k}`, `${path} ${k}`, 'ms', 'lower', group, percentiles[k]);
    }
  }
  return out;
}

function isPercentiles(value: unknown): value is AnalysisPercentiles {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.count === 'number' && typeof v.p50 === 'number' && typeof v.p95 === 'number';
}

/**
 * Percentile blocks anywhere in an unknown document (analysis.speed, analysis.turnover: their
 * shapes belong to their modules): every `{count, p50, p95, ...}` object, named by its path.
 */
export function percentileBlocks(
  root: unknown,
  prefix: string,
): Array<{ path: string; percentiles: AnalysisPercentiles }> {
  const out: Array<{ path: string; percentiles: AnalysisPercentiles }> = [];
  const walk = (node: unknown, path: string, depth: number) => {
    if (depth > 6 || node === null || typeof node !== 'object') return;
    if (isPercentiles(node)) {
      out.push({ path, percentiles: node });
      return;
    }
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        const c = child as Record<string, unknown> | null;
        const name =
          c && typeof c === 'object'
            ? [c.name, c.metric, c.adapter, c.start, c.kind, c.operation]
                .filter((x) => typeof x === 'string')
                .join('.')
            : '';
        walk(child, `${path}.${name || i}`, depth + 1);
      });
      return;
    }
    for (const [key, child] of Object.entries(node as Record<string, unknown>)) {
      walk(child, `${path}.${key}`, depth + 1);
    }
  };
  walk(root, prefix, 0);
  return out;
}
