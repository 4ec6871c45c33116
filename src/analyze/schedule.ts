/**
 * Did the load generator keep its schedule? (docs/analysis.md#schedule-open-model-accuracy: "always record intended start vs actual
 * start, and count what could not start on schedule".) Computed from what the analyzer already
 * keeps, so it streams and merges like every other metric:
 *
 * - a **scheduled start** is a span named `<operation>.start` that carries an `executor` label:
 *   `t` is the intended start and `dur` the lag (actual − intended). The engine's executors
 *   write `session.start`; any open-model executor follows the same convention.
 * - a **missed start** is an `executor.dropped` event (k6's dropped iterations).
 *
 * A run kept its schedule when no start was missed and the lag's p99, in real milliseconds,
 * is within the tolerance (50 ms). Otherwise the offered load was not what the scenario asked
 * for, and the run is **not a valid ceiling**: its numbers describe a lighter load.
 */
import type { LatencyHistogram, Percentiles } from './histogram.ts';
import { LatencyHistogram as Histogram } from './histogram.ts';

export const SCHEDULE_LAG_TOLERANCE_MS = 50;
export const MISSED_START_EVENT = 'executor.dropped';

export interface ScheduleSummary {
  operations: number;
  missed: number;
  lag: Percentiles | null;
  byExecutor: Record<string, { operations: number; lagP99Ms: number | null }>;
  toleranceMs: number;
  timeScale: number;
  kept: boolean;
  reasons: string[];
}

interface SpanGroup {
  name: string;
  labels: Record<string, string | number | boolean>;
  latency: LatencyHistogram;
}

export function isScheduledStart(name: string, labels: Record<string, unknown> | undefined): boolean {
  return labels !== undefined && labels.executor !== undefined && name.endsWith('.start');
}

export function scheduleSummary(
  spanGroups: Iterable<SpanGroup>,
  events: ReadonlyMap<string, number>,
  timeScale = 1,
): ScheduleSummary | null {
  const all = new Histogram();
  const perExecutor = new Map<string, Histogram>();
  for (const group of spanGroups) {
    if (!isScheduledStart(group.name, group.labels)) continue;
    all.merge(group.latency);
    const executor = String(group.labels.executor);
    let h = perExecutor.get(executor);
    if (h === undefined) {
      h = new Histogram();
      perExecutor.set(executor, h);
    }
    h.merge(group.latency);
  }
  const missed = events.get(MISSED_START_EVENT) ?? 0;
  if (all.count === 0 && missed === 0) return null;
  const lag = all.percentiles();
  const reasons: string[] = [];
  if (missed > 0) reasons.push(`${missed} scheduled start(s) missed (${MISSED_START_EVENT})`);
  const lagRealP99 = lag ? lag.p99 / timeScale : 0;
  if (lagRealP99 > SCHEDULE_LAG_TOLERANCE_MS) {
    reasons.push(
      `start lag p99 ${lagRealP99.toFixed(1)} ms (real) exceeds ${SCHEDULE_LAG_TOLERANCE_MS} ms: the generator fell behind`,
    );
  }
  return {
    operations: all.count,
    missed,
    lag,
    byExecutor: Object.fromEntries(
      [...perExecutor]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([executor, h]) => [executor, { operations: h.count, lagP99Ms: h.percentiles()?.p99 ?? null }]),
    ),
    toleranceMs: SCHEDULE_LAG_TOLERANCE_MS,
    timeScale,
    kept: reasons.length === 0,
    reasons,
  };
}

/** The warning a run that did not keep its schedule carries (shown by every report). */
export function scheduleWarning(summary: ScheduleSummary | null): string | undefined {
  if (summary === null || summary.kept) return undefined;
  return `the load generator did not keep its schedule: ${summary.reasons.join('; ')}. Not a valid ceiling: the system saw less load than the scenario asked for`;
}
