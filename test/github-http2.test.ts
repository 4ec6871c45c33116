/**
 * The TLS binding speaks HTTP/2 to clients that offer h2 by ALPN (as github.com does) and
 * HTTP/1.1 to the others; plain HTTP stays HTTP/1.1. Driven with node:http2 and node:https
 * clients against a real server on 127.0.0.1.
 */

import { Agent, request as httpRequest } from 'node:http';
import { connect, constants } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSelfSignedCert } from '../src/github/index.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-h2-');
/** HTTP/2 is served over TLS only, with a certificate made by openssl. */
const openssl = systemTool('openssl', ['version'], 'openssl');

describe.skipIf(openssl.skip)('HTTP/2 over TLS', () => {
  const h = inProcess();
  let url = '';
  let cert = '';

  beforeAll(async () => {
    openssl.require();
    const made = generateSelfSignedCert(join(dir, 'tls'));
    cert = made.cert;
    url = (await serve(h.emulator, made)).url;
  });

  function h2get(path: string, headers: Record<string, string> = {}) {
    return new Promise<{ status: number; headers: Record<string, unknown>; body: string; alpn: string }>(
      (resolve, reject) => {
        const session = connect(url, { ca: cert });
        session.on('error', reject);
        const stream = session.request({
          [constants.HTTP2_HEADER_PATH]: path,
          authorization: `token ${h.emulator.defaultToken}`,
          ...headers,
        });
        let status = 0;
        let got: Record<string, unknown> = {};
        let body = '';
        stream.on('response', (response) => {
          status = Number(response[constants.HTTP2_HEADER_STATUS]);
          got = response;
        });
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          body += chunk;
        });
        stream.on('end', () => {
          const alpn = session.alpnProtocol ?? '';
          session.close();
          resolve({ status, headers: got, body, alpn });
        });
        stream.on('error', reject);
        stream.end();
      },
    );
  }

  it('answers h2 clients over HTTP/2, with the rate-limit headers and free 304s', async () => {
    const first = await h2get('/repos/fleetbench/repo-1/pulls');
    expect(first.alpn).toBe('h2');
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-used']).toBe('1');
    expect(JSON.parse(first.body).map((p: { number: number }) => p.number)).toEqual([7, 6]);
    const again = await h2get('/api/v3/repos/fleetbench/repo-1/pulls', {
      'if-none-match': String(first.headers.etag),
    });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers['x-ratelimit-used']).toBe('1');
    // Link headers carry the :authority the client used.
    const paged = await h2get('/repos/fleetbench/repo-1/issues?per_page=2');
    expect(String(paged.headers.link)).toContain(
      `<${url}/repos/fleetbench/repo-1/issues?per_page=2&page=2>; rel="next"`,
    );
  });

  it('falls back to HTTP/1.1 for a client that does not offer h2', async () => {
    const version = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest(
        `${url}/rate_limit`,
        { ca: cert, headers: { authorization: `token ${h.emulator.defaultToken}` } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(`${res.httpVersion} ${res.statusCode}`));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(version).toBe('1.1 200');
  });
});

describe('in flight from arrival until the answer is written', () => {
  it('150 requests held open without modelled latency: 100 answered, 50 refused at arrival', async () => {
    // Content-creation limits out of the way: only the concurrency limit is under test.
    const h = inProcess({ limits: { secondary: { contentPerMinute: 1000, contentPerHour: 1000 } } });
    const { url } = await serve(h.emulator);
    const agent = new Agent({ keepAlive: false, maxSockets: 200 });
    const auth = `token ${h.emulator.defaultToken}`;
    // 150 POSTs whose headers arrive now and whose bodies follow once the refusals are in.
    let refusedSoFar = 0;
    const pending = Array.from({ length: 150 }, () => {
      const req = httpRequest(`${url}/repos/fleetbench/repo-1/issues/1/comments`, {
        method: 'POST',
        agent,
        headers: { authorization: auth, 'content-type': 'application/json', 'content-length': '14' },
      });
      const answered = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          if (res.statusCode === 403) refusedSoFar++;
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
      req.flushHeaders();
      return { req, answered };
    });
    for (let i = 0; i < 500 && (h.emulator.stats().inFlight < 100 || refusedSoFar < 50); i++)
      await new Promise((r) => setTimeout(r, 10));
    // The limit's number in flight; the other 50 answered at arrival, their bodies never read.
    expect(h.emulator.stats().inFlight).toBe(100);
    expect(refusedSoFar).toBe(50);
    for (const p of pending) p.req.end('{"body":"hi"}\n');
    const statuses = await Promise.all(pending.map((p) => p.answered));
    agent.destroy();
    expect(statuses.filter((s) => s === 201)).toHaveLength(100);
    expect(statuses.filter((s) => s === 403)).toHaveLength(50);
    const refused = h.apiRecords().filter((r) => r.status === 403);
    expect(refused).toHaveLength(50);
    expect(refused[0]).toMatchObject({ limited: 'secondary', cost: 0, secondaryCost: 0, retryAfter: 60 });
    expect(refused[0]!.error).toMatch(/more than 100 concurrent requests/);
    for (let i = 0; i < 100 && h.emulator.stats().inFlight > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(h.emulator.stats().inFlight).toBe(0);
    expect(h.emulator.ledger.identities.get('user:fleet-agent')!.peakInFlight).toBe(100);
  });

  it.skipIf(openssl.skip)('counts streams multiplexed on one HTTP/2 session', async () => {
    openssl.require();
    const h = inProcess();
    const made = generateSelfSignedCert(join(dir, 'tls-inflight'));
    const { url } = await serve(h.emulator, made);
    const session = connect(url, { ca: made.cert, settings: { maxConcurrentStreams: 1000 } });
    const statuses = await Promise.all(
      Array.from(
        { length: 130 },
        () =>
          new Promise<number>((resolve, reject) => {
            const stream = session.request({
              [constants.HTTP2_HEADER_PATH]: '/repos/fleetbench/repo-1/pulls',
              authorization: `token ${h.emulator.defaultToken}`,
            });
            let status = 0;
            stream.on('response', (headers) => {
              status = Number(headers[constants.HTTP2_HEADER_STATUS]);
            });
            stream.resume();
            stream.on('end', () => resolve(status));
            stream.on('error', reject);
            stream.end();
          }),
      ),
    );
    session.close();
    expect(statuses.filter((s) => s === 403).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(100);
    // Never more in flight than the limit: the streams past it were refused as they arrived.
    expect(h.emulator.ledger.identities.get('user:fleet-agent')!.peakInFlight).toBe(100);
    for (let i = 0; i < 100 && h.emulator.stats().inFlight > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(h.emulator.stats().inFlight).toBe(0);
  });
});
