import type { Accumulator } from './accumulator.ts';

/** A record's time range: the earliest start and latest end. */
export class Extent implements Accumulator<{ minT: number; maxEnd: number }> {
  minT = Number.POSITIVE_INFINITY;
  maxEnd = Number.NEGATIVE_INFINITY;

  add(t: number, end: number): void {
    if (t < this.minT) this.minT = t;
    if (end > this.maxEnd) this.maxEnd = end;
  }

  merge(other: Extent): void {
    if (other.minT < this.minT) this.minT = other.minT;
    if (other.maxEnd > this.maxEnd) this.maxEnd = other.maxEnd;
  }

  toState(): { minT: number; maxEnd: number } {
    return { minT: this.minT, maxEnd: this.maxEnd };
  }

  static fromState(state: { minT: number; maxEnd: number }): Extent {
    const out = new Extent();
    out.minT = state.minT;
    out.maxEnd = state.maxEnd;
    return out;
  }
}
