import { spawnSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TargetEvent } from '../src/contract/protocol.ts';
import { startReferenceServer } from '../src/reference/server.ts';
import { startSupervisor } from '../src/reference/supervisor.ts';
import { readTrace } from '../src/trace/reader.ts';
import { countTopLevelEntries } from '../src/workload/scenario-bounds.ts';
import { cli } from './helpers/cli.ts';
import { cpuTimeOf } from './helpers/cpu.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { waitUntil } from './helpers/wait.ts';

const STUCK = new URL('./fixtures/stuck-target.ts', import.meta.url).pathname;
const LOST = new URL('./fixtures/lost-target.ts', import.meta.url).pathname;
const RUNS_LOST = new URL('./fixtures/runs-lost-target.ts', import.meta.url).pathname;

describe('scenario bounds', () => {
  const dir = scratchDir('fleetbench-bounds-');
  const scenario = (name: string, body: string) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `name: ${name}\nsessions:\n  count: 2\n${body}`);
    return file;
  };
  const cases: Array<[string, string, string[], RegExp]> = [
    ['zero-duration', 'duration: 0\n', [], /zero-duration\.yaml:4: duration: expected a run longer than 0/],
    // 30k executors took 2.5 GB and ignored SIGTERM for 22 s; 100k never finished starting.
    [
      'thirty-thousand-executors',
      `duration: 2m\nexecutors:\n${'  - {type: fixed, count: 1}\n'.repeat(30_000)}`,
      [],
      /thirty-thousand-executors\.yaml:6: executors: expected at most 100 executors, got 30000/,
    ],
    [
      'executors-together',
      'duration: 2m\nexecutors:\n  - {type: fixed, count: 6000}\n  - {type: native-runs, adapter: codex, count: 6000}\n',
      [],
      /executors: the executors start 12000 sessions together: expected at most 10000/,
    ],
    [
      'newline-name',
      'duration: 2m\n',
      ['--set', 'name="x\\nimmutable: true"'],
      /--set name=x\nimmutable: true: expected no control characters/,
    ],
    [
      'zero-interval',
      'duration: 2m\npolling:\n  interval: 0\n',
      [],
      /zero-interval\.yaml:6: polling\.interval: expected at least 100ms/,
    ],
    [
      'late-fault',
      'duration: 2m\nfaults:\n  - type: cache-flush\n    at: 10h\n',
      [],
      /late-fault\.yaml:7: faults\[0\]\.at: the cache-flush fault at 10h is after the run's end \(duration 2m\)/,
    ],
    // A steady marker at or after the end (or too close to it to hold a poll interval) left the
    // run's burn unjudged: exit 0 where the same run breached (issue: verdicts no input can fool).
    [
      'late-marker',
      'duration: 10m\nmarkers:\n  steady-start: 10m\n',
      [],
      /late-marker\.yaml:\d+: markers\.steady-start: the steady\.start marker at 10m is at or after the run's end \(duration 10m\)/,
    ],
    [
      'late-marker-set',
      'duration: 10m\n',
      ['--set', 'markers.steady-start=30m'],
      /--set markers\.steady-start=30m: the steady\.start marker at 30m is at or after the run's end/,
    ],
    // Provider fault windows that can never open: refused like a scenario fault after the end.
    [
      'provider-fault-after-the-end',
      'duration: 2m\nprovider:\n  faults:\n    - {kind: outage, fromMs: 1e15}\n',
      [],
      // The provider's own bound (30 days) or the run's end: either way it names why it never fires.
      /provider\.faults\[0\]\.fromMs: .*(at or after the run's end|past any run).*can never fire/,
    ],
    [
      'provider-fault-1e308',
      'duration: 2m\nprovider:\n  faults:\n    - {kind: rate-limit, fromMs: 1e308}\n',
      [],
      /provider\.faults\[0\]\.fromMs: .*can never fire/,
    ],
    [
      'provider-fault-closes-before-it-opens',
      'duration: 2m\nprovider:\n  faults:\n    - {kind: overloaded, fromMs: 60000, untilMs: 1000}\n',
      [],
      /provider\.faults\[0\]\.untilMs: .*(before it opens|after fromMs).*never fire/,
    ],
    [
      'billion-sessions',
      'duration: 2m\n',
      ['--set', 'sessions.count=1000000000'],
      /--set sessions\.count=1000000000: expected at most 10000 sessions.*docs\/limits\.md/,
    ],
    [
      'long-run',
      'duration: 2m\n',
      ['--set', 'duration=1e9'],
      /--set duration=1000000000: expected at most 720h/,
    ],
    [
      'prototype',
      'duration: 2m\n',
      ['--set', '__proto__.polluted=1'],
      /--set __proto__\.polluted: '__proto__' is not a scenario field name/,
    ],
    [
      'constructor',
      'duration: 2m\n',
      ['--set', 'sessions.constructor.x=1'],
      /'constructor' is not a scenario field/,
    ],
  ];
  for (const [name, body, extra, message] of cases) {
    it(`${name}: exit 2 in seconds, naming the field`, async () => {
      const out = join(dir, `out-${name}`);
      const { result, cpuMs } = await cpuTimeOf(() =>
        cli(['run', scenario(name, body), '--out', out, ...extra]),
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(cpuMs).toBeLessThan(15_000);
      expect(existsSync(join(out, 'trace.jsonl'))).toBe(false);
    });
  }

  it('the report’s 2.7 MB scenario of 30,000 executors is refused before it is parsed (it took 15 s and 380 MB)', async () => {
    const entry = (i: number) =>
      `  - { type: arrival-rate, rate: 1/s, max-sessions: 1, start: ${i}s, stages: [{ duration: 1m, rate: 2/s }] }\n`;
    const file = scenario(
      'report-executors',
      `duration: 2m\nexecutors:\n${Array.from({ length: 30_000 }, (_, i) => entry(i)).join('')}`,
    );
    const { result, cpuMs } = await cpuTimeOf(() => cli(['run', file, '--out', join(dir, 'out-report')]));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /report-executors\.yaml:6: executors: expected at most 100 executors, got 30000/,
    );
    // Counted in the text: a fraction of a second of CPU where the parse took many seconds.
    expect(cpuMs).toBeLessThan(2_000);
  });

  it('counts a top-level list in the text, never more entries than it has', () => {
    const cases: Array<[string, number | undefined]> = [
      ['executors:\n  - a\n  - b: [1, 2]\n    c:\n      - nested\n  - |\n    - text\nfaults: []\n', 3],
      ['executors:\n- a\n- b\nname: x\n', 2],
      ['executors: [a, {b: 1, c: [2, 3]}, "d, e", \'f]\']\n', 4],
      ['executors: [a, b, ]  # trailing comma\n', 2],
      ['executors: []\n', 0],
      ['executors: *all\n', undefined],
      ['name: x\n', undefined],
      ['executors:\n  # nothing yet\nname: x\n', 0],
    ];
    for (const [text, count] of cases)
      expect(countTopLevelEntries(text, 'executors')?.count, text).toBe(count);
  });

  it("a scenario's name cannot put files outside the output directory", async () => {
    const cwd = join(dir, 'cwd');
    mkdirSync(cwd, { recursive: true });
    const file = join(dir, 'escape.yaml');
    writeFileSync(file, 'name: "../../../escaped"\nduration: 1m\nsessions:\n  count: 1\n');
    const result = await cli(['run', file, '--no-report', '--json'], { cwd });
    expect(result.code).toBe(0);
    expect(readdirSync(join(cwd, 'fleetbench-out', 'runs'))).toEqual(['___.._.._escaped']);
    expect(existsSync(join(dir, 'escaped'))).toBe(false);
    expect(existsSync(join(cwd, '..', '..', '..', 'escaped'))).toBe(false);
  });
});

