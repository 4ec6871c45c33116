/**
 * Ctrl-C during a live run against `fleetbench reference serve`: the run (a process, so it can
 * be signalled) exits 130 with a readable trace and a partial summary, its metrics endpoint
 * closes, and the server stays up with the client's run stopped. Loopback only; every process
 * is stopped at the end of the file.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../src/trace/reader.ts';
import { BIN } from '../helpers/cli.ts';
import { events } from '../helpers/run.ts';
import { alive, startReferenceServe, stopAll } from '../helpers/serve.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { waitUntil } from '../helpers/wait.ts';

const SCENARIO = new URL('../fixtures/live-restart.yaml', import.meta.url).pathname;

describe('reference serve over the http target', () => {
  const dir = scratchDir('fleetbench-live-');
  afterAll(stopAll);

  it('Ctrl-C during a live run: a readable trace with its footer, a partial summary, nothing left running', async () => {
    const server = await startReferenceServe(join(dir, 'state2'));
    const out = join(dir, 'interrupted');
    const child = spawn(
      process.execPath,
      [
        BIN,
        'run',
        SCENARIO,
        '--target',
        server.info.url,
        '--out',
        out,
        '--metrics-port',
        '0',
        '--set',
        'duration=2m',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    let metricsUrl: string | undefined;
    const listening = new Promise<void>((resolve) =>
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /metrics at (\S+)/.exec(stderr);
        if (m) {
          metricsUrl = m[1];
          resolve();
        }
      }),
    );
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await listening;
    // Let sessions start and poll cycles run (answered core calls on the metrics endpoint), then interrupt.
    const answered = /^fleetbench_api_calls_total\{resource="core",status="200"\} [1-9]\d*$/m;
    let before = '';
    await waitUntil('answered core calls on the metrics endpoint', async () => {
      before = await (await fetch(metricsUrl!)).text();
      return answered.test(before);
    });
    expect(before).toMatch(answered);
    const sent = performance.now();
    child.kill('SIGINT');
    const code = await exited;
    clearTimeout(killer);
    expect(code, stderr).toBe(130);
    // Well inside the run's 2 minutes: the stop, not the run's end (a loaded machine stretches it).
    expect(performance.now() - sent).toBeLessThan(60_000);
    const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('interrupted');
    expect(records.some((r) => r.kind === 'api')).toBe(true);
    const stream = events(records, 'target.events')[0]!.data as Record<string, number | null>;
    const stopErrors = events(records, 'target.error').filter((e) => e.labels?.op === 'stop');
    // The stop is bounded (a Ctrl-C must end): on a starved machine the target may not answer it
    // in time, and then the trace says so instead of a count; when it answers, nothing is lost.
    if (stream.declared === null) expect(stopErrors.length, stderr).toBeGreaterThan(0);
    else expect(stream.written, JSON.stringify(stopErrors)).toBe(stream.declared);
    expect(stream.rejected).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      outcome: { reason: string; partial: boolean };
    };
    expect(summary.outcome).toMatchObject({ reason: 'interrupted', partial: true });
    // The metrics endpoint closed with the run.
    await expect(fetch(metricsUrl!)).rejects.toThrow();
    // The server is still up, its run stopped by the interrupted client.
    const info = await fetch(`${server.info.url}/v1/info`);
    expect(info.status).toBe(200);
    const counts = (await (await fetch(`${server.info.url}/v1/sessions`)).json()) as { counts: object };
    expect(counts.counts).toEqual({});
    await server.stop();
    expect(alive(server.info.controlPlanePid)).toBe(false);
  });
});
