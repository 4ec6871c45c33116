/**
 * What `GET /metrics` exposes during a live run (docs/live-runs.md lists every family): the
 * gauges (sessions by state, calls in flight, quota remaining per resource,
 * every gauge the trace carries, such as turnover's sessions by state) and counters (calls by
 * status, points, limited answers, scheduled and missed starts, trace records by kind).
 */
import type { Clock } from '../clock/clock.ts';
import type { Target } from '../contract/types.ts';
import type { GitHubEmulator } from '../github/emulator.ts';
import { statLabel, type Verdict } from '../judge/judge.ts';
import { scopeText } from '../judge/report.ts';
import { HttpTarget } from '../targets/http.ts';
import { baseUnit, type Family, formatFamilies, type Sample } from './prometheus.ts';
import type { LiveStats } from './stats.ts';

export interface MetricsSources {
  clock: Clock;
  durationMs: number;
  stats: LiveStats;
  target: Target;
  emulator?: GitHubEmulator;
  scenario: string;
  /** The trace's run id (unique per real-clock run: it holds the start time) and target. */
  runId: string;
  targetName: string;
  /** The run has ended: these are its final values. */
  finished?: boolean;
}

/**
 * Run-wide counts and levels, one unlabelled series each: name, help, value.
 * The type follows the Prometheus naming rule: a name ending in `_total` is a counter, else a gauge.
 */
const RUN_COUNTS: Array<[string, string, (stats: LiveStats) => number]> = [
  [
    'fleetbench_api_limited_total',
    '403/429/retry-after answers (the Track B scorecard wants 0)',
    (s) => s.limited,
  ],
  ['fleetbench_budget_breaches_total', 'budget.breach events so far', (s) => s.breaches],
  [
    'fleetbench_controlplane_restarts_total',
    'control-plane restarts (controlplane.restart events)',
    (s) => s.restarts,
  ],
  ['fleetbench_native_runs_total', 'native runs started (run.created events)', (s) => s.runsCreated],
  ['fleetbench_native_runs_active', 'native runs started and not ended', (s) => s.runsCreated - s.runsEnded],
  ['fleetbench_native_turns_total', 'native-run turns completed (run.turn spans)', (s) => s.turns],
  ['fleetbench_scheduled_starts_total', 'operations started by open-model executors', (s) => s.scheduled],
  [
    'fleetbench_missed_starts_total',
    'scheduled starts that could not happen (executor.dropped)',
    (s) => s.missed,
  ],
];

export async function metricsText(src: MetricsSources): Promise<string> {
  const { stats } = src;
  const sessions = await src.target.sessionCounts();
  const run = { run_id: src.runId, scenario: src.scenario };
  const families: Family[] = [
    {
      name: 'fleetbench_run_info',
      help: 'the run this endpoint serves (always 1): join other series on it for run_id, scenario and target',
      type: 'gauge',
      samples: [{ labels: { ...run, target: src.targetName, clock: src.clock.kind }, value: 1 }],
    },
    {
      name: 'fleetbench_run_time_scale',
      help: 'run seconds per wall second (--time-scale): divide a rate() of a counter by it for a rate per run second',
      type: 'gauge',
      samples: [{ labels: run, value: src.clock.timeScale }],
    },
    {
      name: 'fleetbench_run_elapsed_seconds',
      help: 'run time elapsed (run seconds: scaled by the time scale)',
      type: 'gauge',
      samples: [{ labels: run, value: src.clock.now() / 1000 }],
    },
    {
      name: 'fleetbench_run_duration_seconds',
      help: 'planned run duration (run seconds)',
      type: 'gauge',
      samples: [{ labels: run, value: src.durationMs / 1000 }],
    },
    {
      name: 'fleetbench_sessions',
      help: 'sessions by state, as the target reports them',
      type: 'gauge',
      samples: Object.entries(sessions).map(([state, value]) => ({ labels: { state }, value: value ?? 0 })),
    },
    {
      name: 'fleetbench_inflight_calls',
      help: 'GitHub API calls in flight at the emulator',
      type: 'gauge',
      samples: src.emulator ? [{ value: src.emulator.stats().inFlight }] : [],
    },
    {
      name: 'fleetbench_quota_remaining',
      help: 'primary rate-limit points remaining (lowest x-ratelimit-remaining seen in the current window)',
      type: 'gauge',
      samples: [...stats.quota].map(([resource, q]) => ({ labels: { resource }, value: q.remaining })),
    },
    {
      name: 'fleetbench_quota_limit',
      help: 'primary rate limit per window (x-ratelimit-limit)',
      type: 'gauge',
      samples: [...stats.quota].map(([resource, q]) => ({ labels: { resource }, value: q.limit })),
    },
    {
      name: 'fleetbench_run_finished',
      help: '1 once the run has ended (the endpoint then shows final values for --metrics-linger)',
      type: 'gauge',
      samples: [{ labels: run, value: src.finished ? 1 : 0 }],
    },
    {
      name: 'fleetbench_api_calls_total',
      help: 'GitHub API calls answered, by rate-limit resource and HTTP status (opaque: no status known)',
      type: 'counter',
      samples: [...stats.callsByResourceStatus.values()]
        .sort((a, b) => a.resource.localeCompare(b.resource) || a.status.localeCompare(b.status))
        .map(({ resource, status, calls }) => ({ labels: { resource, status }, value: calls })),
    },
    {
      name: 'fleetbench_api_call_duration_seconds',
      help: 'GitHub API call latency as the trace recorded it, by rate-limit resource',
      type: 'histogram',
      samples: stats.callLatency.samples(),
    },
    {
      name: 'fleetbench_api_points_total',
      help: 'primary rate-limit points charged, by resource',
      type: 'counter',
      samples: [...stats.pointsByResource]
        .sort()
        .map(([resource, value]) => ({ labels: { resource }, value })),
    },
    ...RUN_COUNTS.map(
      ([name, help, value]): Family => ({
        name,
        help,
        type: name.endsWith('_total') ? 'counter' : 'gauge',
        samples: [{ value: value(stats) }],
      }),
    ),
    {
      name: 'fleetbench_schedule_lag_seconds',
      help: 'start lag of open-model executors: actual minus intended start (run seconds)',
      type: 'histogram',
      samples: stats.lagBuckets.samples(),
    },
    {
      name: 'fleetbench_trace_records_total',
      help: 'records the trace accepted, by kind',
      type: 'counter',
      samples: Object.entries(stats.records).map(([kind, value]) => ({ labels: { kind }, value })),
    },
    {
      name: 'fleetbench_trace_value',
      help: 'last value of every sampled value (gauge record) in the trace: name = its name, other labels as recorded',
      type: 'gauge',
      samples: [...stats.gauges.values()].map((g) => ({
        labels: { name: g.name, ...g.labels },
        value: g.value,
      })),
    },
  ];
  if (src.target instanceof HttpTarget) {
    const s = src.target.eventStats;
    families.push({
      name: 'fleetbench_target_events_total',
      help: 'events received from the http target, by what became of them',
      type: 'counter',
      samples: [
        { labels: { outcome: 'written' }, value: s.written },
        { labels: { outcome: 'rejected' }, value: s.rejected },
      ],
    });
  }
  return formatFamilies(families);
}

