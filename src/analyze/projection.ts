/**
 * The projection: how many sessions fit under each resource's hourly limit at the measured
 * per-session cost (docs/analysis.md). A pure function of what the analyzer accumulated.
 *
 * A rate per hour is only as good as the window it is read from: a run's first minutes (its
 * cold start, its spawns) cost more than its steady state, and a few minutes of them extrapolated
 * to an hour, then to 50 sessions, fail budgets no steady control plane would. So the projection
 * is taken from a steady window that holds at least one poll interval (every session polled at
 * least once in it): from the `steady.start` marker, or, without one that leaves such a window,
 * from the first poll cycle that began after every session was polling. Otherwise it is "not
 * judged", with the reason and what would judge it; the whole run's rate is still given,
 * labelled as such, never as the projection.
 *
 * Nothing the trace declares can shrink a measured burn: the poll interval a window must hold is
 * measured from the cycles that ran (never the one they declare), a window starts at a poll
 * cycle (one placed between two cycles holds none of them), and it ends at the run's last record
 * plus one interval at most (a footer declaring a later end does not dilute the rate).
 */
import type { SecondSeries } from './bins.ts';
import { cmp, HOUR_MS, round } from './figures.ts';
import type { Analysis } from './schema.ts';

/** GitHub's primary limits per hour when no response said otherwise. */
export const DEFAULT_LIMITS: Readonly<Record<string, number>> = { core: 5000, graphql: 5000 };

/**
 * The poll interval a steady window must hold at least once when the trace has fewer than two
 * poll cycles to measure one from: the reference control plane's and agent-orchestrator's 30 s.
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
  /** The end of the run's last record (the footer's time left out); default endMs. */
  recordsEndMs?: number;
  /** Run time of the steady.start marker; not finite: the trace has none. */
  steadyAtMs: number;
  /** Poll cycle starts, in time order (empty: the trace has no poll cycles). */
  cycleStartsMs?: readonly number[];
  /** The start of the first poll cycle after every session was polling (null: none). */
  allActiveAtMs?: number | null;
}

type Window = Analysis['api']['projection']['window'];

/** `3m30s`; rounded up unless `round` says otherwise (a length measured, not one asked for). */
const fmtDuration = (ms: number, round: (x: number) => number = Math.ceil): string => {
  const s = round(ms / 1000);
  const m = Math.floor(s / 60);
  const rest = s % 60;
  return m === 0 ? `${rest}s` : rest === 0 ? `${m}m` : `${m}m${String(rest).padStart(2, '0')}s`;
};

/**
 * The poll interval the cycles kept: the median gap between consecutive cycle starts (null with
 * fewer than two). Measured, never declared: one cycle declaring 15 minutes changes nothing.
 */
export function measuredPollInterval(starts: readonly number[]): number | null {
  const gaps: number[] = [];
  for (let i = 1; i < starts.length; i++) {
    const gap = starts[i]! - starts[i - 1]!;
    if (gap > 0) gaps.push(gap);
  }
  if (gaps.length === 0) return null;
  gaps.sort((a, b) => a - b);
  const mid = gaps.length >> 1;
  return gaps.length % 2 === 1 ? gaps[mid]! : (gaps[mid - 1]! + gaps[mid]!) / 2;
}

/** The first cycle start at or after `t` (t itself when the trace has no cycles; null: none). */
function cycleAtOrAfter(starts: readonly number[], t: number): number | null {
  if (starts.length === 0) return t;
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo < starts.length ? starts[lo]! : null;
}

