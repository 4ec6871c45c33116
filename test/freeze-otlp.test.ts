/**
 * No request freezes a live run's OTLP receiver (issue 38, the second HIGH): an 800 KB body of
 * 200,000 empty spans, under the 16 MiB limit, held the run's process for 27 s (its /metrics
 * answered after 24.6 s) and ended in a 500 "Maximum call stack size exceeded". A request's spans,
 * events, values and nesting are now counted on the wire or in the text before anything is
 * decoded, and what passes is checked and written a slice at a time. Each hostile body here is
 * refused in seconds with the bound it broke, while /metrics keeps answering; a real
 * `fleetbench run` taking them exits within 5 s of SIGTERM.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OTLP_RECEIVER_LIMITS } from '../src/base/limits.ts';
import { RealClock } from '../src/clock/real.ts';
import { type RunningLiveServer, startLiveServer } from '../src/live/server.ts';
import { decodeStatus } from '../src/trace/importers/otlp-proto.ts';
import { BIN } from './helpers/cli.ts';
import { slowestAnswerDuring } from './helpers/probe.ts';
import { scratchDir } from './helpers/tmp.ts';

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** A length-delimited protobuf field. */
function field(number: number, payload: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([(number << 3) | 2, ...varint(payload.length)]), payload]);
}

/** ExportTraceServiceRequest → ResourceSpans → ScopeSpans holding `spans` (the bytes of its field 2s). */
const protobufRequest = (scopeSpans: Uint8Array) => field(1, field(2, scopeSpans));

const now = BigInt(Date.now()) * 1_000_000n;
const span = (i: number) => ({
  name: `op-${i}`,
  startTimeUnixNano: `${now}`,
  endTimeUnixNano: `${now + 1_000_000n}`,
  attributes: [{ key: 'session.id', value: { stringValue: `s${i % 10}` } }],
});
const jsonRequest = (spans: string) => `{"resourceSpans":[{"scopeSpans":[{"spans":[${spans}]}]}]}`;

