/** Writes (REST POST, PATCH, PUT, DELETE; GraphQL mutations: session-calls.ts isWrite): the total and per second of run time. */
import type { ApiRecord } from '../../trace/schema.ts';
import { SecondSeries } from '../bins.ts';
import type { Accumulator } from './accumulator.ts';
import { isWrite } from './session-calls.ts';

export interface WritesState {
  total: number;
  perSecond: Float64Array;
  beyondSeries: number;
}

export class Writes implements Accumulator<WritesState> {
  total = 0;
  perSecond = new SecondSeries();
  /** Writes too late in the run for the per-second series. */
  beyondSeries = 0;

  addApi(r: ApiRecord): void {
    if (isWrite(r)) {
      this.total++;
      if (!this.perSecond.add(r.t, 1)) this.beyondSeries++;
    }
  }

  merge(other: Writes): void {
    this.total += other.total;
    this.beyondSeries += other.beyondSeries;
    this.perSecond.merge(other.perSecond);
  }

  toState(): WritesState {
    return { total: this.total, perSecond: this.perSecond.toState(), beyondSeries: this.beyondSeries };
  }

  static fromState(state: WritesState): Writes {
    const out = new Writes();
    out.total = state.total;
    out.perSecond = new SecondSeries(state.perSecond);
    out.beyondSeries = state.beyondSeries;
    return out;
  }

  static transferables(state: WritesState): ArrayBuffer[] {
    return [state.perSecond.buffer as ArrayBuffer];
  }
}
