/**
 * The control plane's poll loop, from its own records: `poll.cycle` spans (one per cycle, with
 * `data: {cycle, sessions, calls, lagMs, intervalMs}`) and `poll.cycle.skipped` events (cycles
 * missed entirely, `labels.count` of them). This is where a loop that cannot keep its interval
 * shows: with one call at a time and realistic latency a cycle outlasts its interval, the next
 * one starts late (lag), and whole cycles are skipped.
 *
 * And when each poll cycle started (`CycleStarts`): the earliest `t` of any record carrying that
 * cycle id, which is what places a cycle before or after the `steady.start` marker. Both merge
 * exactly (counts and histograms add, minimums take the minimum).
 */
import type { SpanRecord } from '../trace/schema.ts';
import { LatencyHistogram, type LatencyHistogramState } from './histogram.ts';
import type { Analysis } from './schema.ts';

export const POLL_CYCLE_SPAN = 'poll.cycle';
export const POLL_CYCLE_SKIPPED_EVENT = 'poll.cycle.skipped';

export interface PollCyclesState {
  count: number;
  duration: LatencyHistogramState;
  lag: LatencyHistogramState;
  intervalKnown: number;
  intervalMin: number;
  intervalMax: number;
  overruns: number;
  skipped: number;
  skippedEvents: number;
}

/** A finite number, or undefined. */
export function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export class PollCycles {
  count = 0;
  duration = new LatencyHistogram();
  lag = new LatencyHistogram();
  intervalKnown = 0;
  intervalMin = Number.POSITIVE_INFINITY;
  intervalMax = Number.NEGATIVE_INFINITY;
  overruns = 0;
  skipped = 0;
  skippedEvents = 0;

  addSpan(r: SpanRecord): void {
    this.count++;
    this.duration.record(r.dur);
    const data = r.data;
    if (data === undefined) return;
    const lag = numberOf(data.lagMs);
    // A cycle cannot start before it is due; a negative lag (clock noise) counts as on time.
    if (lag !== undefined) this.lag.record(Math.max(0, lag));
    const interval = numberOf(data.intervalMs);
    if (interval !== undefined && interval > 0) {
      this.intervalKnown++;
      if (interval < this.intervalMin) this.intervalMin = interval;
      if (interval > this.intervalMax) this.intervalMax = interval;
      if (r.dur > interval) this.overruns++;
    }
  }

  /** A `poll.cycle.skipped` event: `labels.count` cycles missed (1 when it says no count). */
  addSkipped(labels: Record<string, unknown> | undefined): void {
    this.skippedEvents++;
    const n = numberOf(labels?.count);
    this.skipped += n !== undefined && n >= 0 ? n : 1;
  }

  merge(other: PollCycles): void {
    this.count += other.count;
    this.duration.merge(other.duration);
    this.lag.merge(other.lag);
    this.intervalKnown += other.intervalKnown;
    this.intervalMin = Math.min(this.intervalMin, other.intervalMin);
    this.intervalMax = Math.max(this.intervalMax, other.intervalMax);
    this.overruns += other.overruns;
    this.skipped += other.skipped;
    this.skippedEvents += other.skippedEvents;
  }

  toState(): PollCyclesState {
    return { ...this, duration: this.duration.toState(), lag: this.lag.toState() };
  }

  static fromState(state: PollCyclesState): PollCycles {
    const out = new PollCycles();
    Object.assign(out, state);
    out.duration = LatencyHistogram.fromState(state.duration);
    out.lag = LatencyHistogram.fromState(state.lag);
    return out;
  }

  /** The Analysis section; null when the trace has no poll loop records at all. */
  result(): { pollCycles: Analysis['controlPlane']['pollCycles']; warnings: string[] } {
    if (this.count === 0 && this.skippedEvents === 0) return { pollCycles: null, warnings: [] };
    const warnings: string[] = [];
    const known = this.intervalKnown > 0;
    if (known && this.intervalMin !== this.intervalMax) {
      warnings.push(
        `poll cycles declare different intervals (${this.intervalMin}–${this.intervalMax} ms): each cycle's overrun is judged against its own; intervalMs shows the longest`,
      );
    }
    return {
      pollCycles: {
        count: this.count,
        durationMs: this.duration.percentiles(),
        intervalMs: known ? this.intervalMax : null,
        intervalKnown: this.intervalKnown,
        overruns: this.overruns,
        overrunPct: known ? Math.round((100_000 * this.overruns) / this.intervalKnown) / 1000 : null,
        lagMs: this.lag.percentiles(),
        skipped: this.skipped,
      },
      warnings,
    };
  }
}

/** When each poll cycle started: the earliest `t` of the records that carry its id. */
export class CycleStarts {
  starts = new Map<number, number>();
  /** The last cycle touched, and its start: consecutive records mostly share a cycle. */
  private lastCycle = Number.NaN;
  private lastStart = Number.POSITIVE_INFINITY;

  add(cycle: number, t: number): void {
    if (cycle === this.lastCycle) {
      if (t >= this.lastStart) return;
    } else {
      this.lastCycle = cycle;
      this.lastStart = this.starts.get(cycle) ?? Number.POSITIVE_INFINITY;
      if (t >= this.lastStart) return;
    }
    this.lastStart = t;
    this.starts.set(cycle, t);
  }

  merge(other: CycleStarts): void {
    this.lastCycle = Number.NaN;
    for (const [cycle, t] of other.starts) {
      const mine = this.starts.get(cycle);
      if (mine === undefined || t < mine) this.starts.set(cycle, t);
    }
  }

  static fromState(starts: Map<number, number>): CycleStarts {
    const out = new CycleStarts();
    out.starts = starts;
    return out;
  }
}
