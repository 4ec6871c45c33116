/**
 * `--otlp-export URL`: a live run's spans and metrics sent to any OTLP/HTTP endpoint (a
 * Collector, Tempo, Jaeger, Grafana Alloy, …) as protobuf, so a run shows up in the tools a team
 * already watches (docs/live-runs.md#otlp-export).
 *
 * - Spans: every `span` record (sessions, poll cycles, native-run stages, recoveries) and every
 *   `event` record (restarts, faults, markers, state changes, as zero-length spans). One trace
 *   per session (trace id = hash of run id and session), one for what belongs to no session.
 * - Metrics (cumulative, every `metricsEveryMs` and at the end): API calls and points by resource,
 *   operation and session; call latency and schedule lag as histograms; and, after the run, the
 *   budgets' measured values, limits and verdicts (exportVerdicts).
 *
 * Never in the run's way: records are queued in memory and sent in batches from a timer, one
 * request at a time; a full queue drops the oldest spans (counted, said at the end) instead of
 * growing or waiting; a failed request is counted, never retried into the run. The encoding is
 * the OpenTelemetry project's generated protobuf (otlp-proto.ts).
 */
import { createHash } from 'node:crypto';
import { isScheduledStart } from '../analyze/schedule.ts';
import type { Clock } from '../clock/clock.ts';
import { statLabel, type Verdict } from '../judge/judge.ts';
import { scopeText } from '../judge/report.ts';
import { encodeMetricsRequest, encodeTraceRequest } from '../trace/importers/otlp-proto.ts';
import type { BodyRecord, SpanInput } from '../trace/schema.ts';
import { VERSION } from '../version.ts';
import { LAG_BUCKETS_S, LATENCY_BUCKETS_S } from './prometheus.ts';

type Scalar = string | number | boolean;

export interface OtlpExportOptions {
  /** Base URL (`http://collector:4318`): /v1/traces and /v1/metrics are appended. */
  url: string;
  clock: Clock;
  runId: string;
  scenario: string;
  /** Spans per request (default 512). */
  batchSize?: number;
  /** Most spans held while the endpoint is slow (default 20,000); beyond, the oldest go. */
  maxQueue?: number;
  flushEveryMs?: number;
  metricsEveryMs?: number;
  /** Per request (default 10 s). */
  timeoutMs?: number;
}

export interface OtlpExportStats {
  spansSent: number;
  spansDropped: number;
  requests: number;
  failedRequests: number;
  lastError?: string;
}

interface OtlpSpan {
  traceId: Buffer;
  spanId: Buffer;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: ReturnType<typeof attributes>;
  status?: { code: number };
}

function attributes(values: Record<string, Scalar | undefined>) {
  const out: Array<{ key: string; value: Record<string, Scalar> }> = [];
  for (const [key, v] of Object.entries(values)) {
    if (v === undefined) continue;
    if (typeof v === 'string') out.push({ key, value: { stringValue: v } });
    else if (typeof v === 'boolean') out.push({ key, value: { boolValue: v } });
    else if (Number.isInteger(v)) out.push({ key, value: { intValue: v } });
    else out.push({ key, value: { doubleValue: v } });
  }
  return out;
}

/** Unix nanoseconds of a wall-clock ms with sub-ms part, exactly (digits: beyond 2^53). */
function nanos(wallMs: number): string {
  const whole = Math.floor(wallMs);
  return `${BigInt(whole) * 1_000_000n + BigInt(Math.round((wallMs - whole) * 1e6))}`;
}

function hashBytes(text: string, bytes: number): Buffer {
  return createHash('sha256').update(text).digest().subarray(0, bytes);
}