describe('runs that cannot finish', () => {
  const dir = scratchDir('fleetbench-stuck-');
  const stuck = (name: string) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `name: ${name}\ntarget: module:${STUCK}\nduration: 2m\nsessions:\n  count: 1\n`);
    return file;
  };

  it('a loop that writes without time passing (no yield at all) is stopped by the progress guard: exit 3, partial, no verdict', async () => {
    const out = join(dir, 'guard');
    // CPU time, not wall time: what the guard bounds is the work, which a loaded machine only
    // spreads over more seconds (load 13 on 2 cores: 6 s became 49 s of wall time).
    const { result, cpuMs } = await cpuTimeOf(() =>
      cli(['run', stuck('stuck-microtasks'), '--out', out, '--no-report']),
    );
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/the run failed \(progress-guard\): the run's clock stopped advancing/);
    expect(result.stdout).not.toMatch(/pass/);
    expect(cpuMs).toBeLessThan(30_000);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.outcome).toMatchObject({
      reason: 'failed',
      partial: true,
      failure: { source: 'progress-guard' },
    });
    expect(summary.budgets).toBeUndefined();
    // Bounded: the guard stops it at 1,000,000 records (~43 MB), not when the disk is full.
    expect(statSync(join(out, 'trace.jsonl')).size).toBeLessThan(100 * 1024 * 1024);
    const { stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('failed');
  }, 240_000);

  it('a restart that never comes back fails the run: reason failed, not judged, exit 3, the failed fault in the trace', async () => {
    const file = join(dir, 'lost.yaml');
    writeFileSync(
      file,
      `name: lost\ntarget: module:${LOST}\nduration: 5m\nsessions:\n  count: 2\nfaults:\n  - type: restart\n    at: 1m\nbudgets: [track-b]\n`,
    );
    const out = join(dir, 'lost');
    const result = await cli(['run', file, '--out', out, '--no-report']);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/the run failed \(fault 1 \(restart\)\): target lost/);
    expect(result.stdout).not.toMatch(/every judged budget holds|✓ pass/);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.outcome).toMatchObject({ reason: 'failed', partial: true });
    expect(summary.budgets).toBeUndefined();
    const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('failed');
    expect(records.some((r) => r.kind === 'event' && r.name === 'fault.failed')).toBe(true);
    expect(records.some((r) => r.kind === 'event' && r.name === 'run.failed')).toBe(true);
  }, 60_000);

  it('a chaos wave whose runs the target lost (409 to the next input) fails the run: exit 3, partial summary, no stack', async () => {
    const file = join(dir, 'runs-lost.yaml');
    writeFileSync(
      file,
      `name: runs-lost\ntarget: module:${RUNS_LOST}\nduration: 5m\nsessions:\n  count: 2\nexecutors:\n  - type: chaos-wave\n    adapter: codex\n    concurrency: 2\n    restarts: 1\n    kinds: [hard]\n    provider-faults: 0\n    first-fault: 30s\n    think: 20s\nbudgets: [native-speed]\n`,
    );
    const out = join(dir, 'runs-lost');
    const result = await cli(['run', file, '--out', out, '--no-report']);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      /the run failed \(executor chaos-wave\): .*409 conflict: no run on session 's-000[12]'/,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.outcome).toMatchObject({
      reason: 'failed',
      partial: true,
      failure: { source: 'executor chaos-wave' },
    });
    expect(summary.budgets).toBeUndefined();
    const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('failed');
    // What happened before the failure is kept: the restart and the turns before it.
    expect(records.some((r) => r.kind === 'event' && r.name === 'fault.start')).toBe(true);
    expect(records.some((r) => r.kind === 'event' && r.name === 'run.failed')).toBe(true);
  }, 60_000);

  it('records with impossible times from the target are counted (target.bad_record), never fatal', async () => {
    const out = join(dir, 'bad-records');
    const result = await cli(['run', stuck('bad-records'), '--out', out, '--no-report', '--json']);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.outcome.reason).toBe('completed');
    expect(summary.analysis.events.byName['target.bad_record']).toBe(2);
    expect(summary.analysis.warnings.join('\n')).toMatch(/target\.bad_record: 2 report/);
    const { records } = await readTrace(join(out, 'trace.jsonl'));
    const bad = records.filter((r) => r.kind === 'event' && r.name === 'target.bad_record');
    expect(bad.map((r) => (r.kind === 'event' ? r.data?.reason : undefined))).toEqual([
      expect.stringMatching(/^t: 10000000000000 ms is beyond/),
      expect.stringMatching(/^dur: 1e\+308 ms is beyond/),
    ]);
    expect(records.some((r) => r.kind === 'event' && r.name === 'fine')).toBe(true);
  }, 60_000);

  it('--set __proto__ leaves Object.prototype alone in this process too', async () => {
    const { parseOverride } = await import('../src/workload/load.ts');
    expect(() => parseOverride('__proto__.polluted=1')).toThrow(/not a scenario field name/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('reference serve state', () => {
  const dir = scratchDir('fleetbench-state-');
  /** A GitHub emulator for the served control plane to poll (stopped after the file). */
  const github = async () => {
    const { emulator } = inProcess();
    const server = await serve(emulator);
    return { url: server.url, token: emulator.defaultToken };
  };
  /** `POST /v1/run` of a minimal run against a fresh emulator. */
  const startRun = async (base: string) =>
    fetch(`${base}/v1/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        runId: 'r',
        epochMs: Date.now(),
        timeScale: 1,
        seed: 1,
        scenario: 's',
        github: await github(),
      }),
    });

  it('corrupt run.json and runs.json: reported with their paths and what was lost, moved aside, the server starts empty', async () => {
    const state = join(dir, 'corrupt');
    mkdirSync(state, { recursive: true });
    writeFileSync(join(state, 'run.json'), '{"runId": "x", "epochMs": 1');
    writeFileSync(join(state, 'runs.json'), 'not json');
    const events: TargetEvent[] = [];
    const logs: string[] = [];
    const server = await startReferenceServer({
      stateDir: state,
      recover: 'hard',
      emit: (e) => events.push(e),
      log: (line) => logs.push(line),
    });
    try {
      expect(logs.join('\n')).toMatch(
        /state file .*run\.json is corrupt .*moved to .*run\.json\.corrupt; lost: the run/,
      );
      expect(
        events
          .filter((e) => e.name === 'controlplane.state_corrupt')
          .map((e) => (e.data as { path?: string } | undefined)?.path),
      ).toEqual([join(state, 'run.json')]);
      expect(existsSync(join(state, 'run.json.corrupt'))).toBe(true);
      const info = await fetch(`http://127.0.0.1:${server.port}/v1/sessions`, { method: 'GET' });
      expect(info.status).toBe(200);
      expect(await info.json()).toEqual({ counts: {} });
    } finally {
      await server.close();
    }
  });

  it('the run token is kept in a 0600 file of a 0700 directory', async () => {
    const state = join(dir, 'private');
    const server = await startReferenceServer({ stateDir: state, emit: () => undefined });
    try {
      const res = await startRun(`http://127.0.0.1:${server.port}`);
      expect(res.status).toBe(200);
      expect(statSync(join(state, 'run.json')).mode & 0o777).toBe(0o600);
      expect(statSync(state).mode & 0o777).toBe(0o700);
    } finally {
      await server.close();
    }
  });

  it('a restart whose state cannot be read: the supervisor says so (500), not 503 for ever, and takes a new run', async () => {
    const state = join(dir, 'lost');
    const supervisor = await startSupervisor({ stateDir: state, readyTimeoutMs: 20_000 });
    try {
      const started = await startRun(supervisor.url);
      expect(started.status).toBe(200);
      // A state the next process cannot even read: run.json is a directory now.
      const { rmSync } = await import('node:fs');
      rmSync(join(state, 'run.json'));
      mkdirSync(join(state, 'run.json'));
      const restart = await fetch(`${supervisor.url}/v1/restart`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"kind":"hard"}',
      });
      expect(restart.status).toBe(500);
      expect(((await restart.json()) as { error: { message: string } }).error.message).toMatch(
        /the run cannot be recovered: .*run\.json is corrupt \(not a regular file\)/,
      );
      expect(existsSync(join(state, 'run.json.corrupt'))).toBe(true);
      // Up, serving no run, and able to take the next one.
      const after = await fetch(`${supervisor.url}/v1/sessions/s-1`);
      expect(after.status).toBe(409);
      expect((await startRun(supervisor.url)).status).toBe(200);
    } finally {
      await supervisor.close();
    }
  }, 60_000);
});