describe('a live run’s OTLP receiver under hostile exports', () => {
  const clock = new RealClock({ epochMs: Date.now() - 60_000 });
  let written = 0;
  let server: RunningLiveServer;
  beforeAll(async () => {
    server = await startLiveServer({
      port: 0,
      clock,
      trace: {
        write: () => {
          written++;
        },
      },
      otlp: true,
      metrics: async () => '# nothing\n',
    });
  });
  afterAll(async () => {
    await server.close();
    clock.dispose();
  });

  const post = async (body: string | Uint8Array, type: 'json' | 'protobuf') => {
    const started = performance.now();
    const res = await fetch(`${server.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': type === 'json' ? 'application/json' : 'application/x-protobuf' },
      body,
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    const message =
      type === 'json'
        ? ((JSON.parse(Buffer.from(bytes).toString('utf8')) as { message?: string }).message ?? '')
        : res.status === 200
          ? ''
          : decodeStatus(bytes).message;
    return { status: res.status, message, ms: performance.now() - started };
  };

  const hostile: Array<{
    name: string;
    type: 'json' | 'protobuf';
    body: () => string | Uint8Array;
    refusal: RegExp;
  }> = [
    {
      name: '200,000 empty spans (the report’s 800 KB body)',
      type: 'json',
      body: () => jsonRequest(Array(200_000).fill('{}').join(',')),
      refusal: /more than 16,384 spans in one request \(docs\/limits\.md\)/,
    },
    {
      name: 'five million empty arrays in an attribute (16 MB of values)',
      type: 'json',
      body: () =>
        jsonRequest(
          `{"name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"k","value":{"arrayValue":{"values":[${Array(5_000_000).fill('[]').join(',')}]}}}]}`,
        ),
      refusal: /more than 2,000,000 values in one request/,
    },
    {
      name: 'an attribute nested a million deep',
      type: 'json',
      body: () => jsonRequest(`{"name":"x","attributes":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`),
      refusal: /more than 64 levels of nesting/,
    },
    {
      name: 'eight million empty protobuf spans (16 MB)',
      type: 'protobuf',
      body: () => protobufRequest(Buffer.alloc(16_000_000, Buffer.from([0x12, 0x00]))),
      refusal: /more than 16,384 spans in one request/,
    },
    {
      name: 'one protobuf span of eight million status fields',
      type: 'protobuf',
      body: () => protobufRequest(field(2, Buffer.alloc(15_000_000, Buffer.from([0x7a, 0x00])))),
      refusal: /more than 2,000,000 fields in one request/,
    },
    {
      name: 'a protobuf attribute value nested 100,000 deep',
      type: 'protobuf',
      body: () => {
        // AnyValue { array_value (5): ArrayValue { values (1): AnyValue { … } } }: nesting in
        // protobuf is prefixes only, so the levels' headers are made inside out and joined once.
        const headers: Buffer[] = [];
        let size = 0;
        for (let i = 0; i < 50_000; i++) {
          const values = Buffer.from([0x0a, ...varint(size)]);
          size += values.length;
          const array = Buffer.from([0x2a, ...varint(size)]);
          size += array.length;
          headers.push(values, array);
        }
        const value = Buffer.concat(headers.reverse());
        return protobufRequest(field(2, field(9, field(2, value))));
      },
      refusal: /more than 64 levels of nesting/,
    },
  ];

  for (const { name, type, body, refusal } of hostile) {
    it(`refuses ${name} in seconds with the bound, /metrics answered throughout`, async () => {
      const payload = body();
      let answer = { status: 0, message: '', ms: 0 };
      const slowest = await slowestAnswerDuring(`${server.url}/metrics`, async () => {
        answer = await post(payload, type);
      });
      expect(answer.status).toBe(400);
      expect(answer.message).toMatch(refusal);
      expect(slowest).toBeLessThan(2_000);
    }, 60_000);
  }

  it(`takes ${OTLP_RECEIVER_LIMITS.maxSpans.toLocaleString('en-US')} spans in one request, a slice at a time, /metrics answered throughout`, async () => {
    const before = written;
    const body = jsonRequest(
      Array.from({ length: OTLP_RECEIVER_LIMITS.maxSpans }, (_, i) => JSON.stringify(span(i))).join(','),
    );
    let answer = { status: 0, message: '', ms: 0 };
    const slowest = await slowestAnswerDuring(`${server.url}/metrics`, async () => {
      answer = await post(body, 'json');
    });
    expect(answer.status).toBe(200);
    expect(written - before).toBe(OTLP_RECEIVER_LIMITS.maxSpans);
    expect(slowest).toBeLessThan(2_000);
  }, 60_000);

  it('names the first span the schema refuses, without checking the rest', async () => {
    const spans = [JSON.stringify(span(0)), '{}', ...Array(10_000).fill('{}')].join(',');
    const answer = await post(jsonRequest(spans), 'json');
    expect(answer.status).toBe(400);
    expect(answer.message).toMatch(/resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[1\]\.name/);
  });
});

describe('fleetbench run --otlp-port, sent the report’s body', () => {
  it('keeps /metrics answering within 2 s and exits within 5 s of SIGTERM', async () => {
    const out = join(scratchDir('fleetbench-freeze-otlp-'), 'run');
    const child = spawn(
      process.execPath,
      [
        BIN,
        ...['run', 'S2-T1-1', '--clock', 'real', '--set', 'duration=10m', '--set', 'polling.interval=1s'],
        ...['--metrics-port', '0', '--otlp-port', '0', '--no-progress', '--no-report', '--out', out],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 150_000);
    try {
      const urls = await new Promise<{ metrics: string; otlp: string }>((resolve, reject) => {
        child.stderr.on('data', (d) => {
          stderr += d;
          const metrics = /metrics at (\S+)/.exec(stderr)?.[1];
          const otlp = /OTLP spans accepted at (\S+)/.exec(stderr)?.[1];
          if (metrics && otlp) resolve({ metrics, otlp });
        });
        child.once('exit', () => reject(new Error(`the run exited first: ${stderr}`)));
      });
      let status = 0;
      const slowest = await slowestAnswerDuring(
        urls.metrics,
        async () => {
          const res = await fetch(urls.otlp, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: jsonRequest(Array(200_000).fill('{}').join(',')),
          });
          status = res.status;
          await res.text();
        },
        {},
        { serverPid: child.pid },
      );
      expect(status).toBe(400);
      expect(slowest).toBeLessThan(2_000);
      const stopped = performance.now();
      child.kill('SIGTERM');
      const code = await exited;
      expect(performance.now() - stopped).toBeLessThan(5_000);
      expect(code, stderr).toBe(130);
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  }, 180_000);
});
