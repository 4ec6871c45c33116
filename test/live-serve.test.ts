/**
 * Live runs against a real server: `fleetbench reference serve` (a supervisor and a control-plane
 * child) driven over the http target by `fleetbench run --clock real`, with a hard restart that
 * really kills the control-plane process (Ctrl-C of a live run: test/e2e/live-interrupt.test.ts).
 * Loopback only; every process is stopped at the end of the file.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { runCli } from './helpers/cli.ts';
import { events, spans } from './helpers/run.ts';
import { alive, startReferenceServe, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { waitUntil } from './helpers/wait.ts';

const SCENARIO = new URL('./fixtures/live-restart.yaml', import.meta.url).pathname;

describe('reference serve over the http target', () => {
  const dir = scratchDir('fleetbench-live-');
  afterAll(stopAll);

  it('a real-clock run with a hard restart: the process is replaced, recovery is traced, no event is lost', async () => {
    const server = await startReferenceServe(join(dir, 'state'));
    const firstPid = server.info.controlPlanePid;
    expect(alive(firstPid)).toBe(true);
    const out = join(dir, 'run');
    // Kept as a process: in-process, its after-restart check (every cycle polls 4 sessions)
    // failed once on a heavily loaded machine (load 23); not yet understood, so not changed.
    const result = await runCli([
      'run',
      SCENARIO,
      '--target',
      server.info.url,
      '--out',
      out,
      '--json',
      '--no-progress',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('completed');
    expect(stats.header?.clock).toBe('real');

    // The process was really replaced: the old pid is gone, the server answers from the new one.
    const outage = spans(records, 'controlplane.outage');
    expect(outage).toHaveLength(1);
    const { pidBefore, pidAfter } = outage[0]!.data as { pidBefore: number; pidAfter: number };
    expect(pidBefore).toBe(firstPid);
    expect(pidAfter).not.toBe(firstPid);
    expect(alive(firstPid)).toBe(false);
    const info = (await (await fetch(`${server.info.url}/v1/info`)).json()) as { pid: number };
    expect(info.pid).toBe(pidAfter);

    // Recovery: restart at the kill, ready with the restart kind after it, the outage between.
    const restart = events(records, 'controlplane.restart');
    const ready = events(records, 'controlplane.ready');
    expect(restart).toHaveLength(1);
    expect(ready.map((e) => e.labels?.reason)).toEqual(['start', 'hard']);
    expect(outage[0]!.t).toBe(restart[0]!.t);
    expect(outage[0]!.t + outage[0]!.dur).toBeCloseTo(ready[1]!.t, 3);
    expect(outage[0]!.dur).toBeGreaterThan(0);
    const faultEnd = events(records, 'fault.end')[0]!;
    expect(Math.abs(Number(faultEnd.labels?.outageMs) - outage[0]!.dur)).toBeLessThan(2);

    // Durable state: the new process polls the sessions it reloaded from disk. Each cycle polls
    // exactly the sessions active at its start, by the trace's own state changes: on a loaded
    // machine a session may still be spawning at the kill (its spawn resumes after the restart),
    // so "every cycle polls all four" is not what holds; this is.
    const states = events(records, 'session.state');
    expect(states.filter((e) => e.labels?.from === 'none')).toHaveLength(4);
    const activeAt = (t: number) => {
      const state = new Map<string, string>();
      for (const e of states) if (e.t < t) state.set(e.session!, String(e.labels?.to));
      return [...state.values()].filter((s) => s === 'working' || s === 'pr_open' || s === 'review').length;
    };
    const cyclesAfter = spans(records, 'poll.cycle').filter((s) => s.t > ready[1]!.t);
    expect(cyclesAfter.length).toBeGreaterThan(0);
    for (const c of cyclesAfter) expect((c.data as { sessions: number }).sessions).toBe(activeAt(c.t));
    // ...and the sessions working before the kill are among them from the first cycle on.
    expect((cyclesAfter[0]!.data as { sessions: number }).sessions).toBeGreaterThanOrEqual(
      activeAt(restart[0]!.t),
    );
    expect(activeAt(restart[0]!.t)).toBeGreaterThan(0);

    // No accepted record lost: every event the target declared arrived and was written.
    const stream = events(records, 'target.events')[0]!.data as Record<string, number>;
    expect(stream.declared).toBeGreaterThan(10);
    expect(stream.received).toBe(stream.declared);
    expect(stream.written).toBe(stream.declared);
    expect(stream.rejected).toBe(0);
    expect(stream.gaps).toBe(0);
    const fromTarget = records.filter(
      (r: BodyRecord) =>
        (r.kind === 'span' && ['poll.cycle', 'session.spawn', 'controlplane.outage'].includes(r.name)) ||
        (r.kind === 'event' &&
          // poll.cycle.skipped: a cycle that overran its interval (a loaded machine) skips some.
          ['controlplane.ready', 'controlplane.restart', 'session.state', 'poll.cycle.skipped'].includes(
            r.name,
          )),
    );
    expect(fromTarget.length).toBe(stream.declared);
    // The footer counts every line of the file.
    const lines = readFileSync(join(out, 'trace.jsonl'), 'utf8').trim().split('\n');
    const counts = stats.footer!.counts;
    expect(counts.api + counts.span + counts.event + counts.gauge).toBe(lines.length - 2);

    // The API calls of the served control plane are in the run's trace, attributed.
    const summary = JSON.parse(result.stdout) as {
      analysis: {
        api: { totals: { calls: number } };
        spans: { byName: Array<{ name: string; count: number }> };
      };
    };
    expect(summary.analysis.api.totals.calls).toBeGreaterThan(10);
    expect(records.some((r) => r.kind === 'api' && r.op === 'whoami')).toBe(true);
    expect(summary.analysis.spans.byName.find((s) => s.name === 'controlplane.outage')?.count).toBe(1);

    // The same events as SSE, replayed from a sequence number (a client that reconnects).
    const abort = new AbortController();
    const sse = await fetch(`${server.info.url}/v1/events?since=2`, {
      headers: { accept: 'text/event-stream' },
      signal: abort.signal,
    });
    expect(sse.headers.get('content-type')).toBe('text/event-stream');
    const reader = sse.body!.getReader();
    let text = '';
    while (!text.includes('id: 3\n')) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(text).toMatch(/^data: \{"type":"hello","since":2,"oldest":1\}\n\nid: 2\ndata: \{"seq":2,"type":"/);

    // Stopping the server stops both processes.
    await server.stop();
    await waitUntil(
      'the server and its control plane to exit',
      () => !alive(server.info.pid) && !alive(pidAfter),
    );
    expect(alive(server.info.pid)).toBe(false);
    expect(alive(pidAfter)).toBe(false);
  });
});
