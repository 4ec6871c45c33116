/**
 * OTLP in, driven by the real OpenTelemetry JS SDK and exporters: the protobuf exporter
 * (`exporter-trace-otlp-proto`, what most SDKs and the Collector's otlphttp exporter send) and
 * the JSON one (`exporter-trace-otlp-http`), each with and without gzip, against the live
 * receiver; refused bodies answered with a google.rpc.Status in the request's encoding; and
 * `fleetbench import otlp` on protobuf files (bare and the Collector file exporter's
 * length-prefixed stream), gzipped files and JSON Lines.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { SpanStatusCode } from '@opentelemetry/api';
import { OTLPTraceExporter as HttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealClock } from '../src/clock/real.ts';
import { type RunningLiveServer, startLiveServer } from '../src/live/server.ts';
import { decodeStatus, encodeTraceRequest } from '../src/trace/importers/otlp-proto.ts';
import { readTrace } from '../src/trace/reader.ts';
import type { EventRecord, SpanRecord } from '../src/trace/schema.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-otlp-in-');
const records: Array<SpanRecord | EventRecord> = [];
let server: RunningLiveServer;
// The run started a minute ago: the spans below begin 250 ms before they are exported, and a
// span from before the run's start is refused as a bad record (docs/limits.md).
const clock = new RealClock({ epochMs: Date.now() - 60_000 });

beforeAll(async () => {
  server = await startLiveServer({
    port: 0,
    clock,
    trace: { write: (record) => records.push(record as SpanRecord | EventRecord) },
    otlp: true,
  });
});
afterAll(async () => {
  await server.close();
  clock.dispose();
});

/** Exports two spans (one failed, with an event) through a real SDK pipeline. */
async function exportWith(exporter: SpanExporter, session: string): Promise<void> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'orchestrator' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('otlp-in-test');
  const started = Date.now() - 250;
  const span = tracer.startSpan('provider.boot', {
    startTime: started,
    attributes: { 'session.id': session, adapter: 'codex', start: 'cold', attempt: 2 },
  });
  span.addEvent('first.activity', { kind: 'text' }, started + 100);
  span.end(started + 200);
  const failed = tracer.startSpan('runner.launch', {
    startTime: started,
    attributes: { 'session.id': session },
  });
  failed.setStatus({ code: SpanStatusCode.ERROR, message: 'exit 1' });
  failed.end(started + 50);
  await provider.forceFlush();
  await provider.shutdown();
}

