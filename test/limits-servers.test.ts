/**
 * Hostile requests against every server fleetbench runs (issue 19): a body just over the limit is
 * refused 413 with a JSON error before it is buffered (a stranger's token is refused before its
 * body is read at all), and the server answers the next request as before; a GraphQL query
 * nested thousands deep is an error answer, not a stack overflow; a live run's OTLP receiver
 * counts spans with impossible times (`target.bad_record`) instead of writing them.
 */
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BODY_LIMITS, GRAPHQL_LIMITS } from '../src/base/limits.ts';
import { RealClock } from '../src/clock/real.ts';
import { startLiveServer } from '../src/live/server.ts';
import { startReferenceServer } from '../src/reference/server.ts';
import { startSupervisor } from '../src/reference/supervisor.ts';
import { decodeStatus } from '../src/trace/importers/otlp-proto.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';

/** A POST with a body of `size` bytes, through node:http (no client-side limits in the way). */
function post(
  url: string,
  size: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started }));
      },
    );
    // The upload may be cut short once the server has answered: that is the point.
    req.on('error', (error) =>
      error.message.includes('EPIPE') || error.message.includes('ECONNRESET') ? undefined : reject(error),
    );
    req.end(Buffer.alloc(size, 0x20));
  });
}

describe('request bodies are bounded on every server', () => {
  const dir = scratchDir('fleetbench-limits-');

  it("github serve: 413 with GitHub's error shape just over the limit; the server answers afterwards", async () => {
    const { emulator } = inProcess();
    const server = await serve(emulator);
    const heapBefore = process.memoryUsage().heapUsed;
    const refused = await post(`${server.url}/graphql`, BODY_LIMITS.github + 1, {
      authorization: `token ${emulator.defaultToken}`,
    });
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body).message).toMatch(/Request body too large.*docs\/limits\.md/);
    // In seconds (a few ms on a quiet machine), never after the whole upload was buffered.
    expect(refused.ms).toBeLessThan(30_000);
    // Nothing of the refused body was kept.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(4 * BODY_LIMITS.github);
    const after = await fetch(`${server.url}/rate_limit`, {
      headers: { authorization: `token ${emulator.defaultToken}` },
    });
    expect(after.status).toBe(200);
    // A chunked body (no Content-Length) is cut at the limit as well.
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${server.url}/graphql`,
        { method: 'POST', headers: { authorization: `token ${emulator.defaultToken}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (error) => (/EPIPE|ECONNRESET/.test(error.message) ? undefined : reject(error)));
      const piece = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 6; i++) req.write(piece);
      req.end();
    });
    expect(chunked).toBe(413);
  });

  it('github serve: an unknown token is refused 401 without its body being read', async () => {
    const { emulator } = inProcess();
    const server = await serve(emulator);
    const refused = await post(`${server.url}/graphql`, 64 * 1024, { authorization: 'token stranger' });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body).message).toBe('Bad credentials');
  });

  it('reference serve (supervisor and control plane): 413 too_large, then the next request is served', async () => {
    const supervisor = await startSupervisor({ stateDir: join(dir, 'state') });
    try {
      const refused = await post(`${supervisor.url}/v1/sessions`, BODY_LIMITS.reference + 1);
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body).error.code).toBe('too_large');
      const info = await fetch(`${supervisor.url}/v1/info`);
      expect(info.status).toBe(200);
      expect(supervisor.childPid()).toBeGreaterThan(0);
    } finally {
      await supervisor.close();
    }
    const child = await startReferenceServer({ stateDir: join(dir, 'state2'), emit: () => undefined });
    try {
      const refused = await post(`http://127.0.0.1:${child.port}/v1/run`, BODY_LIMITS.reference + 1);
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body).error).toMatchObject({ code: 'too_large' });
      expect((await fetch(`http://127.0.0.1:${child.port}/v1/info`)).status).toBe(200);
    } finally {
      await child.close();
    }
  });
});

