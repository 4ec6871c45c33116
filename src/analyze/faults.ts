/**
 * The run's injected faults on its timeline: each `fault.start`, `fault.end` and `fault.failed`
 * event (docs/scenarios.md#faults) with its time and fault type, so reports can mark them where
 * the calls, latencies and states they caused are drawn. A finisher (finisher.ts): the events
 * are retained and merged across threads like the speed and turnover records. Its schema is in
 * schema.ts: this file runs in analysis worker threads, which load no zod (worker-source.ts).
 */
import type { Finisher, RetainedRecord } from './finisher.ts';
import type { FaultMarks } from './schema.ts';
import { MAX_FAULT_MARKS } from './schema-constants.ts';

const FAULT_EVENTS = new Set(['fault.start', 'fault.end', 'fault.failed']);

export const faultsFinisher: Finisher = {
  key: 'faults',
  retains: (name: string) => FAULT_EVENTS.has(name),
  finish(records: readonly RetainedRecord[]): FaultMarks {
    return records.slice(0, MAX_FAULT_MARKS).map((r) => ({
      tMs: r.t,
      type: String((r.kind === 'event' ? r.labels?.type : undefined) ?? 'fault'),
      phase: r.name === 'fault.end' ? 'end' : r.name === 'fault.failed' ? 'failed' : 'start',
    }));
  },
};
