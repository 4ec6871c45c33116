/**
 * The metrics `compare` and the matrix read out of an Analysis, each with its unit and the
 * direction that is worse. Judged metrics are the ones a regression fails the command on: the
 * Track B scorecard rows (SPEC §6) and, when the run carries them, judged budget rows. Every
 * other metric is reported with the same statistics but never changes the exit code.
 */
import type { Analysis, AnalysisPercentiles } from '../analyze/schema.ts';

export type Better = 'lower' | 'higher';

export interface MetricDef {
  /** Stable id, e.g. `track-b.peak-concurrency`, `api.points-per-hour.core`. */
  id: string;
  title: string;
  unit: string;
  /** Which way is better; the other way is a regression. */
  better: Better;
  judged: boolean;
  group: 'scorecard' | 'cost' | 'latency' | 'spans' | 'speed' | 'turnover';
}

export interface MetricValue {
  def: MetricDef;
  value: number | null;
}

/** `>=` limits want more (headroom); `<`, `<=` and `==` (exactly 0 answers) want less. */
export function betterFromComparison(comparison: string): Better {
  return comparison === '>=' || comparison === '>' ? 'higher' : 'lower';
}

const PERCENTILE_KEYS = ['p50', 'p95'] as const;

function isPercentiles(value: unknown): value is AnalysisPercentiles {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.count === 'number' && typeof v.p50 === 'number' && typeof v.p95 === 'number';
}

/**
 * Percentile blocks anywhere in an unknown document (analysis.speed, analysis.turnover: their
 * shapes belong to their modules): every `{count, p50, p95, ...}` object becomes two metrics,
 * named by its path. Lower is better for all of them (latencies).
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

/** Every metric of one analysis, judged ones first. */
export function extractMetrics(a: Analysis): MetricValue[] {
  const out: MetricValue[] = [];
  const push = (def: MetricDef, value: number | null | undefined) =>
    out.push({ def, value: value === undefined || value === null || !Number.isFinite(value) ? null : value });

  for (const row of a.scorecard.rows) {
    push(
      {
        id: `track-b.${row.id}`,
        title: row.title,
        unit: row.unit,
        better: betterFromComparison(row.comparison),
        judged: true,
        group: 'scorecard',
      },
      row.measured,
    );
  }

  const api = a.api;
  const cost = (id: string, title: string, unit: string, better: Better, value: number | null | undefined) =>
    push({ id, title, unit, better, judged: false, group: 'cost' }, value);
  cost('api.calls', 'API calls', 'calls', 'lower', api.totals.calls);
  cost('api.points', 'primary-limit points', 'points', 'lower', api.totals.points);
  for (const [resource, p] of Object.entries(api.projection.byResource).sort(([x], [y]) =>
    x < y ? -1 : 1,
  )) {
    cost(
      `api.points-per-hour.${resource}`,
      `${resource} points per hour`,
      'points/h',
      'lower',
      p.pointsPerHour,
    );
    cost(
      `api.sessions-that-fit.${resource}`,
      `sessions that fit under the ${resource} limit`,
      'sessions',
      'higher',
      p.sessionsThatFit,
    );
  }
  cost(
    'api.polling-floor.mean',
    'calls per session per poll cycle (mean)',
    'calls',
    'lower',
    api.pollingFloor.perSessionCycle.all?.mean,
  );
  cost(
    'api.shared-per-cycle.mean',
    'shared calls per poll cycle (mean)',
    'calls',
    'lower',
    api.pollingFloor.sharedPerCycle.all?.mean,
  );
  cost(
    'api.not-modified-pct',
    'conditional requests answered 304',
    '%',
    'higher',
    api.conditional.notModifiedPct,
  );
  cost('api.errors', 'answers ≥ 400', 'calls', 'lower', api.totals.errors);
  cost('api.writes', 'REST writes', 'calls', 'lower', api.totals.writes);
  const dashboard = api.counts.bySource.dashboard?.calls;
  if (dashboard !== undefined) cost('api.dashboard-calls', 'dashboard calls', 'calls', 'lower', dashboard);

  for (const [protocol, p] of Object.entries(api.latency)) {
    if (p === null) continue;
    for (const k of PERCENTILE_KEYS) {
      push(
        {
          id: `api.latency.${protocol}.${k}`,
          title: `API call latency (${protocol}) ${k}`,
          unit: 'ms',
          better: 'lower',
          judged: false,
          group: 'latency',
        },
        p[k],
      );
    }
  }

  for (const span of a.spans.byName) {
    if (span.latency === null) continue;
    push(
      {
        id: `span.${span.name}.p95`,
        title: `${span.name} p95`,
        unit: 'ms',
        better: 'lower',
        judged: false,
        group: 'spans',
      },
      span.latency.p95,
    );
  }

  for (const [key, group] of [
    ['speed', 'speed'],
    ['turnover', 'turnover'],
  ] as const) {
    for (const { path, percentiles } of percentileBlocks((a as Record<string, unknown>)[key], key)) {
      for (const k of PERCENTILE_KEYS) {
        push(
          { id: `${path}.${k}`, title: `${path} ${k}`, unit: 'ms', better: 'lower', judged: false, group },
          percentiles[k],
        );
      }
    }
  }
  return out;
}
