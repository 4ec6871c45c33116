/**
 * `--otlp-export`: a live run's spans and metrics reach an OTLP/HTTP receiver started here,
 * which decodes them with the OpenTelemetry project's generated protobuf codecs; then through
 * the CLI, with the budgets' verdicts exported after the run.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveTelemetry } from '../src/live/index.ts';
import { executeRun } from '../src/run/pipeline.ts';
import { planScenario } from '../src/run/plan.ts';
import { decodeMetricsRequest, decodeTraceRequest } from '../src/trace/importers/otlp-proto.ts';
import { readTrace } from '../src/trace/reader.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { parseOverride } from '../src/workload/load.ts';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

interface Attr {
  key: string;
  value: { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean };
}
interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: Attr[];
  events?: Array<{ name: string; timeUnixNano: string }>;
  links?: Array<{ traceId: string; spanId: string }>;
}
interface Metric {
  name: string;
  unit?: string;
  sum?: { dataPoints: Array<{ attributes: Attr[]; asDouble: number }> };
  gauge?: { dataPoints: Array<{ attributes: Attr[]; asDouble?: number; asInt?: string }> };
  histogram?: { dataPoints: Array<{ count: string; bucketCounts: string[] }> };
}

const dir = scratchDir('fleetbench-otlp-out-');
const received = {
  spans: [] as Span[],
  metrics: [] as Metric[][],
  requests: 0,
  traceRequests: 0,
  types: new Set<string>(),
  resource: [] as Attr[],
};
let server: Server;
let url = '';

const attr = (attrs: Attr[] | undefined, key: string) => {
  const v = attrs?.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.intValue ?? v?.doubleValue ?? v?.boolValue;
};

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    received.requests++;
    received.types.add(req.headers['content-type'] ?? '');
    if (req.url === '/v1/traces') {
      received.traceRequests++;
      const request = decodeTraceRequest(body, 'protobuf') as {
        resourceSpans: Array<{ resource: { attributes: Attr[] }; scopeSpans: Array<{ spans: Span[] }> }>;
      };
      for (const rs of request.resourceSpans) {
        received.resource = rs.resource.attributes;
        for (const ss of rs.scopeSpans) received.spans.push(...(ss.spans ?? []));
      }
    } else if (req.url === '/v1/metrics') {
      const request = decodeMetricsRequest(body) as {
        resourceMetrics: Array<{ scopeMetrics: Array<{ metrics: Metric[] }> }>;
      };
      received.metrics.push(
        request.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((s) => s.metrics)),
      );
    }
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('--otlp-export', () => {
  it("sends the run's spans on the run's clock, with parents and events, and its API metrics", async () => {
    // At --time-scale 10: a run second is 0.1 s of wall time, and the export must say run time.
    const { scenario } = resolveScenarioRef(
      'S2-T1-5',
      ['clock=real', 'time-scale=10', 'duration=25s', 'polling.interval=5s', 'sessions.spawn-time=1s'].map(
        parseOverride,
      ),
    );
    const started = performance.now();
    const { outcome } = await executeRun(planScenario(scenario, join(dir, 'in-process')), {
      attach: liveTelemetry({ otlpExport: url }),
    });
    const wallMs = performance.now() - started;
    expect(outcome.reason).toBe('completed');
    const { records, stats } = await readTrace(outcome.tracePath);
    expect(received.types).toEqual(new Set(['application/x-protobuf']));
    expect(Number(attr(received.resource, 'fleetbench.time_scale'))).toBe(10);

    // Every span record as a span, with the trace's own times: start at the run's epoch plus
    // its t, lasting its dur (run milliseconds, not wall: at scale 10 a wall clock would give a
    // tenth), to the nanosecond's rounding.
    const epochNs = BigInt(stats.header!.epochMs) * 1_000_000n;
    const ns = (ms: number) => BigInt(Math.round(ms * 1e6));
    // Those that ended within the run: what is written while the run shuts down (a last poll
    // cycle on a loaded machine) comes after the export's last flush.
    const spanRecords = records.filter((r) => r.kind === 'span').filter((r) => r.t + (r.dur ?? 0) <= 25_000);
    const bySignature = new Map<string, Span>();
    for (const span of received.spans)
      bySignature.set(
        `${span.name} ${attr(span.attributes, 'session.id') ?? ''} ${BigInt(span.startTimeUnixNano) - epochNs}`,
        span,
      );
    let withDuration = 0;
    for (const record of spanRecords) {
      const start = ns(record.t);
      const candidates = [start - 1n, start, start + 1n].map((offset) =>
        bySignature.get(`${record.name} ${record.session ?? ''} ${offset}`),
      );
      const span = candidates.find(Boolean);
      expect(span, `${record.name} at ${record.t}`).toBeDefined();
      const exportedDur = BigInt(span!.endTimeUnixNano) - BigInt(span!.startTimeUnixNano);
      const dur = ns(record.dur ?? 0);
      expect(
        exportedDur >= dur - 2n && exportedDur <= dur + 2n,
        `${record.name}: ${exportedDur} vs ${dur}`,
      ).toBe(true);
      if ((record.dur ?? 0) > 100) withDuration++;
    }
    expect(withDuration).toBeGreaterThan(0);

    // Parents: session → session.cycle → call, in the session's trace; the fleet's own spans
    // under the run span. Every parent is a span that was sent, in the same trace.
    const byId = new Map(received.spans.map((s) => [s.spanId, s]));
    for (const span of received.spans) {
      if (span.parentSpanId === undefined || span.parentSpanId === '') continue;
      const parent = byId.get(span.parentSpanId);
      expect(parent, `parent of ${span.name}`).toBeDefined();
      expect(parent!.traceId).toBe(span.traceId);
    }
    const roots = received.spans.filter((s) => !s.parentSpanId);
    expect(new Set(roots.map((s) => s.name))).toEqual(new Set(['run', 'session']));
    const sessionCall = received.spans.find(
      (s) =>
        attr(s.attributes, 'github.operation') !== undefined &&
        attr(s.attributes, 'session.id') !== undefined,
    );
    expect(sessionCall).toBeDefined();
    const cycle = byId.get(sessionCall!.parentSpanId!)!;
    expect(cycle.name).toBe('session.cycle');
    expect(byId.get(cycle.parentSpanId!)!.name).toBe('session');
    // One trace per session.
    const s1 = received.spans.filter((s) => attr(s.attributes, 'session.id') === 's-0001');
    expect(s1.length).toBeGreaterThan(0);
    expect(new Set(s1.map((s) => s.traceId)).size).toBe(1);

    // Events are span events (of their session's span, or the run's), not spans of their own:
    // those written while the run was live (the closing records, such as the /rate_limit
    // bracket taken after the run, come after the export ends).
    const eventRecords = records.filter((r) => r.kind === 'event');
    const spanEvents = received.spans.flatMap((s) => s.events ?? []);
    expect(spanEvents.length).toBeGreaterThan(eventRecords.length * 0.8);
    expect(spanEvents.length).toBeLessThanOrEqual(eventRecords.length);
    const eventNames = new Set(eventRecords.map((r) => r.name));
    expect(received.spans.filter((s) => eventNames.has(s.name))).toEqual([]);
    // Batched: what is queued goes in one request a flush (every 250 ms, and a last one at the
    // end), however many spans that is. Not a count of spans per request: on a busy machine a
    // run's spans come unevenly and the metrics exports (every 5 s) are requests too, so the
    // ratio of requests to spans was 17 to 85 at load 9 against about 1 to 10 on a quiet one.
    expect(received.traceRequests).toBeLessThanOrEqual(Math.ceil(wallMs / 250) + 2);
    expect(received.traceRequests).toBeLessThan(received.spans.length / 2);

    // The last metrics export holds every API call the trace has, by resource, operation and
    // session: calls still in flight at the planned end (answered while the target stops) and the
    // /rate_limit bracket read after it included.
    const last = received.metrics.at(-1)!;
    const calls = last.find((m) => m.name === 'fleetbench.api.calls')!;
    const apiRecords = records.filter((r) => r.kind === 'api');
    const exportedCalls = calls.sum!.dataPoints.reduce((a, p) => a + p.asDouble, 0);
    expect(exportedCalls).toBe(apiRecords.length);
    expect(calls.sum!.dataPoints.some((p) => attr(p.attributes, 'operation') === 'guard-pr-list')).toBe(true);
    // No series per session: a 100,000-session run would be 100,000 of them.
    expect(calls.sum!.dataPoints.some((p) => attr(p.attributes, 'session') !== undefined)).toBe(false);
    expect(new Set(calls.sum!.dataPoints.map((p) => attr(p.attributes, 'resource')))).toContain('core');
    const latency = last.find((m) => m.name === 'fleetbench.api.call.duration')!;
    expect(latency.histogram!.dataPoints.reduce((a, p) => a + Number(p.count), 0)).toBe(exportedCalls);
    expect(last.some((m) => m.name === 'fleetbench.schedule.lag')).toBe(true);
  }, 60_000);

  it('the CLI exports the budget verdicts after the run and says what it sent', async () => {
    received.metrics.length = 0;
    const child = spawn(
      process.execPath,
      [
        BIN,
        'run',
        'S2-T1-1',
        '--clock',
        'real',
        '--set',
        'duration=1500ms',
        // A steady window of two 500 ms poll intervals: the headroom projections are judged.
        '--set',
        'polling.interval=500ms',
        '--set',
        'markers.steady-start=300ms',
        '--no-progress',
        '--no-report',
        '--otlp-export',
        url,
        '--out',
        join(dir, 'cli'),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect([0, 99], stderr).toContain(code);
    expect(stderr).toMatch(/OTLP export to http:\/\/127\.0\.0\.1:\d+: \d+ spans sent\n/);
    const budgets = received.metrics.flat().filter((m) => m.name === 'fleetbench.budget.within_limit');
    expect(budgets.length).toBe(1);
    expect(budgets[0]!.gauge!.dataPoints.length).toBeGreaterThan(0);
    expect(attr(budgets[0]!.gauge!.dataPoints[0]!.attributes, 'budget')).toBeDefined();
    // Values in base units, one metric per unit (as the Prometheus families): no unit attribute,
    // latencies in seconds, headroom as a 0-1 ratio.
    const measured = received.metrics.flat().filter((m) => m.name === 'fleetbench.budget.measured');
    const units = measured.map((m) => m.unit);
    expect(new Set(units).size).toBe(units.length);
    for (const u of units) expect(['s', '1', '/s', '{count}']).toContain(u);
    for (const m of measured)
      for (const point of m.gauge!.dataPoints) expect(attr(point.attributes, 'unit')).toBeUndefined();
    const limits = received.metrics.flat().filter((m) => m.name === 'fleetbench.budget.limit');
    const ratioLimits = limits.find((m) => m.unit === '1');
    expect(ratioLimits, 'a cost run judges headroom, a ratio').toBeDefined();
    // Percent limits (headroom >= 20%) arrive as ratios (0.2), never as 20.
    for (const point of ratioLimits!.gauge!.dataPoints)
      expect(Math.abs(point.asDouble!)).toBeLessThanOrEqual(1);
  }, 60_000);
});