/**
 * The budgets' verdicts as gauges (after the run: they are judged on the finished trace), one
 * series per budget row and statistic. Measured values and limits go to one family per base
 * unit (`fleetbench_budget_measured_seconds`, `_ratio`, `_per_second`, or none for counts).
 */
export function budgetFamilies(verdicts: readonly Verdict[]): Family[] {
  const ok: Sample[] = [];
  const overall: Sample[] = [];
  const byUnit = new Map<string, { measured: Sample[]; limit: Sample[] }>();
  for (const verdict of verdicts) {
    overall.push({ labels: { budget: verdict.budget }, value: verdict.verdict === 'pass' ? 1 : 0 });
    for (const row of verdict.rows) {
      if (row.status === 'skipped') continue;
      const { suffix, factor } = baseUnit(row.unit);
      let unit = byUnit.get(suffix);
      if (!unit) {
        unit = { measured: [], limit: [] };
        byUnit.set(suffix, unit);
      }
      for (const stat of row.stats) {
        const labels = {
          budget: verdict.budget,
          metric: row.metric,
          scope: scopeText(row.scope),
          stat: statLabel(stat.threshold),
          mode: row.mode,
        };
        unit.limit.push({ labels, value: stat.threshold.limit * factor });
        if (stat.measured === null) continue;
        unit.measured.push({ labels, value: stat.measured * factor });
        ok.push({ labels, value: stat.ok ? 1 : 0 });
      }
    }
  }
  const unitWords: Record<string, string> = {
    _seconds: 'seconds',
    _ratio: 'a ratio, 0 to 1',
    _per_second: 'per second',
    '': 'a count',
  };
  return [
    {
      name: 'fleetbench_budget_passed',
      help: 'verdict of each budget set: 1 every judged budget holds, 0 breached or misconfigured',
      type: 'gauge',
      samples: overall,
    },
    {
      name: 'fleetbench_budget_within_limit',
      help: 'per budget row and statistic: 1 within the limit, 0 over it (mode=report rows are not judged)',
      type: 'gauge',
      samples: ok,
    },
    ...[...byUnit].flatMap(([suffix, samples]): Family[] => [
      {
        name: `fleetbench_budget_measured${suffix}`,
        help: `per budget row and statistic: the measured value, ${unitWords[suffix]}`,
        type: 'gauge',
        samples: samples.measured,
      },
      {
        name: `fleetbench_budget_limit${suffix}`,
        help: `per budget row and statistic: the limit, ${unitWords[suffix]}`,
        type: 'gauge',
        samples: samples.limit,
      },
    ]),
  ];
}
