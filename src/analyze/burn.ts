/**
 * Primary-limit burn per rate-limit window (docs/analysis.md): one window per x-ratelimit-reset
 * seen, calls without one placed in the reset window containing them or in hourly windows from
 * the run epoch; a run that straddles a reset is reported per window, never summed. A pure
 * function of what the analyzer accumulated.
 */
import type { SecondSeries } from './bins.ts';
import { cmp, HOUR_MS, round } from './figures.ts';
import type { Analysis, BurnWindow } from './schema.ts';

/** What the analyzer keeps per (resource, x-ratelimit-reset). */
export interface ResetWindowAcc {
  resource: string;
  reset: number;
  calls: number;
  points: number;
  limit: number;
  usedMax: number | null;
  remainingMin: number;
}

export interface BurnInput {
  resetWindows: Iterable<ResetWindowAcc>;
  /** Calls and points per second of run time without an x-ratelimit-reset, by resource. */
  unwindowedCalls: ReadonlyMap<string, SecondSeries>;
  unwindowedPoints: ReadonlyMap<string, SecondSeries>;
  /** The hourly limit of a resource (seen in a response, else the default), null when unknown. */
  limitFor: (resource: string) => number | null;
}

export function burnWindows(
  input: BurnInput,
  epochMs: number | null,
  startMs: number,
  endMs: number,
): Analysis['api']['burn'] {
  const windows: BurnWindow[] = [];
  const covered = (from: number, to: number) => Math.max(0, Math.min(to, endMs) - Math.max(from, startMs));
  const byResource = new Map<string, BurnWindow[]>();
  const push = (w: BurnWindow) => {
    windows.push(w);
    let list = byResource.get(w.resource);
    if (list === undefined) {
      list = [];
      byResource.set(w.resource, list);
    }
    list.push(w);
  };
  for (const acc of input.resetWindows) {
    const endRun = epochMs === null ? null : acc.reset * 1000 - epochMs;
    const startRun = endRun === null ? null : endRun - HOUR_MS;
    push({
      resource: acc.resource,
      basis: 'reset',
      reset: acc.reset,
      startMs: startRun,
      endMs: endRun,
      coveredMs: startRun === null || endRun === null ? null : covered(startRun, endRun),
      calls: acc.calls,
      points: acc.points,
      pointsPerHour: null,
      limit: acc.limit,
      usedMax: acc.usedMax,
      remainingMin: acc.remainingMin,
      headroomPct: null,
    });
  }
  // Calls whose response carried no x-ratelimit-reset: into the reset window that contains
  // them when one is known, otherwise into hourly windows counted from the run epoch.
  for (const [resource, callSeries] of input.unwindowedCalls) {
    const pointSeries = input.unwindowedPoints.get(resource)!;
    const known = (byResource.get(resource) ?? []).filter((w) => w.startMs !== null);
    const hourly = new Map<number, BurnWindow>();
    for (let second = 0; second < callSeries.length; second++) {
      const calls = callSeries.get(second);
      if (calls === 0) continue;
      const points = pointSeries.get(second);
      const t = second * 1000;
      const home = known.find((w) => t >= w.startMs! && t < w.endMs!);
      if (home) {
        home.calls += calls;
        home.points += points;
        continue;
      }
      const hour = Math.floor(t / HOUR_MS);
      let w = hourly.get(hour);
      if (w === undefined) {
        const from = hour * HOUR_MS;
        w = {
          resource,
          basis: 'hourly',
          reset: null,
          startMs: from,
          endMs: from + HOUR_MS,
          coveredMs: covered(from, from + HOUR_MS),
          calls: 0,
          points: 0,
          pointsPerHour: null,
          limit: input.limitFor(resource),
          usedMax: null,
          remainingMin: null,
          headroomPct: null,
        };
        hourly.set(hour, w);
        push(w);
      }
      w.calls += calls;
      w.points += points;
    }
  }
  for (const w of windows) {
    if (w.coveredMs !== null && w.coveredMs > 0)
      w.pointsPerHour = round((w.points * HOUR_MS) / w.coveredMs, 1);
    if (w.limit !== null && w.limit > 0) w.headroomPct = round((100 * (w.limit - w.points)) / w.limit);
  }
  windows.sort(
    (a, b) => cmp(a.resource, b.resource) || (a.startMs ?? a.reset ?? 0) - (b.startMs ?? b.reset ?? 0),
  );
  const straddles = [...byResource].filter(([, list]) => list.length > 1).map(([resource]) => resource);
  straddles.sort(cmp);
  const warnings = straddles.map(
    (resource) =>
      `${resource}: the run straddles a rate-limit reset (${byResource.get(resource)!.length} windows); burn is reported per window, never summed`,
  );
  return { windows, straddles, warnings };
}