/** Cumulative explicit-bucket histogram, per attribute set. */
class Buckets {
  readonly series = new Map<
    string,
    { attrs: Record<string, string>; counts: number[]; sum: number; count: number }
  >();
  constructor(readonly bounds: readonly number[]) {}
  observe(value: number, attrs: Record<string, string>): void {
    const key = JSON.stringify(attrs);
    let s = this.series.get(key);
    if (!s) {
      s = { attrs, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    const i = this.bounds.findIndex((b) => value <= b);
    s.counts[i < 0 ? this.bounds.length : i]!++;
    s.sum += value;
    s.count++;
  }
}

/** Spans encoded between two yields to the event loop. */
const ENCODE_SLICE = 64;

export class OtlpExporter {
  readonly stats: OtlpExportStats = { spansSent: 0, spansDropped: 0, requests: 0, failedRequests: 0 };
  private readonly tracesUrl: string;
  private readonly metricsUrl: string;
  private readonly resource: { attributes: ReturnType<typeof attributes> };
  private readonly scope = { name: 'fleetbench', version: VERSION };
  private queue: OtlpSpan[] = [];
  private nextSpan = 0;
  private readonly startNanos: string;
  private readonly calls = new Map<
    string,
    { attrs: Record<string, string>; calls: number; points: number }
  >();
  private readonly latency = new Buckets(LATENCY_BUCKETS_S);
  private readonly lag = new Buckets(LAG_BUCKETS_S);
  private sending: Promise<void> = Promise.resolve();
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;

  constructor(private readonly options: OtlpExportOptions) {
    const base = options.url.replace(/\/+$/, '').replace(/\/v1\/(traces|metrics)$/, '');
    this.tracesUrl = `${base}/v1/traces`;
    this.metricsUrl = `${base}/v1/metrics`;
    this.resource = {
      attributes: attributes({
        'service.name': 'fleetbench',
        'service.version': VERSION,
        'fleetbench.run.id': options.runId,
        'fleetbench.scenario': options.scenario,
      }),
    };
    this.startNanos = nanos(options.clock.toWallMs(0));
    // Node loads fetch's implementation on the first call (tens of ms of compiling): do it now,
    // before the run, not in the middle of the schedule at the first flush.
    void fetch('data:,').then(
      (res) => res.arrayBuffer(),
      () => undefined,
    );
    const every = (ms: number, fn: () => void) => {
      const timer = setInterval(fn, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(options.flushEveryMs ?? 250, () => this.flushSpans());
    every(options.metricsEveryMs ?? 5_000, () => this.enqueue(() => this.sendMetrics()));
  }

  /** Takes one trace record (a tap on the run's TraceWriter): queues, never sends inline. */
  add(record: BodyRecord | (SpanInput & { kind: 'span' })): void {
    if (this.closed) return;
    switch (record.kind) {
      case 'span':
        this.push(
          record.name,
          record.t,
          record.dur ?? 0,
          record.session,
          {
            ...(record.labels ?? {}),
            'fleetbench.outcome': record.outcome ?? 'ok',
          },
          record.outcome === 'error',
        );
        if (isScheduledStart(record.name, record.labels)) this.lag.observe((record.dur ?? 0) / 1000, {});
        return;
      case 'event':
        this.push(
          record.name,
          record.t,
          0,
          record.session,
          { ...(record.labels ?? {}), 'fleetbench.event': true },
          false,
        );
        return;
      case 'api': {
        const attrs = {
          resource: record.resource,
          operation: record.op ?? 'unknown',
          session: record.session ?? 'none',
          status: record.status === null ? 'opaque' : String(record.status),
        };
        const key = JSON.stringify(attrs);
        const seen = this.calls.get(key);
        if (seen) {
          seen.calls++;
          seen.points += record.cost;
        } else this.calls.set(key, { attrs, calls: 1, points: record.cost });
        this.latency.observe(record.dur / 1000, { resource: record.resource });
        return;
      }
      default:
        return;
    }
  }

  private push(
    name: string,
    t: number,
    dur: number,
    session: string | undefined,
    labels: Record<string, Scalar>,
    failed: boolean,
  ): void {
    const { clock, runId } = this.options;
    this.nextSpan++;
    const span: OtlpSpan = {
      traceId: hashBytes(`${runId}\u0000${session ?? ''}`, 16),
      spanId: hashBytes(`${runId}\u0000${this.nextSpan}`, 8),
      name,
      kind: 1,
      startTimeUnixNano: nanos(clock.toWallMs(t)),
      endTimeUnixNano: nanos(clock.toWallMs(t + dur)),
      attributes: attributes({ ...labels, ...(session ? { 'session.id': session } : {}) }),
      ...(failed ? { status: { code: 2 } } : {}),
    };
    this.queue.push(span);
    const max = this.options.maxQueue ?? 20_000;
    if (this.queue.length > max) {
      const over = this.queue.length - max;
      this.queue.splice(0, over);
      this.stats.spansDropped += over;
    }
  }

  /** Sends everything queued, one request after another, in the background. */
  private flushSpans(): void {
    if (this.queue.length === 0) return;
    this.enqueue(async () => {
      const size = this.options.batchSize ?? 512;
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, size);
        // Encoded ENCODE_SLICE spans at a time, yielding to the event loop in between, so the
        // run's timers never wait behind a whole batch. Concatenated protobuf messages are one
        // message whose repeated fields are joined: one request, several resourceSpans.
        const parts: Uint8Array[] = [];
        for (let i = 0; i < batch.length; i += ENCODE_SLICE) {
          parts.push(
            encodeTraceRequest({
              resourceSpans: [
                {
                  resource: this.resource,
                  scopeSpans: [{ scope: this.scope, spans: batch.slice(i, i + ENCODE_SLICE) }],
                },
              ],
            }),
          );
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        if (await this.post(this.tracesUrl, Buffer.concat(parts))) this.stats.spansSent += batch.length;
      }
    });
  }

  private enqueue(work: () => Promise<void>): void {
    this.sending = this.sending.then(work, work);
  }

  private async post(url: string, body: Uint8Array): Promise<boolean> {
    this.stats.requests++;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      await res.arrayBuffer();
      if (res.ok) return true;
      this.stats.lastError = `${url}: HTTP ${res.status}`;
    } catch (error) {
      this.stats.lastError = `${url}: ${(error as Error).message}`;
    }
    this.stats.failedRequests++;
    return false;
  }

  private metricsRequest(extra: object[] = []): Uint8Array {
    const now = nanos(Date.now());
    const point = (attrs: Record<string, string>) => ({
      attributes: attributes(attrs),
      startTimeUnixNano: this.startNanos,
      timeUnixNano: now,
    });
    const sum = (name: string, unit: string, description: string, field: 'calls' | 'points') => ({
      name,
      unit,
      description,
      sum: {
        aggregationTemporality: 2,
        isMonotonic: true,
        dataPoints: [...this.calls.values()].map((c) => ({ ...point(c.attrs), asDouble: c[field] })),
      },
    });
    const histogram = (name: string, description: string, buckets: Buckets) => ({
      name,
      unit: 's',
      description,
      histogram: {
        aggregationTemporality: 2,
        dataPoints: [...buckets.series.values()].map((s) => ({
          ...point(s.attrs),
          count: s.count,
          sum: s.sum,
          bucketCounts: s.counts,
          explicitBounds: buckets.bounds,
        })),
      },
    });
    const metrics = [
      sum(
        'fleetbench.api.calls',
        '{call}',
        'GitHub API calls by resource, operation, session and status',
        'calls',
      ),
      sum(
        'fleetbench.api.points',
        '{point}',
        'primary rate-limit points by resource, operation and session',
        'points',
      ),
      histogram('fleetbench.api.call.duration', 'GitHub API call latency, by resource', this.latency),
      histogram('fleetbench.schedule.lag', 'open-model start lag: actual minus intended start', this.lag),
      ...extra,
    ];
    return encodeMetricsRequest({
      resourceMetrics: [{ resource: this.resource, scopeMetrics: [{ scope: this.scope, metrics }] }],
    });
  }

  private async sendMetrics(extra: object[] = []): Promise<void> {
    await this.post(this.metricsUrl, this.metricsRequest(extra));
  }

  /** The budgets' values, limits and verdicts (judged after the run), as gauges. */
  exportVerdicts(verdicts: readonly Verdict[]): Promise<void> {
    const now = nanos(Date.now());
    const points: Record<'measured' | 'limit' | 'ok', object[]> = { measured: [], limit: [], ok: [] };
    for (const verdict of verdicts)
      for (const row of verdict.rows) {
        if (row.status === 'skipped') continue;
        for (const stat of row.stats) {
          const attrs = attributes({
            budget: verdict.budget,
            metric: row.metric,
            scope: scopeText(row.scope),
            stat: statLabel(stat.threshold),
            mode: row.mode,
            unit: row.unit === 'ms' ? 's' : row.unit,
          });
          const scale = (v: number) => (row.unit === 'ms' ? v / 1000 : v);
          const at = { attributes: attrs, timeUnixNano: now };
          points.limit.push({ ...at, asDouble: scale(stat.threshold.limit) });
          if (stat.measured === null) continue;
          points.measured.push({ ...at, asDouble: scale(stat.measured) });
          points.ok.push({ ...at, asInt: stat.ok ? 1 : 0 });
        }
      }
    const gauge = (name: string, description: string, dataPoints: object[]) => ({
      name,
      description,
      gauge: { dataPoints },
    });
    const extra = [
      gauge('fleetbench.budget.measured', 'budget row: measured value (unit attribute)', points.measured),
      gauge('fleetbench.budget.limit', 'budget row: limit (unit attribute)', points.limit),
      gauge('fleetbench.budget.within_limit', 'budget row: 1 within the limit, 0 over', points.ok),
    ];
    const sent = this.sending.then(() => this.sendMetrics(extra));
    this.sending = sent;
    return sent;
  }

  /** Sends what is queued and the final metrics; resolves when done (or failed). */
  async flush(): Promise<void> {
    this.flushSpans();
    this.enqueue(() => this.sendMetrics());
    await this.sending;
  }

  /**
   * Stops the timers after a last flush, waiting at most `deadlineMs` for a slow endpoint (what
   * is still queued then is dropped and counted). Records added later are ignored.
   */
  async close(deadlineMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.flush(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, deadlineMs);
      }),
    ]);
    clearTimeout(timer);
    this.stats.spansDropped += this.queue.length;
    this.queue = [];
  }
}
