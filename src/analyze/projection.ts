/**
 * The projection: how many sessions fit under each resource's hourly limit at the measured
 * per-session cost (docs/analysis.md). A pure function of what the analyzer accumulated.
 */
import type { SecondSeries } from './bins.ts';
import { cmp, HOUR_MS, round } from './figures.ts';
import type { Analysis } from './schema.ts';

/** GitHub's primary limits per hour when no response said otherwise. */
export const DEFAULT_LIMITS: Readonly<Record<string, number>> = { core: 5000, graphql: 5000 };

export interface ProjectionInput {
  /** Limits to assume, over DEFAULT_LIMITS (the analyzer's defaultLimits option). */
  defaultLimits?: Readonly<Record<string, number>>;
  /** Limits seen in responses, by resource. */
  responseLimits: ReadonlyMap<string, number>;
  /** Points charged per second of run time, by resource. */
  pointsPerSecond: ReadonlyMap<string, SecondSeries>;
  /** Points of calls without a session, by resource. */
  sharedPoints: ReadonlyMap<string, number>;
}

export function sessionProjection(
  input: ProjectionInput,
  sessions: number,
  durationMs: number,
): Analysis['api']['projection'] {
  const limits = { ...DEFAULT_LIMITS, ...input.defaultLimits };
  const resources = new Set<string>([
    ...Object.keys(limits).filter((r) => r in DEFAULT_LIMITS),
    ...input.responseLimits.keys(),
  ]);
  const byResource: Analysis['api']['projection']['byResource'] = {};
  const hours = durationMs / HOUR_MS;
  for (const resource of [...resources].sort(cmp)) {
    const fromResponse = input.responseLimits.get(resource);
    const limit = fromResponse ?? limits[resource];
    if (limit === undefined) continue;
    const points = input.pointsPerSecond.get(resource);
    const total = points ? points.sum(0, points.length - 1) : 0;
    const sharedPoints = input.sharedPoints.get(resource) ?? 0;
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
      'per-session cost = points per hour ÷ sessions; calls without a session (shared guards, batches) are assumed to grow with sessions too, so the projection errs on the safe side',
    byResource,
  };
}
