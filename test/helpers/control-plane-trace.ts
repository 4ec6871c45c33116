/**
 * A small, realistic control-plane trace written through the real parts: the GitHub emulator
 * under a VirtualClock records every call into a real TraceWriter, and a sequential poll loop
 * (one call at a time, like `concurrency: 1`) writes what the reference control plane writes:
 * `poll.cycle` spans with data, `poll.cycle.skipped`, `steady.start`, `sessions` gauges,
 * `session.start` spans and the `/rate_limit` bracket.
 *
 * With a fixed 2 s per call, the cold-start cycle (a shared guard, then 8 calls per session)
 * takes 33 calls = 66 s: it overruns its 30 s interval, the cycle due at 30 s is skipped and
 * the next one starts at 66 s instead of 60 s (6 s late). Steady cycles (the guard and 2 calls
 * per session = 9 calls) take 18 s and start on time, at 90, 120, 150 and 180 s; the
 * `steady.start` marker is at 60 s, so cycles 1-5 are steady.
 */

import { Rng } from '../../src/base/rng.ts';
import { VirtualClock } from '../../src/clock/index.ts';
import { GitHubEmulator, InProcessTransport } from '../../src/github/index.ts';
import { TraceWriter } from '../../src/trace/writer.ts';

export const CP = {
  sessions: 4,
  cycles: 6,
  intervalMs: 30_000,
  callMs: 2000,
  steadyAtMs: 60_000,
  epochMs: Date.UTC(2026, 0, 1, 0, 0, 0),
} as const;

export async function writeControlPlaneTrace(path: string): Promise<void> {
  const clock = new VirtualClock({ epochMs: CP.epochMs });
  const writer = new TraceWriter(
    path,
    {
      runId: 'cp-test',
      tool: { name: 'fleetbench', version: 'test' },
      clock: 'virtual',
      seed: 7,
      scenario: { name: 'quiet-steady-state', hash: null, cell: 'S2-T1-4' },
      target: 'reference',
      epochMs: CP.epochMs,
      startedAt: new Date(CP.epochMs).toISOString(),
    },
    { flushIntervalMs: 0 },
  );
  const fixed = { medianMs: CP.callMs, p95Ms: CP.callMs };
  const emulator = new GitHubEmulator({
    clock,
    rng: new Rng(7),
    trace: writer,
    fixtures: { repos: 1, issuesPerRepo: 5, pullsPerRepo: 2 },
    latency: { rest: fixed, graphql: fixed },
  });
  const transport = new InProcessTransport(emulator, { token: emulator.defaultToken });
  const get = (path: string, headers: Record<string, string>) =>
    transport.request({ method: 'GET', path, headers });
  const sessions = Array.from({ length: CP.sessions }, (_, i) => `s${i + 1}`);
  const repo = emulator.state.repos.get('fleetbench/repo-1')!;
  const [pull] = [...repo.pulls.entries()];
  const [number, pr] = pull!;
  const base = '/repos/fleetbench/repo-1';
  const gauges = (counts: Record<string, number>) => {
    for (const [state, value] of Object.entries(counts))
      writer.write({ kind: 'gauge', name: 'sessions', t: clock.now(), value, labels: { state } });
  };

  emulator.admin.snapshotRateLimit({ label: 'before' });
  for (const [i, session] of sessions.entries())
    writer.write({
      kind: 'span',
      name: 'session.start',
      t: 0,
      dur: i * 10,
      session,
      labels: { executor: 'fixed' },
    });
  gauges({ working: CP.sessions, pr_open: 0 });
  clock.setTimeout(
    () => writer.write({ kind: 'event', name: 'steady.start', t: clock.now() }),
    CP.steadyAtMs,
  );

  const loop = async () => {
    let due = 0;
    let guardEtag: string | undefined;
    for (let cycle = 0; cycle < CP.cycles; cycle++) {
      const wait = due - clock.now();
      if (wait > 0) await clock.sleep(wait);
      const started = clock.now();
      let calls = 0;
      const call = async (path: string, op: string, session?: string, etag?: string) => {
        calls++;
        const res = await get(path, {
          'x-fleetbench-op': op,
          'x-fleetbench-cycle': String(cycle),
          'x-fleetbench-source': 'lifecycle',
          ...(session ? { 'x-fleetbench-session': session } : {}),
          ...(etag ? { 'if-none-match': etag } : {}),
        });
        return res.headers.etag;
      };
      // The repo guard is conditional: once it has an ETag, nothing changed answers 304 (free).
      guardEtag = await call(
        `${base}/pulls?state=open&sort=updated&direction=desc&per_page=1`,
        'guard-pr-list',
        undefined,
        guardEtag,
      );
      for (const session of sessions) {
        if (cycle === 0) {
          // Cold start: detection and a full read of everything (8 calls per session).
          await call(`${base}/pulls?head=fleetbench:${pr.head}`, 'detect-pr', session);
          await call(`${base}/pulls/${number}/reviews`, 'reviews', session);
          await call(`${base}/pulls/${number}/comments`, 'review-comments', session);
          await call(`${base}/issues/${number}/comments`, 'issue-comments', session);
          await call(`${base}/commits/${pr.headSha}/status`, 'status', session);
          await call(`${base}/issues/${number}`, 'issue', session);
        }
        await call(`${base}/pulls/${number}`, 'pr-state', session);
        await call(`${base}/commits/${pr.headSha}/check-runs`, 'checks', session);
      }
      const ended = clock.now();
      writer.write({
        kind: 'span',
        name: 'poll.cycle',
        t: started,
        dur: ended - started,
        labels: { strategy: 'naive' },
        data: {
          cycle,
          sessions: sessions.length,
          calls,
          lagMs: started - due,
          intervalMs: CP.intervalMs,
        },
      });
      due += CP.intervalMs;
      if (ended > due) {
        const missed = Math.floor((ended - due) / CP.intervalMs);
        if (missed > 0) {
          writer.write({ kind: 'event', name: 'poll.cycle.skipped', t: ended, labels: { count: missed } });
          due += missed * CP.intervalMs;
        }
      }
    }
    gauges({ working: 1, pr_open: CP.sessions - 1 });
  };
  const done = loop();
  await clock.run();
  await done;
  emulator.admin.snapshotRateLimit({ label: 'after' });
  writer.close('completed', clock.now());
}
