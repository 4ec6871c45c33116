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
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: Attr[];
}
interface Metric {
  name: string;
  sum?: { dataPoints: Array<{ attributes: Attr[]; asDouble: number }> };
  gauge?: { dataPoints: Array<{ attributes: Attr[]; asDouble?: number; asInt?: string }> };
  histogram?: { dataPoints: Array<{ count: string; bucketCounts: string[] }> };
}

const dir = scratchDir('fleetbench-otlp-out-');
const received = { spans: [] as Span[], metrics: [] as Metric[][], requests: 0, types: new Set<string>() };
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
      const request = decodeTraceRequest(body, 'protobuf') as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Span[] }> }>;
      };
      for (const rs of request.resourceSpans)
        for (const ss of rs.scopeSpans) received.spans.push(...(ss.spans ?? []));
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
  it("sends the run's spans and its API metrics, batched, decodable by the official codecs", async () => {
    const { scenario } = resolveScenarioRef(
      'S2-T1-5',
      ['clock=real', 'duration=2500ms', 'polling.interval=500ms', 'sessions.spawn-time=100ms'].map(
        parseOverride,
      ),
    );
    const { outcome } = await executeRun(planScenario(scenario, join(dir, 'in-process')), {
      attach: liveTelemetry({ otlpExport: url }),
    });
    expect(outcome.reason).toBe('completed');
    const { records, stats } = await readTrace(outcome.tracePath);
    expect(received.types).toEqual(new Set(['application/x-protobuf']));

    // Every span record, and the events written while the run was live (the trace's closing
    // records, such as the /rate_limit bracket taken after the run, come after the export ends).
    const spanRecords = records.filter((r) => r.kind === 'span');
    const eventRecords = records.filter((r) => r.kind === 'event');
    const exported = received.spans.filter((s) => attr(s.attributes, 'fleetbench.event') === undefined);
    expect(exported.map((s) => s.name).sort()).toEqual(spanRecords.map((r) => r.name).sort());
    const events = received.spans.length - exported.length;
    expect(events).toBeGreaterThan(eventRecords.length * 0.8);
    expect(events).toBeLessThanOrEqual(eventRecords.length);
    // Batched: far fewer requests than spans.
    expect(received.requests).toBeLessThan(received.spans.length / 5);
    // One trace per session.
    const s1 = received.spans.filter((s) => attr(s.attributes, 'session.id') === 's-0001');
    expect(s1.length).toBeGreaterThan(0);
    expect(new Set(s1.map((s) => s.traceId)).size).toBe(1);
    // Times: the run's wall clock, in Unix nanoseconds.
    const epochNs = BigInt(stats.header!.epochMs) * 1_000_000n;
    for (const span of received.spans) {
      expect(BigInt(span.startTimeUnixNano)).toBeGreaterThanOrEqual(epochNs - 1_000_000n);
      expect(BigInt(span.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(span.startTimeUnixNano));
    }

    // The last metrics export holds every API call, by resource, operation and session.
    const last = received.metrics.at(-1)!;
    const calls = last.find((m) => m.name === 'fleetbench.api.calls')!;
    // Every call answered while the run was live: calls still in flight when it ends, and the
    // /rate_limit bracket read after it, are recorded after the export has ended.
    const apiRecords = records.filter((r) => r.kind === 'api' && r.source !== 'harness');
    const exportedCalls = calls.sum!.dataPoints.reduce((a, p) => a + p.asDouble, 0);
    expect(exportedCalls).toBeLessThanOrEqual(apiRecords.length);
    expect(exportedCalls).toBeGreaterThanOrEqual(apiRecords.length - 5);
    expect(calls.sum!.dataPoints.some((p) => attr(p.attributes, 'operation') === 'guard-pr-list')).toBe(true);
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
  }, 60_000);
});