/** The window a projection is read from, and whether it can be judged at all. */
export function projectionWindow(span: ProjectionSpan): NonNullable<Window> {
  const starts = span.cycleStartsMs ?? [];
  const measured = measuredPollInterval(starts);
  const neededMs = measured ?? DEFAULT_POLL_INTERVAL_MS;
  const interval = `one poll interval (${fmtDuration(neededMs)}${measured === null ? ', assumed: too few cycles in the trace to measure it' : ', the median gap between cycle starts'})`;
  // A footer declaring an end long after the last record would spread the burn thin.
  const toMs = Math.min(span.endMs, (span.recordsEndMs ?? span.endMs) + neededMs);
  const windowFrom = (basis: 'steady' | 'all-active', at: number, note: string | null) => {
    const from = cycleAtOrAfter(starts, at);
    if (from === null || toMs - from < neededMs) return undefined;
    return { basis, fromMs: from, toMs, neededMs, judged: true, reason: null, advice: null, note };
  };
  const marker = Number.isFinite(span.steadyAtMs) ? span.steadyAtMs : undefined;
  const fromMarker = marker === undefined ? undefined : windowFrom('steady', marker, null);
  if (fromMarker) return fromMarker;
  const markerWords =
    marker === undefined
      ? undefined
      : marker >= toMs
        ? `the steady.start marker at ${fmtDuration(marker, Math.floor)} is at or after the run's end`
        : `the steady window from the steady.start marker at ${fmtDuration(marker, Math.floor)} (${fmtDuration(Math.max(0, toMs - marker), Math.floor)}) is shorter than ${interval}`;
  const active = span.allActiveAtMs ?? null;
  const fromActive =
    active === null
      ? undefined
      : windowFrom(
          'all-active',
          active,
          markerWords ? `${markerWords}: the window is the one every session was polling in` : null,
        );
  if (fromActive) return fromActive;
  const noActive =
    active === null
      ? 'no poll cycle began after every session was polling (sessions still starting, or no cycle ids in the trace)'
      : `the window from the first poll cycle after every session was polling (${fmtDuration(active, Math.floor)}) is shorter than ${interval}`;
  return {
    basis: 'whole-run',
    fromMs: span.startMs,
    toMs: span.endMs,
    neededMs,
    judged: false,
    reason: markerWords
      ? `${markerWords}, and ${noActive}: its rate includes its start`
      : `the run has no steady window: no steady.start marker, and ${noActive}; its rate includes its start`,
    // Only what the trace has: a marker is named when there is one.
    advice:
      marker !== undefined && marker < toMs
        ? `a duration of at least ${fmtDuration(marker + neededMs)}`
        : active !== null
          ? `a duration of at least ${fmtDuration(active + neededMs)}`
          : `a run that goes on for ${interval} once every session is polling`,
    note: null,
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
  const firstSecond = window.judged ? Math.floor(window.fromMs / 1000) : 0;
  const lastSecond = window.judged ? Math.ceil(window.toMs / 1000) - 1 : Number.POSITIVE_INFINITY;
  const inWindow = (series: SecondSeries | undefined) =>
    series ? series.sum(firstSecond, Math.min(lastSecond, series.length - 1)) : 0;
  for (const resource of [...resources].sort(cmp)) {
    const fromResponse = input.responseLimits.get(resource);
    const limit = fromResponse ?? limits[resource];
    if (limit === undefined) continue;
    const total = inWindow(input.pointsPerSecond.get(resource));
    const sharedPoints = inWindow(input.sharedPoints.get(resource));
    const pointsPerHour = hours > 0 ? round(total / hours, 1) : null;
    // Measured, not projected in time: the most points any hour of the run charged (all of
    // them in a run shorter than an hour). A steady rate can be argued; these points were spent.
    const busiest = input.pointsPerSecond.get(resource)?.maxInWindow(3600).value ?? 0;
    const perSession = hours > 0 && sessions > 0 ? total / hours / sessions : null;
    byResource[resource] = {
      limit,
      limitSource: fromResponse === undefined ? 'default' : 'response',
      pointsPerHour,
      sharedPointsPerHour: hours > 0 ? round(sharedPoints / hours, 1) : null,
      perSessionPointsPerHour: perSession === null ? null : round(perSession, 2),
      sessionsThatFit: perSession === null ? null : perSession === 0 ? null : Math.floor(limit / perSession),
      busiestHourPoints: round(busiest, 1),
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
