/**
 * The control plane's polling: api calls per (session, cycle) and resource for the polling
 * floor, when each cycle started, the first steady.start marker, and the poll.cycle spans.
 */
import type { ScannedRow } from '../../trace/scanner.ts';
import type { ApiRecord, EventRecord, SpanRecord } from '../../trace/schema.ts';
import { CycleCounts, type CycleRow, type CycleRowState } from '../cycles.ts';
import {
  CycleStarts,
  numberOf,
  POLL_CYCLE_SKIPPED_EVENT,
  POLL_CYCLE_SPAN,
  PollCycles,
  type PollCyclesState,
} from '../poll-cycles.ts';
import { pollingFloor, SHARED } from '../polling-floor.ts';
import type { Analysis } from '../schema.ts';
import { type Accumulator, ById } from './accumulator.ts';

/** The phase marker the steady-state polling floor starts at. */
export const STEADY_START_EVENT = 'steady.start';

export interface PollingState {
  counts: Map<string, CycleRowState>;
  cycleStarts: Map<number, number>;
  steadyAt: number;
  pollCycles: PollCyclesState;
  cycleAttributed: number;
}

export class Polling implements Accumulator<PollingState> {
  counts = new CycleCounts();
  cycleStarts = new CycleStarts();
  /** Run time of the earliest steady.start marker. */
  steadyAt = Number.POSITIVE_INFINITY;
  pollCycles = new PollCycles();
  /** Calls with both a cycle and a session. */
  cycleAttributed = 0;

  /** Rows of `counts` by the scanner's id of their session (not state: a cache). */
  private readonly rows = new ById<CycleRow>('session');

  /** `row`: the scanner's ids, when the scanner read `r` (the session's row found by id). */
  addApi(r: ApiRecord, row?: ScannedRow): void {
    const cycle = r.cycle;
    if (cycle === undefined) return;
    if (r.session !== undefined) this.cycleAttributed++;
    if (row === undefined) this.counts.add(r.session ?? SHARED, cycle, r.resource);
    else {
      const slot = this.rows.slot(row);
      let counts = this.rows.get(slot);
      if (counts === undefined) {
        counts = this.counts.row(r.session ?? SHARED);
        this.rows.set(slot, counts);
      }
      counts.add(cycle, r.resource);
    }
    this.cycleStarts.add(cycle, r.t);
  }

  addSpan(r: SpanRecord): void {
    if (r.name !== POLL_CYCLE_SPAN) return;
    this.pollCycles.addSpan(r);
    const cycle = numberOf(r.data?.cycle);
    if (cycle !== undefined && Number.isInteger(cycle)) this.cycleStarts.add(cycle, r.t);
  }

  addEvent(r: EventRecord): void {
    if (r.name === STEADY_START_EVENT) {
      if (r.t < this.steadyAt) this.steadyAt = r.t;
    } else if (r.name === POLL_CYCLE_SKIPPED_EVENT) this.pollCycles.addSkipped(r.labels);
  }

  /**
   * What a steady window is found from (projection.ts): the poll cycles' starts in time order,
   * and the start of the first cycle after every session had begun polling (null: none).
   */
  steadyWindowInput(): { cycleStartsMs: number[]; allActiveAtMs: number | null } {
    const starts = this.cycleStarts.starts;
    const cycleStartsMs = [...starts.values()].sort((a, b) => a - b);
    let lastFirst = Number.NEGATIVE_INFINITY;
    for (const [key, row] of this.counts.rows) {
      if (key === SHARED) continue;
      const first = row.firstCycle();
      const at = first === undefined ? undefined : starts.get(first);
      if (at !== undefined && at > lastFirst) lastFirst = at;
    }
    if (lastFirst === Number.NEGATIVE_INFINITY) return { cycleStartsMs, allActiveAtMs: null };
    return { cycleStartsMs, allActiveAtMs: cycleStartsMs.find((t) => t > lastFirst) ?? null };
  }

  floor(): Analysis['api']['pollingFloor'] {
    return pollingFloor(this.counts, this.cycleStarts, this.steadyAt, this.cycleAttributed);
  }

  merge(other: Polling): void {
    this.counts.merge(other.counts);
    this.cycleStarts.merge(other.cycleStarts);
    if (other.steadyAt < this.steadyAt) this.steadyAt = other.steadyAt;
    this.pollCycles.merge(other.pollCycles);
    this.cycleAttributed += other.cycleAttributed;
  }

  toState(): PollingState {
    return {
      counts: this.counts.toState(),
      cycleStarts: this.cycleStarts.starts,
      steadyAt: this.steadyAt,
      pollCycles: this.pollCycles.toState(),
      cycleAttributed: this.cycleAttributed,
    };
  }

  static fromState(state: PollingState): Polling {
    const out = new Polling();
    out.counts = CycleCounts.fromState(state.counts);
    out.cycleStarts = CycleStarts.fromState(state.cycleStarts);
    out.steadyAt = state.steadyAt;
    out.pollCycles = PollCycles.fromState(state.pollCycles);
    out.cycleAttributed = state.cycleAttributed;
    return out;
  }
}
