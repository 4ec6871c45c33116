/**
 * The /rate_limit bracket: GitHub's own `used` before and after the run (ratelimit.snapshot
 * events) against the points the trace accounts for; the difference is what the trace did not
 * see (docs/analysis.md). A pure function of the snapshots and the points per second.
 */
import type { RunHeader } from '../trace/schema.ts';
import type { SecondSeries } from './bins.ts';
import { cmp, HOUR_MS } from './figures.ts';
import type { Analysis, BracketResource } from './schema.ts';

/** A ratelimit.snapshot event: when, and GitHub's /rate_limit body. */
export interface Snapshot {
  t: number;
  data: Record<string, unknown>;
}

/** The snapshots an analyzer keeps: the first and last seen, and those labelled before/after. */
export interface Snapshots {
  first?: Snapshot;
  last?: Snapshot;
  before?: Snapshot;
  after?: Snapshot;
}

export function rateLimitBracket(
  s: Snapshots,
  pointsPerSecond: ReadonlyMap<string, SecondSeries>,
  header: RunHeader | undefined,
): Analysis['api']['bracket'] {
  const before = s.before ?? (s.first !== s.last ? s.first : undefined);
  const after = s.after ?? (s.first !== s.last ? s.last : undefined);
  if (before === undefined || after === undefined) return null;
  const warnings: string[] = [];
  if (after.t < before.t) warnings.push('rate-limit bracket: the "after" snapshot is earlier than "before"');
  const resourcesOf = (snapshot: Snapshot) => {
    const value = snapshot.data.resources;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  };
  const b = resourcesOf(before);
  const a = resourcesOf(after);
  const byResource: NonNullable<Analysis['api']['bracket']>['byResource'] = {};
  // Wall-clock ms of run time t (x-ratelimit-reset is wall time); without an epoch, assume
  // GitHub's hourly window.
  const scale = header?.timeScale ?? 1;
  const withinOneWindow = (resetS: number) =>
    header === undefined ? after.t - before.t <= HOUR_MS : header.epochMs + after.t / scale <= resetS * 1000;
  for (const resource of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort(cmp)) {
    const x = readSnapshot(b[resource]);
    const y = readSnapshot(a[resource]);
    const series = pointsPerSecond.get(resource);
    const tracePoints = series ? series.sum(Math.floor(before.t / 1000), Math.floor(after.t / 1000)) : 0;
    // GitHub lists every resource, used or not: one nobody touched says nothing.
    if ((x?.used ?? 0) === 0 && (y?.used ?? 0) === 0 && tracePoints === 0) continue;
    const sameWindow = x !== null && y !== null && x.reset === y.reset;
    let deltaBasis: BracketResource['deltaBasis'] = null;
    if (sameWindow) deltaBasis = 'same-window';
    else if (x !== null && y !== null && x.used === 0 && withinOneWindow(x.reset)) {
      // Nothing used at "before": the window had not started, and GitHub reports a moving
      // reset (now + the window length). A window opened with the first call after the
      // snapshot, and cannot have reset before that moving reset: so if "after" comes no
      // later, everything it counts was used between the two.
      deltaBasis = 'window-opened';
    }
    const deltaUsed = deltaBasis === null ? null : y!.used - x!.used;
    if (x !== null && y !== null && deltaBasis === null) {
      warnings.push(
        x.used === 0
          ? `rate-limit bracket: ${resource}: the snapshots are more than one rate-limit window apart; its delta is not comparable`
          : `rate-limit bracket: ${resource} reset between the snapshots; its delta is not comparable`,
      );
    }
    byResource[resource] = {
      before: x,
      after: y,
      sameWindow,
      deltaBasis,
      deltaUsed,
      tracePoints,
      unseenPoints: deltaUsed === null ? null : deltaUsed - tracePoints,
    };
  }
  return { beforeAtMs: before.t, afterAtMs: after.t, byResource, warnings };
}

function readSnapshot(
  value: unknown,
): { limit: number; remaining: number; used: number; reset: number } | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
  const limit = num(v.limit);
  const remaining = num(v.remaining);
  const reset = num(v.reset);
  if (limit === undefined || remaining === undefined || reset === undefined) return null;
  return { limit, remaining, reset, used: num(v.used) ?? limit - remaining };
}