describe('OTLP/HTTP receiver with the real OpenTelemetry exporters', () => {
  const cases = [
    {
      name: 'protobuf',
      make: (c: CompressionAlgorithm) => new ProtoExporter({ url: url(), compression: c }),
    },
    { name: 'JSON', make: (c: CompressionAlgorithm) => new HttpJsonExporter({ url: url(), compression: c }) },
  ] as const;
  const url = () => `${server.url}/v1/traces`;

  for (const { name, make } of cases) {
    for (const compression of [CompressionAlgorithm.NONE, CompressionAlgorithm.GZIP]) {
      it(`takes ${name} spans${compression === CompressionAlgorithm.GZIP ? ', gzipped' : ''}`, async () => {
        const session = `s-${name}-${compression}`;
        const before = server.received.rejected;
        await exportWith(make(compression), session);
        expect(server.received.rejected).toBe(before);
        const mine = records.filter((r) => r.session === session);
        const boot = mine.find((r): r is SpanRecord => r.kind === 'span' && r.name === 'provider.boot');
        expect(boot).toBeDefined();
        expect(boot!.dur).toBeCloseTo(200, 3);
        expect(boot!.outcome).toBe('ok');
        expect(boot!.labels).toMatchObject({
          adapter: 'codex',
          start: 'cold',
          attempt: 2,
          service: 'orchestrator',
        });
        // Placed on the run's clock: it started about 250 ms before it was exported.
        expect(boot!.t).toBeLessThan(clock.now());
        expect(boot!.t).toBeGreaterThan(clock.now() - 60_000);
        const launch = mine.find((r) => r.kind === 'span' && r.name === 'runner.launch') as SpanRecord;
        expect(launch.outcome).toBe('error');
        const event = mine.find((r) => r.kind === 'event') as EventRecord;
        expect(event).toMatchObject({
          name: 'first.activity',
          labels: { kind: 'text', span: 'provider.boot' },
        });
        expect(event.t - boot!.t).toBeCloseTo(100, 3);
      });
    }
  }

  it('answers refused bodies with a google.rpc.Status in the request encoding', async () => {
    const post = (type: string, body: Uint8Array | string, encoding?: string) =>
      fetch(`${server.url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': type, ...(encoding ? { 'content-encoding': encoding } : {}) },
        body,
      });
    const garbage = await post('application/x-protobuf', new Uint8Array([0x0a, 0xff, 0xff, 0x01]));
    expect(garbage.status).toBe(400);
    expect(garbage.headers.get('content-type')).toBe('application/x-protobuf');
    const status = decodeStatus(new Uint8Array(await garbage.arrayBuffer()));
    expect(status.code).toBe(3);
    expect(status.message).toMatch(/ExportTraceServiceRequest/);

    // Valid protobuf whose span has no name: the schema's field path is named.
    const nameless = encodeTraceRequest({
      resourceSpans: [{ scopeSpans: [{ spans: [{ startTimeUnixNano: '1', endTimeUnixNano: '2' }] }] }],
    });
    const bad = await post('application/x-protobuf', nameless);
    expect(bad.status).toBe(400);
    expect(decodeStatus(new Uint8Array(await bad.arrayBuffer())).message).toMatch(/spans\[0\]\.name/);

    const badGzip = await post('application/json', 'not gzip', 'gzip');
    expect(badGzip.status).toBe(400);
    expect(await badGzip.json()).toMatchObject({ code: 3, message: expect.stringMatching(/gzip/) });

    const brotli = await post('application/json', '{}', 'br');
    expect(brotli.status).toBe(415);
    const text = await post('text/plain', 'hello');
    expect(text.status).toBe(415);
    expect(((await text.json()) as { message: string }).message).toMatch(
      /application\/x-protobuf or application\/json/,
    );
  });
});

describe('fleetbench import otlp: protobuf, gzip, JSON Lines', () => {
  const request = (name: string, startMs: number) => ({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'orchestrator' } }] },
        scopeSpans: [
          {
            spans: [
              {
                // Hex, as OTLP/JSON writes ids.
                traceId: '5b8efff798038103d269b633813fc60c',
                spanId: 'eee19b7ec3c1b174',
                name,
                startTimeUnixNano: `${BigInt(startMs) * 1_000_000n}`,
                endTimeUnixNano: `${BigInt(startMs + 40) * 1_000_000n}`,
                attributes: [
                  { key: 'session.id', value: { stringValue: 's1' } },
                  { key: 'adapter', value: { stringValue: 'claude' } },
                ],
              },
            ],
          },
        ],
      },
    ],
  });
  const start = Date.UTC(2026, 5, 1, 12, 0, 0);

  async function importAndRead(path: string) {
    const out = `${path}.fleetbench.jsonl`;
    const result = await cli(['import', 'otlp', path, '-o', out]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const trace = await readTrace(out);
    return trace.records.filter((r): r is SpanRecord => r.kind === 'span');
  }

  it('reads one protobuf request, and the Collector file exporter stream (length-prefixed)', async () => {
    const bare = join(dir, 'one.pb');
    writeFileSync(bare, encodeTraceRequest(request('agent.boot', start)));
    const one = await importAndRead(bare);
    expect(one.map((s) => [s.name, s.t, s.dur, s.session, s.labels?.adapter])).toEqual([
      ['agent.boot', 0, 40, 's1', 'claude'],
    ]);

    const frames = [request('a', start), request('b', start + 1000), request('c', start + 2000)].map((r) => {
      const bytes = encodeTraceRequest(r);
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32BE(bytes.length);
      return Buffer.concat([prefix, bytes]);
    });
    const stream = join(dir, 'collector.proto');
    writeFileSync(stream, Buffer.concat(frames));
    const three = await importAndRead(stream);
    expect(three.map((s) => [s.name, s.t])).toEqual([
      ['a', 0],
      ['b', 1000],
      ['c', 2000],
    ]);
    // The same messages gzipped.
    const gz = join(dir, 'collector.proto.gz');
    writeFileSync(gz, gzipSync(Buffer.concat(frames)));
    expect((await importAndRead(gz)).map((s) => s.name)).toEqual(['a', 'b', 'c']);
  });

  it('reads the file exporter JSON lines, gzipped', async () => {
    const lines = join(dir, 'traces.jsonl.gz');
    const objects = [request('x', start), request('y', start + 5)];
    writeFileSync(lines, gzipSync(`${objects.map((o) => JSON.stringify(o)).join('\n')}\n`));
    expect((await importAndRead(lines)).map((s) => [s.name, s.t])).toEqual([
      ['x', 0],
      ['y', 5],
    ]);
  });

  it('names the file when protobuf does not decode', async () => {
    const junk = join(dir, 'junk.pb');
    writeFileSync(junk, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]));
    const result = await cli(['import', 'otlp', junk, '-o', join(dir, 'junk.out.jsonl')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/junk\.pb: not an OTLP ExportTraceServiceRequest \(protobuf\)/);
  });
});

describe('OTLP/HTTP receiver after the run', () => {
  it('stops receiving when the run ends (otlp off) while the same server still serves /metrics', async () => {
    const options = {
      port: 0,
      clock,
      trace: { write: () => undefined },
      otlp: true,
      metrics: async () => 'fleetbench_up 1\n',
    };
    const lingering = await startLiveServer(options);
    try {
      const post = () =>
        fetch(`${lingering.url}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ resourceSpans: [] }),
        });
      expect((await post()).status).toBe(200);
      // What live telemetry does when the run ends and the metrics endpoint lingers.
      options.otlp = false;
      const refused = await post();
      expect(refused.status).toBe(404);
      expect((await (await fetch(`${lingering.url}/metrics`)).text()).trim()).toBe('fleetbench_up 1');
    } finally {
      await lingering.close();
    }
  });
});
