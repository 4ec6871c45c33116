/**
 * The spans, events and gauges the finishers join at the end (finishers.ts), in arrival order;
 * merged by concatenation. api records are never retained.
 */

import type { FinisherContext, RetainedRecord } from '../finisher.ts';
import { FINISHERS, retainedByAnyFinisher } from '../finishers.ts';
import type { Analysis } from '../schema.ts';
import type { Accumulator } from './accumulator.ts';

export class Retained implements Accumulator<RetainedRecord[]> {
  records: RetainedRecord[] = [];

  add(record: RetainedRecord): void {
    if (retainedByAnyFinisher(record.name)) this.records.push(record);
  }

  /** The joined metrics (speed, turnover, faults, provider, model, edges, harness) from the retained records, in time order. */
  finish(
    context: FinisherContext,
  ): Pick<Analysis, 'speed' | 'turnover' | 'faults' | 'provider' | 'model' | 'edges' | 'harness'> {
    const out: Pick<Analysis, 'speed' | 'turnover' | 'faults' | 'provider' | 'model' | 'edges' | 'harness'> =
      {};
    if (FINISHERS.length === 0) return out;
    // Stable sort: ties keep trace order, so the result does not depend on thread splits.
    const records = this.records
      .map((r, i) => [r, i] as const)
      .sort(([a, i], [b, j]) => a.t - b.t || i - j)
      .map(([r]) => r);
    for (const finisher of FINISHERS) {
      const own = records.filter((r) => finisher.retains(r.name));
      const result = finisher.finish(own, context);
      // A finisher with nothing to say (no learned replay in the trace) leaves its field out.
      if (result !== undefined) (out as Record<string, unknown>)[finisher.key] = result;
    }
    return out;
  }

  merge(other: Retained): void {
    for (const record of other.records) this.records.push(record);
  }

  toState(): RetainedRecord[] {
    return this.records;
  }

  static fromState(state: RetainedRecord[]): Retained {
    const out = new Retained();
    out.records = state;
    return out;
  }
}
