/**
 * Metrics that join records instead of counting them (a run's first activity after it was
 * created, a recovery's next provider event after `controlplane.ready`, turnover operations
 * inside the steady window) are computed at finish from the spans, events and gauges they
 * need. The analyzer retains exactly the records a finisher asks for (by name), merges them
 * across threads by concatenation, and hands them over in time order. Memory grows with the
 * number of such operations, never with API calls.
 */
import type { BodyRecord, RunHeader } from '../trace/schema.ts';
import type { SessionCalls } from './accumulators/session-calls.ts';

export type RetainedRecord = Exclude<BodyRecord, { kind: 'api' }>;

export interface FinisherContext {
  header?: RunHeader;
  startMs: number;
  endMs: number;
  /** GitHub calls by session and per second, for a finisher that joins them with its records (edges.ts). */
  calls?: SessionCalls;
}

export interface Finisher {
  /** The Analysis field the result goes into. */
  key: 'speed' | 'turnover' | 'faults' | 'provider' | 'model' | 'edges' | 'harness';
  /** Which span, event and gauge names to keep for it. */
  retains(name: string): boolean;
  /** Records in time order (ties: trace order). */
  finish(records: readonly RetainedRecord[], context: FinisherContext): unknown;
}
