/**
 * `--otlp-export URL`: a live run's spans and metrics sent to any OTLP/HTTP endpoint (a
 * Collector, Tempo, Jaeger, Grafana Alloy, …) as protobuf, so a run shows up in the tools a team
 * already watches (docs/live-runs.md#otlp-export).
 *
 * - On the run's clock: a span starts at the run's epoch plus its trace time and lasts its trace
 *   duration, so at `--time-scale 10` a 7.2 s poll cycle lasts 7.2 s in Tempo, as in the trace
 *   and the report (the resource says `fleetbench.time_scale`; timestamps run ahead of the wall
 *   clock by the same factor). Metric points are stamped on the run's clock too.
 * - Spans with parents: one trace per session, rooted in a `session` span (its first to last
 *   record, linked to the run's trace); each API call a span under the session's `session.cycle` span (its calls of one
 *   poll cycle) or under the session; the trace's own spans (native-run stages, recoveries, ...)
 *   under their session. What belongs to no session (the fleet's poll cycles, session-less
 *   calls) is in the run's trace, under a `run` span. The spans fleetbench makes up for the tree
 *   (`run`, `session`, `session.cycle`) say `fleetbench.synthesized`.
 * - Events (state changes, restarts, faults, markers) are span events of their session's span,
 *   or of the run's.
 * - Metrics (cumulative, every `metricsEveryMs` and at the end): API calls and points by resource,
 *   operation and status (not by session: a 100,000-session run would be 100,000 series; the
 *   call spans carry the session); call latency and schedule lag as histograms; and, after the
 *   run, the budgets' measured values, limits and verdicts (exportVerdicts).
 *
 * Never in the run's way: records are queued in memory and sent in batches from a timer, one
 * request at a time; a full queue drops the oldest spans (counted, said at the end) instead of
 * growing or waiting; a failed request is counted, never retried into the run. The `run` and
 * `session` spans, which hold the events, are sent when the exporter closes. The encoding is the
 * OpenTelemetry project's generated protobuf (otlp-proto.ts).
 */
import { createHash } from 'node:crypto';
import { isScheduledStart } from '../analyze/schedule.ts';
import { VERSION } from '../base/version.ts';
import type { Clock } from '../clock/clock.ts';
import { statLabel, type Verdict } from '../judge/judge.ts';
import { scopeText } from '../judge/report.ts';
import { encodeMetricsRequest, encodeTraceRequest } from '../trace/importers/otlp-proto.ts';
import type { BodyRecord, SpanInput } from '../trace/schema.ts';
import { baseUnit, LAG_BUCKETS_S, LATENCY_BUCKETS_S } from './prometheus.ts';

/** The OTLP unit of each Prometheus base-unit suffix (baseUnit in prometheus.ts). */
const OTLP_UNITS: Record<string, string> = { _seconds: 's', _ratio: '1', _per_second: '/s', '': '{count}' };

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
  /** Events not kept as span events: more than maxQueue were held at once. */
  eventsDropped: number;
  requests: number;
  failedRequests: number;
  lastError?: string;
}

interface OtlpEvent {
  timeUnixNano: string;
  name: string;
  attributes: ReturnType<typeof attributes>;
}

interface OtlpSpan {
  traceId: Buffer;
  spanId: Buffer;
  parentSpanId?: Buffer;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: ReturnType<typeof attributes>;
  events?: OtlpEvent[];
  links?: Array<{ traceId: Buffer; spanId: Buffer }>;
  status?: { code: number };
}

/** SpanKind: INTERNAL for the run's own spans, CLIENT for API calls. */
const INTERNAL = 1;
const CLIENT = 3;

