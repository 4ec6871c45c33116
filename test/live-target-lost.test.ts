/**
 * A live run is judged only if its target saw it to its end (docs/limits.md, "A failed run is a
 * failed run"): a `reference serve` whose supervisor and control plane are SIGKILLed mid-run is
 * noticed, while the run goes on (nothing answers for 15 s) or at its end (nothing answers the
 * stop), and the run ends failed: exit 3, a partial summary, nothing judged; `check` of it
 * refuses to judge it too. Real processes, the real CLI as a subprocess, the real clock.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FleetbenchError } from '../src/base/errors.ts';
import { RealClock } from '../src/clock/real.ts';
import type { RunSummary } from '../src/results/run-summary.ts';
import { connectHttpTarget } from '../src/targets/http.ts';
import { readTrace } from '../src/trace/reader.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { cli, runCli } from './helpers/cli.ts';
import { events } from './helpers/run.ts';
import { alive, startReferenceServe, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { waitUntil } from './helpers/wait.ts';

afterAll(stopAll);

/** SIGKILLs the server and every control-plane process it has now (a restart replaces it). */
function killTarget(info: { pid: number; state: string; controlPlanePid: number }): void {
  for (const pid of [info.pid, info.controlPlanePid]) if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * A hand-made target on 127.0.0.1: it answers GET /v1/info as a fleetbench target named `name`
 * with `capabilities`, and every other request with `other` (given the server, to die by).
 */
async function shimTarget(
  name: string,
  capabilities: string[],
  other: (req: IncomingMessage, res: ServerResponse, server: Server) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/info') {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ protocol: 'fleetbench-target/1', name, capabilities }));
      return;
    }
    other(req, res, server);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('a live run whose target dies', { timeout: 180_000 }, () => {
  it('noticed while the run goes on: no answer for 15 s fails it (exit 3), long before its end', async () => {
    const dir = scratchDir('fleetbench-target-lost-');
    const server = await startReferenceServe(join(dir, 'state'));
    const out = join(dir, 'run');
    const started = performance.now();
    // 20 minutes of run time at ×10: two minutes of wall time, if nothing noticed.
    const run = runCli(
      [
        'run',
        'S2-T1-5',
        '--target',
        server.info.url,
        '--clock',
        'real',
        '--time-scale',
        '10',
        '--set',
        'duration=20m',
        '--out',
        out,
        '--no-progress',
      ],
      { timeoutMs: 170_000 },
    );
    // Its first session started: the target has answered the run's start (an api record alone
    // can come first, while POST /v1/run is still on its way; a target killed then is the next
    // test's case, found by the same 15 s of silence).
    await waitUntil(
      'the run polls',
      () => {
        try {
          const text = readFileSync(join(out, 'trace.jsonl'), 'utf8');
          return text.includes('"kind":"api"') && text.includes('"name":"session.start"');
        } catch {
          return false;
        }
      },
      { timeoutMs: 60_000 },
    );
    killTarget(server.info);
    const result = await run;
    const wallS = (performance.now() - started) / 1000;
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(
      /the run failed \(target\): target lost: the target at .* stopped answering: no answer for 1\d s/,
    );
    expect(wallS).toBeLessThan(100);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.outcome).toMatchObject({ reason: 'failed', partial: true });
    expect(summary.budgets).toBeUndefined();
    const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('failed');
    expect(events(records, 'target.lost')).toHaveLength(1);
    const check = await cli(['check', out]);
    expect(check.code).toBe(3);
    expect(check.stderr).toContain('the run failed');
  });

  it('dead during its own POST /v1/run: lost after 15 s of silence (exit 3), not bad input (exit 2)', async () => {
    const dir = scratchDir('fleetbench-target-lost-start-');
    // A shim that answers GET /v1/info and dies as the run's start arrives: its listener
    // closes and the start request's connection is cut, as a SIGKILL would leave them.
    const { server, url } = await shimTarget('dies-at-start', ['events'], (req, _res, shim) => {
      shim.close();
      shim.closeAllConnections();
      req.socket.destroy();
    });
    const out = join(dir, 'run');
    const started = performance.now();
    try {
      const result = await cli([
        'run',
        'S2-T1-5',
        '--target',
        url,
        '--clock',
        'real',
        '--out',
        out,
        '--no-progress',
      ]);
      const wallS = (performance.now() - started) / 1000;
      expect(result.code, result.stdout + result.stderr).toBe(3);
      expect(result.stderr).toMatch(/target lost: the target at .* stopped answering: no answer for 1\d s/);
      expect(wallS).toBeLessThan(50);
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as RunSummary;
      expect(summary.outcome.reason).toBe('failed');
      expect(summary.budgets).toBeUndefined();
      const { records } = await readTrace(join(out, 'trace.jsonl'));
      expect(events(records, 'target.lost')).toHaveLength(1);
    } finally {
      server.close();
    }
  });

  it('a chaos wave whose supervisor and control plane are SIGKILLed 12 s in: failed, exit 3, nothing judged', async () => {
    const dir = scratchDir('fleetbench-target-lost-chaos-');
    const server = await startReferenceServe(join(dir, 'state'));
    const out = join(dir, 'run');
    const run = runCli(
      [
        'run',
        'chaos-codex-c4',
        '--target',
        server.info.url,
        '--clock',
        'real',
        '--time-scale',
        '20',
        '--out',
        out,
        '--no-progress',
      ],
      { timeoutMs: 170_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    killTarget(server.info);
    const result = await run;
    expect(result.code, result.stdout + result.stderr).toBe(3);
    expect(result.stderr).toMatch(/the run failed \(.*\): .*target lost/);
    expect(result.stdout).not.toMatch(/✓ pass|every judged budget holds/);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.outcome.reason).toBe('failed');
    expect(summary.budgets).toBeUndefined();
  });
});

describe("a target's start answered with no JSON", { timeout: 120_000 }, () => {
  it('POST /v1/run answered 200 with a body that is not JSON: a clear message naming the request (exit 2), not an internal error', async () => {
    // A shim that is a fleetbench target by its GET /v1/info and answers the run's start with text.
    const { server, url } = await shimTarget('text-start', [], (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('started, thanks');
    });
    const out = join(scratchDir('fleetbench-target-start-text-'), 'run');
    try {
      const result = await cli([
        'run',
        'S2-T1-5',
        '--target',
        url,
        '--clock',
        'real',
        '--out',
        out,
        '--no-progress',
      ]);
      expect(result.stderr).not.toMatch(/internal error|SyntaxError| {4}at /);
      expect(result.stderr).toMatch(/POST \/v1\/run: the answer is not JSON/);
      expect(result.code, result.stderr).toBe(2);
    } finally {
      server.close();
    }
  });
});

describe('a target that answers its start 503 for as long as it is retried', () => {
  it('is not lost (a 503 is an answer, docs/http-target.md "Liveness"): the start fails with what it answered, no target.lost', async () => {
    const { server, url } = await shimTarget('busy-start', [], (req, res) => {
      req.resume();
      if (req.url === '/v1/run/stop') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: { code: 'busy', message: 'warming up' } }));
    });
    const sink = new MemorySink();
    const target = await connectHttpTarget({
      baseUrl: url,
      clock: new RealClock(),
      trace: sink,
      run: { runId: 'busy', seed: 1, scenario: 'busy' },
      retryForMs: 3_000,
      liveness: { probeEveryMs: 200, probeTimeoutMs: 1_000, deadAfterMs: 1_500 },
    });
    try {
      const failed = await target.start().then(
        () => undefined,
        (error: unknown) => error as FleetbenchError,
      );
      expect(failed?.message).toMatch(/POST \/v1\/run: still unavailable \(503 busy: warming up\)/);
      expect(failed?.message).not.toMatch(/target lost/);
      expect(sink.records.filter((r) => r.kind === 'event' && r.name === 'target.lost')).toEqual([]);
    } finally {
      await target.stop();
      server.close();
    }
  }, 60_000);
});

describe('a refused start leaves nothing watching the target', () => {
  it('POST /v1/run answered with text: after the start fails, GET /v1/info is probed no more (a probe timer kept the process alive)', async () => {
    let probes = 0;
    const { server, url } = await shimTarget('text-start', [], (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('started, thanks');
    });
    // Every probe after the start: the server's requests for GET /v1/info.
    server.prependListener('request', (req) => {
      if (req.method === 'GET' && req.url === '/v1/info') probes++;
    });
    const target = await connectHttpTarget({
      baseUrl: url,
      clock: new RealClock(),
      trace: new MemorySink(),
      run: { runId: 'text', seed: 1, scenario: 'text' },
      liveness: { probeEveryMs: 100, probeTimeoutMs: 1_000, deadAfterMs: 5_000 },
    });
    try {
      const failed = await target.start().then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(failed?.message).toMatch(/POST \/v1\/run: the answer is not JSON/);
      const after = probes;
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(probes).toBe(after);
    } finally {
      await target.stop();
      server.close();
    }
  });
});
