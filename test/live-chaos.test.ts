/**
 * A real-clock chaos wave against `fleetbench reference serve` over the http target (issue 8's
 * "Done when", compressed): native runs on codex driven through the protocol, restarts that
 * really replace the control-plane process, recovery traced by the new process from its state
 * directory, the speed metrics computed and the restart rows judged. Loopback only; every
 * process is stopped at the end of the file.
 */

import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { cli, runCli } from './helpers/cli.ts';
import { events, spans } from './helpers/run.ts';
import { alive, startReferenceServe, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';

interface Group {
  labels: Record<string, string>;
  values: number[];
}
interface RunSummary {
  analysis: { speed: { metrics: Record<string, { groups: Group[] }> } };
  budgets: Array<{
    budget: string;
    rows: Array<{ metric: string; scope: Record<string, string>; mode: string; n: number; status: string }>;
  }>;
}

/**
 * A budget file scoped to what a short codex wave produces: the codex rows of native-speed a
 * wave of a few runs fills. The limits are far above native-speed's: at time-scale 15 every real
 * millisecond of delay in the served processes is 15 ms of run time, and on a shared 2-core
 * machine running the rest of the suite a control plane's restart took 10 s of real time
 * (150 s of run time; docs/live-runs.md says which time-scale keeps the native-speed limits
 * meaningful). What is asserted is that the rows are filled and judged, not the speed.
 */
const BUDGETS = `name: live-wave
description: the codex rows of native-speed a short real-clock wave can fill (limits for a loaded machine)
budgets:
  - { metric: agent_boot, scope: { adapter: codex, start: cold }, p50: 2m, p95: 5m }
  - { metric: restart_recovery, scope: { adapter: codex }, mode: report }
  - { metric: restart_recovery_control_plane, scope: { adapter: codex }, p50: 5m, p95: 10m }
  - { metric: restart_provider_load, scope: { adapter: codex }, mode: report }
`;

function wave(name: string, lines: string): string {
  return `name: ${name}
description: a short real-clock chaos wave (test/live-chaos.test.ts)
clock: real
seed: 11
sessions:
  count: 3
budgets: [./budgets.yaml]
${lines}`;
}

async function runWave(dir: string, scenario: string) {
  writeFileSync(join(dir, 'budgets.yaml'), BUDGETS);
  const file = join(dir, 'wave.yaml');
  writeFileSync(file, scenario);
  const server = await startReferenceServe(join(dir, 'state'));
  const firstPid = server.info.controlPlanePid;
  const out = join(dir, 'run');
  const started = performance.now();
  // The real-clock waves run as a process: in-process, the hot restart of the graceful/hot wave
  // went missing once on a heavily loaded machine (load 20); not yet understood, so not changed.
  const result = await runCli(
    ['run', file, '--target', server.info.url, '--out', out, '--json', '--no-progress'],
    { cwd: dir },
  );
  const wallS = (performance.now() - started) / 1000;
  const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
  return { server, firstPid, result, wallS, records, stats };
}

/** Every event the target declared arrived and was written: no accepted record lost. */
function expectNothingLost(records: BodyRecord[]) {
  const stream = events(records, 'target.events')[0]!.data as Record<string, number>;
  expect(stream.declared).toBeGreaterThan(100);
  expect(stream.received).toBe(stream.declared);
  expect(stream.written).toBe(stream.declared);
  expect(stream.rejected).toBe(0);
  expect(stream.gaps).toBe(0);
}

const groupOf = (summary: RunSummary, metric: string, kind: string) =>
  summary.analysis.speed.metrics[metric]?.groups.find(
    (g) => g.labels.adapter === 'codex' && g.labels.kind === kind,
  );

describe('a chaos wave against reference serve over the http target', () => {
  afterAll(stopAll);

  it('a hard restart mid-wave: the process is replaced, runs recover from disk, restart rows judged', async () => {
    const dir = scratchDir('fleetbench-live-chaos-');
    const { server, firstPid, result, wallS, records, stats } = await runWave(
      dir,
      wave(
        'live-chaos-hard',
        `duration: 5m
time-scale: 15
executors:
  - type: chaos-wave
    adapter: codex
    concurrency: 3
    restarts: 1
    kinds: [hard]
    provider-faults: 0
    first-fault: 30s
`,
      ),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(stats.footer?.reason).toBe('completed');
    // Scaled: 5 min of run time in 20 s of real time, with the processes' start and the analysis
    // around it. Bounded by half the unscaled 300 s, not timed: a loaded machine stretches the rest.
    // The run is long enough in run time for a restart that takes 10 s of real time (150 s of
    // run time, seen at load average 15) to leave every session turns after the ready.
    expect(wallS).toBeLessThan(150);

    // The control-plane process was really replaced (SIGKILL, a new pid from the state dir).
    const outage = spans(records, 'controlplane.outage');
    expect(outage).toHaveLength(1);
    const { pidBefore, pidAfter } = outage[0]!.data as { pidBefore: number; pidAfter: number };
    expect(pidBefore).toBe(firstPid);
    expect(pidAfter).not.toBe(firstPid);
    expect(alive(firstPid)).toBe(false);
    const ready = events(records, 'controlplane.ready');
    expect(ready.map((e) => e.labels?.reason)).toEqual(['start', 'hard']);
    const readyAt = ready[1]!.t;
    const killAt = events(records, 'controlplane.restart')[0]!.t;
    expect(events(records, 'controlplane.restart')[0]!.labels?.kind).toBe('hard');

    // Recovery by the new process, as in virtual time: reclaimed runs relaunch their runner,
    // which reloads the provider session (after a hard kill: not cleanly saved), then resumes.
    const created = events(records, 'run.created').filter((e) => e.t < killAt);
    expect(created.length).toBeGreaterThanOrEqual(3);
    const recovered = spans(records, 'run.claim').filter((s) => s.labels?.reason === 'recovery');
    expect(recovered.length).toBeGreaterThanOrEqual(1);
    expect(recovered.every((s) => s.t >= readyAt)).toBe(true);
    const loads = spans(records, 'provider.session.load').filter((s) => s.labels?.reason === 'recovery');
    // A runner killed while still booting boots again instead of loading.
    expect(loads.length).toBeGreaterThanOrEqual(1);
    expect(loads.length).toBeLessThanOrEqual(recovered.length);
    expect(loads.every((s) => s.t >= readyAt)).toBe(true);
    const resumed = events(records, 'provider.event').filter(
      (e) => e.labels?.type === 'session.resumed' && e.t > readyAt,
    );
    expect(resumed.length).toBeGreaterThanOrEqual(recovered.length);
    // The run ids survive the kill: the recovered runs are the ones created before it.
    const before = new Set(created.map((e) => (e.data as { run: string }).run));
    for (const s of recovered) expect(before.has((s.data as { run: string }).run)).toBe(true);
    // ...and go on turning: every session completes turns after the restart.
    const turnsAfter = new Set(
      spans(records, 'run.turn')
        .filter((s) => s.t + s.dur > readyAt)
        .map((s) => s.session),
    );
    expect(turnsAfter.size).toBe(3);

    // The speed metrics the finisher joins: recovery samples for the hard restart.
    const summary = JSON.parse(result.stdout) as RunSummary;
    const recovery = groupOf(summary, 'restart_recovery', 'hard');
    const controlPlane = groupOf(summary, 'restart_recovery_control_plane', 'hard');
    expect(recovery?.values.length).toBe(recovered.length);
    expect(controlPlane?.values.length).toBe(recovered.length);
    for (const [i, v] of controlPlane!.values.entries()) {
      expect(v).toBeGreaterThan(0);
      expect(v).toBeLessThanOrEqual(recovery!.values[i]!);
    }

    // Judged: the restart rows carry samples and a verdict.
    const verdict = summary.budgets[0]!;
    expect(verdict.budget).toBe('live-wave');
    const row = (metric: string) => verdict.rows.find((r) => r.metric === metric)!;
    expect(row('restart_recovery_control_plane')).toMatchObject({ mode: 'judged', status: 'pass' });
    expect(row('restart_recovery_control_plane').n).toBe(recovered.length);
    expect(row('restart_recovery').mode).toBe('report');
    expect(row('agent_boot')).toMatchObject({ status: 'pass', n: 3 });
    expect(records.some((r) => r.kind === 'event' && r.name === 'budget.breach')).toBe(false);

    expectNothingLost(records);
    await server.stop();
  }, 180_000);

  it('graceful and hot restarts over the served process: drained runners reload, handed-over ones reattach', async () => {
    const dir = scratchDir('fleetbench-live-chaos-');
    const { server, result, records } = await runWave(
      dir,
      wave(
        'live-chaos-soft',
        `duration: 7m
time-scale: 15
executors:
  - type: chaos-wave
    adapter: codex
    concurrency: 3
    restarts: 2
    kinds: [graceful, hot]
    provider-faults: 0
    first-fault: 30s
    gap: { min: 15s, max: 20s }
`,
      ),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const outages = spans(records, 'controlplane.outage');
    expect(outages.map((s) => s.labels?.kind).sort()).toEqual(['graceful', 'hot']);
    const pids = outages.map((s) => s.data as { pidBefore: number; pidAfter: number });
    for (const p of pids) expect(p.pidAfter).not.toBe(p.pidBefore);
    const readyAt = (kind: string) =>
      events(records, 'controlplane.ready').find((e) => e.labels?.reason === kind)!.t;

    // Graceful: runners drained to an item boundary, so their sessions reload cleanly.
    const gracefulLoads = spans(records, 'provider.session.load').filter(
      (s) => s.labels?.reason === 'recovery' && s.t >= readyAt('graceful') && s.t < readyAt('hot'),
    );
    expect(gracefulLoads.length).toBeGreaterThanOrEqual(1);
    // Hot: runners are reattached (run.runner.attach), nothing is reloaded.
    const attached = spans(records, 'run.runner.attach').filter((s) => s.t >= readyAt('hot'));
    expect(attached.length).toBeGreaterThanOrEqual(1);
    expect(
      spans(records, 'provider.session.load').filter(
        (s) => s.t >= readyAt('hot') && s.labels?.reason === 'recovery',
      ),
    ).toHaveLength(0);

    const summary = JSON.parse(result.stdout) as RunSummary;
    // One sample per run active at the kill (a run still recovering from the graceful restart
    // when the hot one lands gives one sample for both: docs/analysis.md#speed, outage removed).
    const graceful = groupOf(summary, 'restart_recovery_control_plane', 'graceful')!.values;
    const hot = groupOf(summary, 'restart_recovery_control_plane', 'hot')!.values;
    expect(graceful.length).toBeGreaterThanOrEqual(gracefulLoads.length);
    expect(graceful.length).toBeLessThanOrEqual(3);
    expect(hot.length).toBeGreaterThanOrEqual(1);
    expect(hot.length).toBeLessThanOrEqual(attached.length);
    expectNothingLost(records);
    await server.stop();
  }, 180_000);
});

describe('turnover against reference serve over the http target', () => {
  afterAll(stopAll);

  it('a tiny pool parks and wakes over the protocol: actor spans from the served process, swaps done', async () => {
    const dir = scratchDir('fleetbench-live-turnover-');
    const file = join(dir, 'turnover.yaml');
    writeFileSync(
      file,
      `name: live-turnover
description: a tiny park/wake pool over http (test/live-chaos.test.ts)
clock: real
time-scale: 10
duration: 3m
turnover:
  registered: 10
  awake: 4
  target-rps: 1
  registration-concurrency: 4
  steady: 30s
  profile: coding-session
`,
    );
    const server = await startReferenceServe(join(dir, 'state'));
    const out = join(dir, 'run');
    const result = await runCli([
      'run',
      file,
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
    // The actor spans come from the served control plane, over the stream.
    expect(spans(records, 'actor.create')).toHaveLength(10);
    expect(spans(records, 'actor.wake').length).toBeGreaterThan(0);
    const turnover = (
      JSON.parse(result.stdout) as {
        analysis: { turnover: { registered: number; window: { swaps: { asked: number; done: number } } } };
      }
    ).analysis.turnover;
    expect(turnover.registered).toBe(10);
    expect(turnover.window.swaps.asked).toBeGreaterThan(10);
    expect(turnover.window.swaps.done).toBeGreaterThan(0);
    // The gauge is read from GET /v1/actors: the four states sum to the pool.
    const last = records.filter((r) => r.kind === 'gauge' && r.name === 'actors').slice(-4);
    expect(last.reduce((sum, g) => sum + (g.kind === 'gauge' ? g.value : 0), 0)).toBe(10);
    const stream = events(records, 'target.events')[0]!.data as Record<string, number>;
    expect(stream.received).toBe(stream.declared);
    expect(stream.written).toBe(stream.declared);
    expect(stream.gaps).toBe(0);
    await server.stop();
  }, 180_000);
});

describe('capabilities an http target lists', () => {
  it('a chaos wave is refused up front, naming what is missing, before the run starts', async () => {
    const dir = scratchDir('fleetbench-live-caps-');
    const posted: string[] = [];
    let capabilities = ['events', 'restart'];
    const server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/v1/info') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ protocol: 'fleetbench-target/1', name: 'shim', capabilities }));
        return;
      }
      posted.push(`${req.method} ${req.url}`);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const run = (...sets: string[]) =>
        cli([
          'run',
          'chaos-codex-c4',
          '--target',
          url,
          '--clock',
          'real',
          '--out',
          join(dir, 'run'),
          '--no-progress',
          ...sets.flatMap((s) => ['--set', s]),
        ]);
      let result = await run();
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        "executor 'chaos-wave' needs a target that supports startRun, sendInput, endRun, onRunNotice, providerFault; 'http' does not",
      );
      // Runs without provider faults: a wave without them asks for no more.
      capabilities = ['events', 'restart', 'runs'];
      result = await run();
      expect(result.stderr).toContain(
        "executor 'chaos-wave' needs a target that supports providerFault; 'http' does not",
      );
      // Nothing was started on the target.
      expect(posted.filter((p) => p.startsWith('POST /v1/run ') || p === 'POST /v1/run')).toEqual([]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 180_000);
});
