/**
 * The servers fleetbench runs, as processes (the real CLI), under SIGTERM and hostile clients
 * (docs/limits.md#servers): `reference serve` (its supervisor and the control-plane child) and a
 * live run's receivers (/metrics, the OTLP receiver).
 *
 * - SIGTERM: each exits within 5 s; a request still in flight is answered 503 (not a connection
 *   cut without a word) and recorded as cancelled: a `controlplane.shutdown` event on the event
 *   stream before it ends, an `otlp.cancelled` event in the run's trace before its footer.
 * - Each answers a probe within 2 s while one client sends a 1 MB word with no spaces, and while
 *   1,000 clients connect at once.
 *
 * Real clock by necessity: what is measured is a real process's answers and its exit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.ts';
import { BIN } from './helpers/cli.ts';
import { slowestAnswerDuring } from './helpers/probe.ts';
import { alive, startReferenceServe, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { waitUntil } from './helpers/wait.ts';

afterAll(stopAll);

const MB_WORD = 'a'.repeat(1_000_000);

/** An HTTP request whose head and first bytes are sent, its body never finished: in flight. */
function slowUpload(url: string, path: string, type = 'application/json') {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answer = '';
  const closed = new Promise<string>((resolve) => {
    socket.on('data', (d) => {
      answer += d;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 100000\r\n\r\n{"a":`,
  );
  return { closed, socket };
}

/**
 * 1,000 clients connecting at once, each asking `path` once (`Connection: close`), from a process
 * of their own: the probe's answers are then read by this process alone, not queued behind a
 * thousand sockets' events. Resolves with how many were answered.
 */
async function thousandClients(url: string, path: string): Promise<number> {
  const { hostname, port } = new URL(url);
  const script = `
    const net = require('node:net');
    let answered = 0;
    const all = Array.from({ length: 1000 }, () => new Promise((resolve) => {
      const socket = net.connect(${Number(port)}, '${hostname}');
      socket.on('connect', () => socket.write('GET ${path} HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n'));
      socket.once('data', () => answered++);
      socket.on('error', resolve);
      socket.on('close', resolve);
    }));
    setTimeout(() => process.exit(1), 60000).unref();
    Promise.all(all).then(() => process.stdout.write(String(answered)));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  await new Promise((resolve) => child.once('close', resolve));
  return Number(out);
}

describe('reference serve (supervisor and control plane) as a process', () => {
  it('answers a probe within 2 s while a 1 MB word is posted and while 1,000 clients connect at once', async () => {
    const server = await startReferenceServe(join(scratchDir('fleetbench-sigterm-ref-'), 'state'));
    const info = `${server.info.url}/v1/info`;
    let status = 0;
    const duringWord = await slowestAnswerDuring(
      info,
      async () => {
        const res = await fetch(`${server.info.url}/v1/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: MB_WORD }),
        });
        status = res.status;
        await res.text();
      },
      {},
      { serverPid: server.process.pid },
    );
    expect([400, 409]).toContain(status);
    expect(duringWord).toBeLessThan(2_000);
    let answered = 0;
    const duringFlood = await slowestAnswerDuring(
      info,
      async () => {
        answered = await thousandClients(server.info.url, '/v1/info');
      },
      {},
      { serverPid: server.process.pid },
    );
    expect(answered).toBeGreaterThan(900);
    expect(duringFlood).toBeLessThan(2_000);
    await server.stop();
  });

  it('SIGTERM: exits within 5 s, the control plane with it; a request in flight is answered 503 and counted in controlplane.shutdown on the event stream', async () => {
    const server = await startReferenceServe(join(scratchDir('fleetbench-sigterm-ref-'), 'state'));
    const { url, controlPlanePid } = server.info;
    // The event stream a run would read, and a request whose body is still coming.
    const events: Array<{ name?: string; data?: { cancelled?: number } }> = [];
    const stream = await fetch(`${url}/v1/events`);
    const streamEnded = (async () => {
      const decoder = new TextDecoder();
      let text = '';
      for await (const chunk of stream.body!) text += decoder.decode(chunk, { stream: true });
      for (const line of text.split('\n').filter(Boolean)) events.push(JSON.parse(line));
    })();
    const upload = slowUpload(url, '/v1/sessions');
    await new Promise<void>((resolve) => upload.socket.once('connect', () => resolve()));
    // The supervisor has the request when its head is parsed: give it a turn, then stop it.
    await waitUntil('the upload to reach the server', () => upload.socket.bytesWritten > 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopped = performance.now();
    server.process.kill('SIGTERM');
    const code = await server.exited;
    expect(performance.now() - stopped).toBeLessThan(5_000);
    expect(code, server.stderr()).toBe(0);
    expect(alive(controlPlanePid)).toBe(false);
    const answer = await upload.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toContain('the control plane is shutting down');
    await streamEnded;
    const shutdown = events.find((e) => e.name === 'controlplane.shutdown');
    expect(shutdown?.data?.cancelled).toBeGreaterThanOrEqual(1);
    expect(server.stderr()).toMatch(/shutting down: \d+ request\(s\) in flight answered 503/);
    expect(server.stderr()).not.toMatch(/\n\s+at /);
  });
});

/** `fleetbench run` as a live run with /metrics and the OTLP receiver; its URLs once it listens. */
async function liveRun(out: string): Promise<{
  child: ChildProcess;
  exited: Promise<number | null>;
  stderr: () => string;
  urls: { metrics: string; otlp: string };
}> {
  const child = spawn(
    process.execPath,
    [
      BIN,
      ...[
        'run',
        'S2-T1-5',
        '--clock',
        'real',
        '--time-scale',
        '2',
        '--metrics-port',
        '0',
        '--otlp-port',
        '0',
      ],
      ...['--no-progress', '--no-report', '--out', out],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
  );
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 150_000);
  void exited.then(() => clearTimeout(killer));
  const urls = await new Promise<{ metrics: string; otlp: string }>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      stderr += d;
      const metrics = /metrics at (\S+)/.exec(stderr)?.[1];
      const otlp = /OTLP spans accepted at (\S+)/.exec(stderr)?.[1];
      if (metrics && otlp) resolve({ metrics, otlp });
    });
    child.once('exit', () => reject(new Error(`the run exited first: ${stderr}`)));
  });
  return { child, exited, stderr: () => stderr, urls };
}

describe('a live run’s receivers (/metrics, OTLP) as a process', () => {
  it('answer a probe within 2 s during a 1 MB word and 1,000 clients; SIGTERM: a request in flight is answered 503 and recorded as otlp.cancelled, the trace complete, exit within 5 s', async () => {
    const out = join(scratchDir('fleetbench-sigterm-live-'), 'run');
    const run = await liveRun(out);
    try {
      const { metrics, otlp } = run.urls;
      const now = BigInt(Date.now()) * 1_000_000n;
      const span = {
        traceId: '5b8efff798038103d269b633813fc60c',
        spanId: 'eee19b7ec3c1b174',
        name: MB_WORD,
        startTimeUnixNano: String(now),
        endTimeUnixNano: String(now + 1_000_000n),
      };
      let status = 0;
      const duringWord = await slowestAnswerDuring(
        metrics,
        async () => {
          const res = await fetch(otlp, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }),
          });
          status = res.status;
          await res.text();
        },
        {},
        { serverPid: run.child.pid },
      );
      expect(status).toBe(200);
      expect(duringWord).toBeLessThan(2_000);
      let answered = 0;
      const duringFlood = await slowestAnswerDuring(
        metrics,
        async () => {
          answered = await thousandClients(metrics, '/metrics');
        },
        {},
        { serverPid: run.child.pid },
      );
      expect(answered).toBeGreaterThan(900);
      expect(duringFlood).toBeLessThan(2_000);

      const upload = slowUpload(otlp, '/v1/traces');
      await new Promise<void>((resolve) => upload.socket.once('connect', () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const stopped = performance.now();
      run.child.kill('SIGTERM');
      const code = await run.exited;
      expect(performance.now() - stopped).toBeLessThan(5_000);
      expect(code, run.stderr()).toBe(130);
      const answer = await upload.closed;
      expect(answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(answer).toContain('"code":14');
      const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
      expect(stats.footer?.reason).toBe('interrupted');
      const cancelled = records.find((r) => r.kind === 'event' && r.name === 'otlp.cancelled');
      expect(cancelled).toMatchObject({ data: { requests: 1 } });
      // The 1 MB span name went into the trace whole.
      expect(records.some((r) => r.kind === 'span' && r.name === MB_WORD)).toBe(true);
      expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).outcome.reason).toBe('interrupted');
    } finally {
      run.child.kill('SIGKILL');
    }
  }, 180_000);
});
