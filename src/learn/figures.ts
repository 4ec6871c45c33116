/**
 * The figures a model's prediction is judged on against a real run of the same cell
 * (docs/calibration.md, docs/model.md#validation): calls per session per cycle, core and GraphQL
 * points per hour, the busiest second, calls by operation, cycle p50 and p95, final states. Each
 * comes from the run's analysis, computed the same way for the real run and the replay.
 */
import type { Analysis } from '../analyze/schema.ts';

export interface RunFigures {
  sessions: number;
  callsPerSessionCycle: number | null;
  corePointsPerHour: number;
  graphqlPointsPerHour: number;
  busiestSecond: number;
  byOperation: Record<string, number>;
  cycleP50Ms: number | null;
  cycleP95Ms: number | null;
  finalStates: Record<string, number>;
}

export function runFigures(a: Analysis): RunFigures {
  const floor = a.api.pollingFloor.steady?.perSessionCycle.all ?? a.api.pollingFloor.perSessionCycle.all;
  const byOperation: Record<string, number> = {};
  for (const [op, c] of Object.entries(a.api.counts.byOperation))
    byOperation[op] = (c as { calls: number }).calls;
  // The sessions gauge's last sampling: a target that leaves out states with no session (AO's)
  // never samples them at 0, so a state's own last sample may be an old one.
  const sessions = a.gauges.filter((g) => g.name === 'sessions' && typeof g.labels.state === 'string');
  const lastAt = Math.max(Number.NEGATIVE_INFINITY, ...sessions.map((g) => g.lastAtMs));
  const finalStates: Record<string, number> = {};
  for (const g of sessions)
    if (g.lastAtMs === lastAt && g.last > 0) finalStates[g.labels.state as string] = g.last;
  return {
    sessions: a.run.sessions,
    callsPerSessionCycle: floor?.mean ?? null,
    corePointsPerHour: a.api.projection.byResource.core?.pointsPerHour ?? 0,
    graphqlPointsPerHour: a.api.projection.byResource.graphql?.pointsPerHour ?? 0,
    busiestSecond: a.api.burst.max1s?.calls ?? 0,
    byOperation,
    cycleP50Ms: a.controlPlane.pollCycles?.durationMs?.p50 ?? null,
    cycleP95Ms: a.controlPlane.pollCycles?.durationMs?.p95 ?? null,
    finalStates,
  };
}

export const FIGURES = [
  'calls/session/cycle',
  'core points/h',
  'GraphQL points/h',
  'busiest second',
  'calls by operation',
  'cycle p50',
  'cycle p95',
  'final states',
] as const;
export type FigureName = (typeof FIGURES)[number];

/** Half the sum of differences over the real total: the share of one side that is not in the other. */
function distributionError(model: Record<string, number>, real: Record<string, number>): number | null {
  const keys = new Set([...Object.keys(model), ...Object.keys(real)]);
  let diff = 0;
  let total = 0;
  for (const k of keys) {
    diff += Math.abs((model[k] ?? 0) - (real[k] ?? 0));
    total += real[k] ?? 0;
  }
  return total === 0 ? null : (diff / 2 / total) * 100;
}

const relative = (model: number | null, real: number | null): number | null =>
  model === null || real === null
    ? null
    : real === 0
      ? model === 0
        ? 0
        : null
      : ((model - real) / real) * 100;

/**
 * Each figure's error of `model` against `real`, in percent: signed for the quantities, and for
 * the two distributions (calls by operation, final states) the share of calls or sessions that
 * are somewhere else (0 to 100).
 */
export function figureErrors(model: RunFigures, real: RunFigures): Record<FigureName, number | null> {
  return {
    'calls/session/cycle': relative(model.callsPerSessionCycle, real.callsPerSessionCycle),
    'core points/h': relative(model.corePointsPerHour, real.corePointsPerHour),
    'GraphQL points/h': relative(model.graphqlPointsPerHour, real.graphqlPointsPerHour),
    'busiest second': relative(model.busiestSecond, real.busiestSecond),
    'calls by operation': distributionError(model.byOperation, real.byOperation),
    'cycle p50': relative(model.cycleP50Ms, real.cycleP50Ms),
    'cycle p95': relative(model.cycleP95Ms, real.cycleP95Ms),
    'final states': distributionError(model.finalStates, real.finalStates),
  };
}
