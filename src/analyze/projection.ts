/**
 * The projection: how many sessions fit under each resource's hourly limit at the measured
 * per-session cost (docs/analysis.md). A pure function of what the analyzer accumulated.
 *
 * A rate per hour is only as good as the window it is read from: a run's first minutes (its
 * cold start, its spawns) cost more than its steady state, and a few minutes of them extrapolated
 * to an hour, then to 50 sessions, fail budgets no steady control plane would. So the projection
 * is taken from the steady window (the `steady.start` marker → the end), and only when that window
 * holds at least one poll interval (every session polled at least once in it); otherwise it is
 * "not judged", with the reason and what would judge it. The whole run's rate is still given,
 * labelled as such, never as the projection.
 */
import type { SecondSeries } from './bins.ts';
import { cmp, HOUR_MS, round } from './figures.ts';
import type { Analysis } from './schema.ts';

/** GitHub's primary limits per hour when no response said otherwise. */
export const DEFAULT_LIMITS: Readonly<Record<string, number>> = { core: 5000, graphql: 5000 };

/**
 * The poll interval a steady window must hold at least once when the trace's poll cycles do not
 * declare theirs: the reference control plane's and agent-orchestrator's 30 s.
 */
export const DEFAULT_POLL_INTERVAL_MS = 30_000;

export interface ProjectionInput {
  /** Limits to assume, over DEFAULT_LIMITS (the analyzer's defaultLimits option). */
  defaultLimits?: Readonly<Record<string, number>>;
  /** Limits seen in responses, by resource. */
  responseLimits: ReadonlyMap<string, number>;
  /** Points charged per second of run time, by resource. */
  pointsPerSecond: ReadonlyMap<string, SecondSeries>;
  /** Points of calls without a session per second, by resource. */
  sharedPoints: ReadonlyMap<string, SecondSeries>;
}

export interface ProjectionSpan {
  startMs: number;
  endMs: number;
  /** Run time of the steady.start marker; not finite: the trace has none. */
  steadyAtMs: number;
  /** The interval the poll cycles declared (null: none declared). */
  pollIntervalMs: number | null;
}

type Window = Analysis['api']['projection']['window'];

/** `3m30s`; rounded up unless `round` says otherwise (a length measured, not one asked for). */
const fmtDuration = (ms: number, round: (x: number) => number = Math.ceil): string => {
  const s = round(ms / 1000);
  const m = Math.floor(s / 60);
  const rest = s % 60;
  return m === 0 ? `${rest}s` : rest === 0 ? `${m}m` : `${m}m${String(rest).padStart(2, '0')}s`;
};

/** The window a projection is read from, and whether it can be judged at all. */
export function projectionWindow(span: ProjectionSpan): NonNullable<Window> {
  const neededMs = span.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const interval = `one poll interval (${fmtDuration(neededMs)}${span.pollIntervalMs === null ? ', assumed: the trace declares none' : ''})`;
  const notJudged = (reason: string, advice: string): NonNullable<Window> => ({
    basis: 'whole-run',
    fromMs: span.startMs,
    toMs: span.endMs,
    neededMs,
    judged: false,
    reason,
    advice,
  });
  if (!Number.isFinite(span.steadyAtMs))
    return notJudged(
      'the run has no steady window (no steady.start marker): its rate includes its start',
      `run past the scenario's steady.start marker by at least ${interval}`,
    );
  const have = span.endMs - span.steadyAtMs;
  if (have < neededMs)
    return notJudged(
      `the steady window (${fmtDuration(Math.max(0, have), Math.floor)} from the steady.start marker at ${fmtDuration(span.steadyAtMs, Math.floor)}) is shorter than ${interval}`,
      `a duration of at least ${fmtDuration(span.steadyAtMs + neededMs)}`,
    );
  return {
    basis: 'steady',
    fromMs: span.steadyAtMs,
    toMs: span.endMs,
    neededMs,
    judged: true,
    reason: null,
    advice: null,
  };
}

export function sessionProjection(
  input: ProjectionInput,
  sessions: number,
  span: ProjectionSpan,
): Analysis['api']['projection'] {
  const limits = { ...DEFAULT_LIMITS, ...input.defaultLimits };
  const resources = new Set<string>([
    ...Object.keys(limits).filter((r) => r in DEFAULT_LIMITS),
    ...input.responseLimits.keys(),
  ]);
  const window = projectionWindow(span);
  const byResource: Analysis['api']['projection']['byResource'] = {};
  const hours = (window.toMs - window.fromMs) / HOUR_MS;
  // Whole seconds of the window (the series has one bin a second from the run's start).
  const firstSecond = window.basis === 'steady' ? Math.floor(window.fromMs / 1000) : 0;
  const inWindow = (series: SecondSeries | undefined) =>
    series ? series.sum(firstSecond, series.length - 1) : 0;
  for (const resource of [...resources].sort(cmp)) {
    const fromResponse = input.responseLimits.get(resource);
    const limit = fromResponse ?? limits[resource];
    if (limit === undefined) continue;
    const total = inWindow(input.pointsPerSecond.get(resource));
    const sharedPoints = inWindow(input.sharedPoints.get(resource));
    const pointsPerHour = hours > 0 ? round(total / hours, 1) : null;
    const perSession = hours > 0 && sessions > 0 ? total / hours / sessions : null;
    byResource[resource] = {
      limit,
      limitSource: fromResponse === undefined ? 'default' : 'response',
      pointsPerHour,
      sharedPointsPerHour: hours > 0 ? round(sharedPoints / hours, 1) : null,
      perSessionPointsPerHour: perSession === null ? null : round(perSession, 2),
      sessionsThatFit: perSession === null ? null : perSession === 0 ? null : Math.floor(limit / perSession),
    };
  }
  return {
    sessions,
    model:
      'per-session cost = points per hour ÷ sessions, over the steady window; calls without a session (shared guards, batches) are assumed to grow with sessions too, so the projection errs on the safe side',
    window,
    byResource,
  };
}