describe('GraphQL documents are bounded', () => {
  it(`a query nested 3,000 deep is an error answer naming the max depth (${GRAPHQL_LIMITS.maxDepth})`, async () => {
    const { graphql } = inProcess();
    const query = `query { ${'repository(owner: "a", name: "b") { '.repeat(3_000)}id${' }'.repeat(3_000)} }`;
    const res = await graphql(query);
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.errors[0].message).toMatch(/exceeds max depth of 50/);
    expect(res.body).not.toMatch(/call stack/);
  });

  it('a query of more tokens than the limit is refused by the parser', async () => {
    const { graphql } = inProcess();
    const query = `query { rateLimit { ${'limit '.repeat(GRAPHQL_LIMITS.maxTokens)} } }`;
    const body = JSON.parse((await graphql(query)).body);
    expect(body.errors[0].message).toMatch(/more th.. 50000 tokens/);
  });
});

describe('the live OTLP receiver', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });

  const span = (name: string, start: string, end: string) => ({
    resourceSpans: [{ scopeSpans: [{ spans: [{ name, startTimeUnixNano: start, endTimeUnixNano: end }] }] }],
  });

  it('counts spans with impossible times as target.bad_record (partial success), keeps the good ones', async () => {
    const clock = new RealClock({ timeScale: 1 });
    const sink = new MemorySink();
    const server = await startLiveServer({ port: 0, clock, trace: sink, otlp: true });
    servers.push(server);
    const epochNs = BigInt(Math.round(clock.epochMs)) * 1_000_000n;
    const at = (ms: number) => String(epochNs + BigInt(ms) * 1_000_000n);
    const send = async (body: unknown) => {
      const res = await fetch(`${server.url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const far = await send(span('far', '9'.repeat(30), '9'.repeat(30)));
    expect(far.status).toBe(200);
    expect(far.body).toMatchObject({ partialSuccess: { rejectedSpans: 1 } });
    const backwards = await send(span('backwards', at(2_000), at(1_000)));
    expect((backwards.body.partialSuccess as { errorMessage: string }).errorMessage).toMatch(
      /'backwards': endTimeUnixNano is before startTimeUnixNano/,
    );
    const good = await send(span('good', at(1_000), at(1_500)));
    expect(good.body).toEqual({});
    expect(server.received).toMatchObject({ spans: 1, badRecords: 2 });
    expect(sink.records.filter((r) => r.kind === 'span').map((r) => r.name)).toEqual(['good']);
    expect(sink.records.filter((r) => r.kind === 'event' && r.name === 'target.bad_record')).toHaveLength(2);
    clock.dispose();
  });

  it('an 11-byte malformed protobuf (a length varint that never ends) is a 400 with a Status, not an empty 200', async () => {
    const clock = new RealClock({ timeScale: 1 });
    const sink = new MemorySink();
    const server = await startLiveServer({ port: 0, clock, trace: sink, otlp: true });
    servers.push(server);
    const res = await fetch(`${server.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: Buffer.from([0x0a, ...Array(10).fill(0x80)]),
    });
    expect(res.status).toBe(400);
    const status = decodeStatus(new Uint8Array(await res.arrayBuffer()));
    expect(status.message).toMatch(
      /not an OTLP ExportTraceServiceRequest \(protobuf\): invalid varint encoding/,
    );
    expect(sink.records).toEqual([]);
    // A negative enum is a 10-byte varint that does end: still read.
    const { ExportTraceServiceRequest } = await import('../src/trace/importers/otlp-proto.ts');
    const now = BigInt(Date.now()) * 1_000_000n;
    const good = ExportTraceServiceRequest.encode(
      ExportTraceServiceRequest.fromObject({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    name: 'ok',
                    kind: -1,
                    startTimeUnixNano: String(now),
                    endTimeUnixNano: String(now + 1_000_000n),
                  },
                ],
              },
            ],
          },
        ],
      }),
    ).finish();
    const ok = await fetch(`${server.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: Buffer.from(good),
    });
    expect(ok.status).toBe(200);
    clock.dispose();
  });

  it('refuses a body over its limit with 413 and goes on serving', async () => {
    const clock = new RealClock({ timeScale: 1 });
    const server = await startLiveServer({
      port: 0,
      clock,
      trace: new MemorySink(),
      otlp: true,
      maxBodyBytes: 1024,
    });
    servers.push(server);
    const refused = await post(`${server.url}/v1/traces`, 1025);
    expect(refused.status).toBe(413);
    const ok = await fetch(`${server.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"resourceSpans":[]}',
    });
    expect(ok.status).toBe(200);
    clock.dispose();
  });
});