/** A span fleetbench makes up for the tree (run, session, session.cycle): its extent so far. */
interface Synthesized {
  spanId: Buffer;
  first: number;
  last: number;
  calls: number;
  events: OtlpEvent[];
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

/** Unix nanoseconds of a ms timestamp with sub-ms part, exactly (digits: beyond 2^53). */
function nanos(wallMs: number): string {
  const whole = Math.floor(wallMs);
  return `${BigInt(whole) * 1_000_000n + BigInt(Math.round((wallMs - whole) * 1e6))}`;
}

/** A record's scalar `data` values as attributes (`fleetbench.cycle`, `fleetbench.lagMs`, ...). */
function numbers(data: Record<string, unknown> | undefined): Record<string, Scalar> {
  const out: Record<string, Scalar> = {};
  for (const [key, value] of Object.entries(data ?? {}))
    if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean')
      out[`fleetbench.${key}`] = value;
  return out;
}

/** Unix nanoseconds of run time t (ms), added to the epoch as integers: no float rounding. */
function runNanos(epochNs: bigint, t: number): string {
  return `${epochNs + BigInt(Math.round(t * 1e6))}`;
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
  readonly stats: OtlpExportStats = {
    spansSent: 0,
    spansDropped: 0,
    eventsDropped: 0,
    requests: 0,
    failedRequests: 0,
  };
  private readonly tracesUrl: string;
  private readonly metricsUrl: string;
  private readonly resource: { attributes: ReturnType<typeof attributes> };
  private readonly scope = { name: 'fleetbench', version: VERSION };
  private queue: OtlpSpan[] = [];
  private nextSpan = 0;
  /** Unix ns of run time 0: a record at run time t (ms) is stamped epochNs + t × 10⁶, exactly. */
  private readonly epochNs: bigint;
  private readonly startNanos: string;
  private readonly runTrace: Buffer;
  private readonly root: Synthesized;
  private readonly sessions = new Map<string, Synthesized>();
  /** Calls of one session in one poll cycle not yet sent as their `session.cycle` span, by cycle. */
  private readonly sessionCycles = new Map<number, Map<string, Synthesized>>();
  /** Events held for the run and session spans (sent at close); beyond maxQueue they are dropped. */
  private heldEvents = 0;
  private lastT = 0;
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
        // Durations and timestamps are run time: at a time scale of 10 a run second is 0.1 s.
        'fleetbench.time_scale': options.clock.timeScale,
      }),
    };
    this.startNanos = nanos(options.clock.toWallMs(0));
    this.epochNs = BigInt(this.startNanos);
    this.runTrace = hashBytes(`${options.runId}\u0000`, 16);
    this.root = this.synthesized('run', 0);
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
    const t = record.t;
    switch (record.kind) {
      case 'span': {
        const dur = record.dur ?? 0;
        const parent = this.parentOf(record.session, t, t + dur);
        this.push({
          traceId: this.traceOf(record.session),
          spanId: this.newSpanId(),
          parentSpanId: parent.spanId,
          name: record.name,
          kind: INTERNAL,
          startTimeUnixNano: this.at(t),
          endTimeUnixNano: this.at(t + dur),
          attributes: attributes({
            ...(record.labels ?? {}),
            ...numbers(record.data),
            'fleetbench.outcome': record.outcome ?? 'ok',
            ...(record.session ? { 'session.id': record.session } : {}),
          }),
          ...(record.outcome === 'error' ? { status: { code: 2 } } : {}),
        });
        if (isScheduledStart(record.name, record.labels)) this.lag.observe(dur / 1000, {});
        // The fleet's poll cycle has ended: its sessions' calls in it are complete.
        if (record.name === 'poll.cycle' && typeof record.data?.cycle === 'number')
          this.sendSessionCycles(record.data.cycle);
        return;
      }
      case 'event': {
        const holder = this.parentOf(record.session, t, t);
        if (this.heldEvents >= (this.options.maxQueue ?? 20_000)) {
          this.stats.eventsDropped++;
          return;
        }
        this.heldEvents++;
        holder.events.push({
          timeUnixNano: this.at(t),
          name: record.name,
          attributes: attributes({ ...(record.labels ?? {}), ...numbers(record.data) }),
        });
        return;
      }
      case 'api': {
        const attrs = {
          resource: record.resource,
          operation: record.op ?? 'unknown',
          status: record.status === null ? 'opaque' : String(record.status),
        };
        const key = JSON.stringify(attrs);
        const seen = this.calls.get(key);
        if (seen) {
          seen.calls++;
          seen.points += record.cost;
        } else this.calls.set(key, { attrs, calls: 1, points: record.cost });
        this.latency.observe(record.dur / 1000, { resource: record.resource });
        const end = t + record.dur;
        const parent =
          record.cycle === undefined
            ? this.parentOf(record.session, t, end)
            : this.sessionCycle(record.session, record.cycle, t, end);
        this.push({
          traceId: this.traceOf(record.session),
          spanId: this.newSpanId(),
          parentSpanId: parent.spanId,
          name: `${record.method} ${record.route}`,
          kind: CLIENT,
          startTimeUnixNano: this.at(t),
          endTimeUnixNano: this.at(end),
          attributes: attributes({
            'http.request.method': record.method,
            'url.template': record.route,
            'http.response.status_code': record.status ?? undefined,
            'github.resource': record.resource,
            'github.operation': record.op,
            'github.points': record.cost,
            'github.repository': record.repo,
            'fleetbench.source': record.source,
            'fleetbench.cycle': record.cycle,
            ...(record.session ? { 'session.id': record.session } : {}),
          }),
          ...(record.status !== null && record.status >= 400 ? { status: { code: 2 } } : {}),
        });
        return;
      }
      default:
        return;
    }
  }

  /** Unix nanoseconds of run time t, on the run's clock. */
  private at(t: number): string {
    this.lastT = Math.max(this.lastT, t);
    return runNanos(this.epochNs, t);
  }

  private traceOf(session: string | undefined): Buffer {
    return session ? hashBytes(`${this.options.runId}\u0000${session}`, 16) : this.runTrace;
  }

  private newSpanId(): Buffer {
    this.nextSpan++;
    return hashBytes(`${this.options.runId}\u0000${this.nextSpan}`, 8);
  }

  private synthesized(role: string, t: number): Synthesized {
    return {
      spanId: hashBytes(`${this.options.runId}\u0000${role}`, 8),
      first: t,
      last: t,
      calls: 0,
      events: [],
    };
  }

  /** The span a record of `session` (or of none) hangs under, stretched to cover [t, end]. */
  private parentOf(session: string | undefined, t: number, end: number): Synthesized {
    let parent = this.root;
    if (session) {
      parent = this.sessions.get(session) ?? this.synthesized(`session\u0000${session}`, t);
      this.sessions.set(session, parent);
    }
    parent.first = Math.min(parent.first, t);
    parent.last = Math.max(parent.last, end);
    if (parent !== this.root) this.root.last = Math.max(this.root.last, end);
    return parent;
  }

  /** The `session.cycle` span of a call: the session's calls in one poll cycle. */
  private sessionCycle(session: string | undefined, cycle: number, t: number, end: number): Synthesized {
    this.parentOf(session, t, end);
    let byCycle = this.sessionCycles.get(cycle);
    if (!byCycle) {
      byCycle = new Map();
      this.sessionCycles.set(cycle, byCycle);
    }
    const key = session ?? '';
    let span = byCycle.get(key);
    if (!span) {
      this.nextSpan++;
      span = this.synthesized(`cycle\u0000${this.nextSpan}`, t);
      byCycle.set(key, span);
    }
    span.first = Math.min(span.first, t);
    span.last = Math.max(span.last, end);
    span.calls++;
    return span;
  }

  /** Queues the `session.cycle` spans of poll cycle `cycle` (all of them: undefined). */
  private sendSessionCycles(cycle?: number): void {
    const cycles = cycle === undefined ? [...this.sessionCycles.keys()] : [cycle];
    for (const id of cycles) {
      for (const [session, span] of this.sessionCycles.get(id) ?? []) {
        const owner = session === '' ? this.root : this.sessions.get(session)!;
        this.push({
          traceId: this.traceOf(session || undefined),
          spanId: span.spanId,
          parentSpanId: owner.spanId,
          name: 'session.cycle',
          kind: INTERNAL,
          startTimeUnixNano: this.at(span.first),
          endTimeUnixNano: this.at(span.last),
          attributes: attributes({
            'fleetbench.cycle': id,
            'fleetbench.calls': span.calls,
            'fleetbench.synthesized': true,
            ...(session ? { 'session.id': session } : {}),
          }),
        });
      }
      this.sessionCycles.delete(id);
    }
  }

  /** Queues the `session` spans and the `run` span, with their events (at close). */
  private sendHolders(): void {
    this.sendSessionCycles();
    for (const [session, span] of this.sessions) {
      this.push({
        traceId: this.traceOf(session),
        spanId: span.spanId,
        // The root of its session's trace, linked to the run's (a parent must be in the same trace).
        links: [{ traceId: this.runTrace, spanId: this.root.spanId }],
        name: 'session',
        kind: INTERNAL,
        startTimeUnixNano: this.at(span.first),
        endTimeUnixNano: this.at(span.last),
        attributes: attributes({ 'session.id': session, 'fleetbench.synthesized': true }),
        events: span.events,
      });
    }
    this.push({
      traceId: this.runTrace,
      spanId: this.root.spanId,
      name: 'run',
      kind: INTERNAL,
      startTimeUnixNano: this.at(0),
      endTimeUnixNano: this.at(Math.max(this.root.last, this.lastT)),
      attributes: attributes({
        'fleetbench.run.id': this.options.runId,
        'fleetbench.scenario': this.options.scenario,
        'fleetbench.sessions': this.sessions.size,
        'fleetbench.synthesized': true,
      }),
      events: this.root.events,
    });
    this.sessions.clear();
    this.root.events = [];
  }

  private push(span: OtlpSpan): void {
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

  /** Now, on the run's clock. */
  private nowNanos(): string {
    return runNanos(this.epochNs, this.options.clock.now());
  }

  private metricsRequest(extra: object[] = []): Uint8Array {
    const now = this.nowNanos();
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
      sum('fleetbench.api.calls', '{call}', 'GitHub API calls by resource, operation and status', 'calls'),
      sum(
        'fleetbench.api.points',
        '{point}',
        'primary rate-limit points by resource, operation and status',
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

  /**
   * The budgets' values, limits and verdicts (judged after the run), as gauges. Values are in base
   * units, one metric per unit as the Prometheus exposition has one family per unit
   * (docs/live-runs.md): the OTLP `unit` (`s`, `1` for a 0–1 ratio, `/s`, `{count}`) is what a
   * Prometheus backend turns into the same `_seconds`, `_ratio`, `_per_second` suffixes.
   */
  exportVerdicts(verdicts: readonly Verdict[]): Promise<void> {
    const now = this.nowNanos();
    const byUnit = new Map<string, { measured: object[]; limit: object[] }>();
    const ok: object[] = [];
    for (const verdict of verdicts)
      for (const row of verdict.rows) {
        if (row.status === 'skipped') continue;
        const { suffix, factor } = baseUnit(row.unit);
        const unit = OTLP_UNITS[suffix] ?? '{count}';
        let points = byUnit.get(unit);
        if (!points) {
          points = { measured: [], limit: [] };
          byUnit.set(unit, points);
        }
        for (const stat of row.stats) {
          const attrs = attributes({
            budget: verdict.budget,
            metric: row.metric,
            scope: scopeText(row.scope),
            stat: statLabel(stat.threshold),
            mode: row.mode,
          });
          const at = { attributes: attrs, timeUnixNano: now };
          points.limit.push({ ...at, asDouble: stat.threshold.limit * factor });
          if (stat.measured === null) continue;
          points.measured.push({ ...at, asDouble: stat.measured * factor });
          ok.push({ ...at, asInt: stat.ok ? 1 : 0 });
        }
      }
    const gauge = (name: string, unit: string, description: string, dataPoints: object[]) => ({
      name,
      unit,
      description,
      gauge: { dataPoints },
    });
    // A metric with no data point (rows not judged: no measured value) is left out, not sent empty.
    const extra = [
      ...[...byUnit].flatMap(([unit, points]) => [
        ...(points.measured.length > 0
          ? [gauge('fleetbench.budget.measured', unit, 'budget row: measured value', points.measured)]
          : []),
        gauge('fleetbench.budget.limit', unit, 'budget row: limit', points.limit),
      ]),
      gauge('fleetbench.budget.within_limit', '1', 'budget row: 1 within the limit, 0 over', ok),
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
    this.sendHolders();
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
