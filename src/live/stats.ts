/**
 * What a live run shows while it runs (progress line, Prometheus endpoint): running counts kept
 * from the records as the trace accepts them (a tap on the one TraceWriter), plus what only the
 * live objects know (sessions by state from the target, calls in flight from the emulator).
 * Final numbers still come from the analysis of the trace file: these are for watching.
 */
import { LatencyHistogram } from '../analyze/histogram.ts';
import { isScheduledStart, MISSED_START_EVENT } from '../analyze/schedule.ts';
import type { BodyRecord, RecordCounts, SpanInput } from '../trace/schema.ts';
import { BucketHistogram, LAG_BUCKETS_S, LATENCY_BUCKETS_S } from './prometheus.ts';

export interface QuotaView {
  limit: number;
  remaining: number;
  /** Epoch seconds. */
  reset: number;
}

export class LiveStats {
  calls = 0;
  readonly callsByStatus = new Map<string, number>();
  /** Calls by resource (core, graphql, search) and HTTP status. */
  readonly callsByResourceStatus = new Map<string, { resource: string; status: string; calls: number }>();
  /** Call latency (seconds, as the trace recorded it) by resource. */
  readonly callLatency = new BucketHistogram(LATENCY_BUCKETS_S);
  /** Schedule lag (run seconds) of open-model starts. */
  readonly lagBuckets = new BucketHistogram(LAG_BUCKETS_S);
  readonly pointsByResource = new Map<string, number>();
  readonly quota = new Map<string, QuotaView>();
  /** 403/429/retry-after answers. */
  limited = 0;
  breaches = 0;
  scheduled = 0;
  missed = 0;
  readonly lag = new LatencyHistogram();
  lagSumMs = 0;
  restarts = 0;
  /** A restart is under way: `controlplane.restart` seen, its `controlplane.ready` not yet. */
  restarting = false;
  /** Native runs created and ended, turns completed (run.created, run.ended, run.turn). */
  runsCreated = 0;
  runsEnded = 0;
  turns = 0;
  readonly records: RecordCounts = { api: 0, span: 0, event: 0, gauge: 0 };
  /** Last value of every trace gauge, by name and labels. */
  readonly gauges = new Map<
    string,
    { name: string; labels: Record<string, string | number | boolean>; value: number }
  >();

  add(record: BodyRecord | (SpanInput & { kind: 'span' })): void {
    this.records[record.kind]++;
    switch (record.kind) {
      case 'api': {
        this.calls++;
        const status = record.status === null ? 'opaque' : String(record.status);
        this.callsByStatus.set(status, (this.callsByStatus.get(status) ?? 0) + 1);
        const key = `${record.resource}\u0000${status}`;
        const byResource = this.callsByResourceStatus.get(key);
        if (byResource) byResource.calls++;
        else this.callsByResourceStatus.set(key, { resource: record.resource, status, calls: 1 });
        this.callLatency.observe(record.dur / 1000, { resource: record.resource });
        this.pointsByResource.set(
          record.resource,
          (this.pointsByResource.get(record.resource) ?? 0) + record.cost,
        );
        if (record.status === 403 || record.status === 429 || record.retryAfter !== undefined) this.limited++;
        const rl = record.rl;
        if (rl) {
          const resource = rl.resource ?? record.resource;
          const seen = this.quota.get(resource);
          // A later window (reset) replaces the view; within a window the lowest remaining wins.
          if (!seen || rl.reset > seen.reset || (rl.reset === seen.reset && rl.remaining < seen.remaining))
            this.quota.set(resource, { limit: rl.limit, remaining: rl.remaining, reset: rl.reset });
        }
        return;
      }
      case 'span':
        if (record.name === 'run.turn') this.turns++;
        if (isScheduledStart(record.name, record.labels)) {
          this.scheduled++;
          this.lag.record(record.dur);
          this.lagBuckets.observe(record.dur / 1000);
          this.lagSumMs += record.dur;
        }
        return;
      case 'event':
        if (record.name === MISSED_START_EVENT) this.missed++;
        else if (record.name === 'budget.breach') this.breaches++;
        else if (record.name === 'controlplane.restart') {
          this.restarts++;
          this.restarting = true;
        } else if (record.name === 'controlplane.ready') this.restarting = false;
        else if (record.name === 'run.created') this.runsCreated++;
        else if (record.name === 'run.ended') this.runsEnded++;
        return;
      case 'gauge': {
        const key = `${record.name}\u0000${JSON.stringify(record.labels ?? {})}`;
        this.gauges.set(key, { name: record.name, labels: record.labels ?? {}, value: record.value });
        return;
      }
    }
  }
}