describe('the output directory (issue 30)', () => {
  const dir = scratchDir('fleetbench-outdir-');

  it('a symbolic link (or a hard link) already in --out is refused by name; the file it points to is untouched', async () => {
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    const out = join(dir, 'linked');
    mkdirSync(out, { recursive: true });
    symlinkSync(victim, join(out, 'trace.jsonl'));
    const result = await cli(['run', 'S2-T1-5', '--out', out, '--no-report']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${join(out, 'trace.jsonl')} is a symbolic link (to ${victim})`);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    const hard = join(dir, 'hard');
    mkdirSync(hard, { recursive: true });
    linkSync(victim, join(hard, 'summary.json'));
    const twice = await cli(['run', 'S2-T1-5', '--out', hard, '--no-report']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(`${join(hard, 'summary.json')} has 1 other hard link(s)`);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('two runs with one --out: the second exits 2 naming the first, which completes whole; a killed run leaves no block', async () => {
    const out = join(dir, 'shared');
    // A real-clock run of about 3 s, long enough for a second one to arrive while it runs.
    const first = cli([
      'run',
      'S2-T1-5',
      '--clock',
      'real',
      '--time-scale',
      '40',
      '--set',
      'duration=2m',
      '--out',
      out,
      '--no-report',
      '--no-budgets',
      '--no-progress',
      '--metrics-linger',
      '0',
    ]);
    await waitUntil('the first run holding --out', () => existsSync(join(out, '.fleetbench.lock')));
    const second = await cli(['run', 'S2-T1-5', '--out', out, '--no-report']);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(
      new RegExp(`${out} is in use by another fleetbench run \\(run S2-T1-5, pid ${process.pid}`),
    );
    const done = await first;
    expect(done.code, done.stderr).toBe(0);
    const { stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('completed');
    expect(existsSync(join(out, '.fleetbench.lock'))).toBe(false);
    // A lock left by a process that is gone (a SIGKILL) is taken over.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    writeFileSync(
      join(out, '.fleetbench.lock'),
      JSON.stringify({ pid: Number(gone.stdout), host: hostname(), command: 'run x', startedAt: 'then' }),
    );
    const after = await cli(['run', 'S2-T1-5', '--out', out, '--no-report', '--no-budgets']);
    expect(after.code, after.stderr).toBe(0);
  }, 120_000);
});
