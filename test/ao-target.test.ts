/**
 * The real agent-orchestrator (its published packages, pinned in package.json) driven by
 * `fleetbench run --target ao` through the real gh CLI against the run's emulator: two
 * sessions, a review burst AO must react to and a hard restart of AO's process, until the trace
 * shows all of it (about 20 s on a quiet machine, minutes on a loaded one). What is asserted is
 * what AO did, read from the trace, per poll cycle.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';
import { waitUntil } from './helpers/wait.ts';

const dir = scratchDir('fleetbench-ao-');
const gh = systemTool('gh', ['--version'], 'gh');

interface Line {
  kind: string;
  name?: string;
  t?: number;
  dur?: number;
  data?: { cycle?: number; sessions?: number };
  session?: string;
  status?: number;
  route?: string;
  op?: string;
  source?: string;
  cycle?: number;
  labels?: Record<string, unknown>;
  reason?: string;
}

describe.skipIf(gh.skip)('--target ao: agent-orchestrator 0.2.0 through gh against the emulator', () => {
  it('polls, reacts to review comments, survives a hard restart; every call attributed to its session', async () => {
    gh.require();
    const scenario = join(dir, 'ao-short.yaml');
    // Two sessions (each gh call is a Go process of ~0.15 s of CPU: most of this file's cost).
    // How many poll cycles fit in a fixed time depends on the machine (a cycle of 4.6 s alone
    // takes 30 s at load 14), so the run lasts until the trace shows what is asserted, and is
    // then stopped as a user would (Ctrl-C): the assertions are per cycle, never a count of
    // calls a slow machine misses.
    writeFileSync(
      scenario,
      [
        'name: ao-short',
        'duration: 15m',
        'target: ao',
        'polling: { interval: 4s }',
        'sessions: { count: 2, pr-after: 0, ci-after: 0, fix-after: 2s }',
        'faults:',
        // After the sessions exist in AO (fixed.spawned), not at a fixed time: under load AO's
        // own start takes 15 s, and a restart at 16 s killed it while it spawned them.
        '  - { type: review-burst, after: fixed.spawned, delay: 7s, comments: { min: 2, max: 3 } }',
        '  - { type: restart, kind: hard, after: fixed.spawned, delay: 14s }',
        '',
      ].join('\n'),
    );
    const out = join(dir, 'run');
    mkdirSync(out, { recursive: true });
    const trace = join(out, 'trace.jsonl');
    const read = (): Line[] =>
      existsSync(trace)
        ? readFileSync(trace, 'utf8')
            .split('\n')
            .filter((l) => l.endsWith('}'))
            .map((l) => JSON.parse(l) as Line)
        : [];
    const named = (lines: Line[], kind: string, name: string) =>
      lines.filter((l) => l.kind === kind && l.name === name);
    /** What the run must show (both PRs found, the reaction to the burst, a restart polled after): what is missing. */
    const missing = (lines: Line[]) => {
      const ready = named(lines, 'event', 'controlplane.ready')[0];
      return Object.entries({
        // pr_open, or review straight away when AO's first look at the PR came after the burst.
        'both PRs found': ['s-0001', 's-0002'].every((s) =>
          named(lines, 'event', 'session.state').some(
            (e) => e.session === s && (e.labels?.to === 'pr_open' || e.labels?.to === 'review'),
          ),
        ),
        'the reaction to the burst': named(lines, 'event', 'ao.agent.message').some(
          (e) => e.labels?.reaction === 'review-comments',
        ),
        'the comments addressed': named(lines, 'span', 'agent.review.addressed').length > 0,
        'the restart': ready !== undefined,
        'a cycle over both sessions after it': named(lines, 'span', 'poll.cycle').some(
          (c) => ready !== undefined && (c.t ?? 0) > (ready.t ?? 0) && c.data?.sessions === 2,
        ),
      })
        .filter(([, seen]) => !seen)
        .map(([what]) => what);
    };
    const run = spawn(
      process.execPath,
      [BIN, 'run', scenario, '--out', out, '--no-progress', '--no-report'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    let stderr = '';
    run.stderr.on('data', (d) => {
      stderr += d;
    });
    run.stdout.resume();
    const exited = new Promise<number | null>((resolve) => run.on('close', (code) => resolve(code)));
    try {
      // As long as AO makes progress (a new call at least every 2 minutes: a cycle is ~10 calls),
      // up to 12 minutes: a loaded machine only makes the wait longer, a stuck AO fails it.
      const started = performance.now();
      let calls = 0;
      let lastProgress = started;
      for (;;) {
        const lines = read();
        const left = missing(lines);
        if (left.length === 0) break;
        const now = performance.now();
        const seen = lines.filter((l) => l.kind === 'api').length;
        if (seen > calls) {
          calls = seen;
          lastProgress = now;
        }
        if (now - lastProgress > 120_000 || now - started > 720_000 || run.exitCode !== null)
          throw new Error(
            `after ${Math.round((now - started) / 1000)} s and ${calls} calls, still missing: ${left.join(', ')}; stderr: ${stderr}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      run.kill('SIGINT');
    }
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain('agent-orchestrator 0.2.0');

    const lines = read();
    expect(lines.at(-1)).toMatchObject({ kind: 'end', reason: 'interrupted' });
    const api = lines.filter((l) => l.kind === 'api');
    // Attribution by content: gh sends no fleetbench header, yet every call has its session.
    expect(api.filter((r) => r.session === undefined)).toEqual([]);
    expect(new Set(api.map((r) => r.session))).toEqual(new Set(['s-0001', 's-0002']));
    // Nothing AO asked for was missing from the emulator.
    expect(api.filter((r) => r.status === 404 || r.status === 422 || (r.status ?? 0) >= 500)).toEqual([]);
    // gh's named GraphQL queries are the operations; calls inside a cycle carry its id.
    expect(api.some((r) => r.op === 'PullRequestByNumber')).toBe(true);
    const lifecycle = api.filter((r) => r.source === 'lifecycle');
    expect(lifecycle.every((r) => typeof r.cycle === 'number')).toBe(true);
    // Both processes polled both sessions inside their cycles. (Not per cycle by time: a cycle's
    // span is timed by AO's messages to fleetbench, its calls by gh's requests to the emulator,
    // and on a loaded machine the two channels drift apart by more than a cycle.)
    const cycles = named(lines, 'span', 'poll.cycle').filter((c) => (c.data?.sessions ?? 0) > 0);
    expect(cycles.length).toBeGreaterThanOrEqual(2);
    const readyAt = named(lines, 'event', 'controlplane.ready')[0]?.t ?? 0;
    const polled = (calls: Line[]) => new Set(calls.map((r) => r.session));
    expect(polled(lifecycle.filter((r) => (r.t ?? 0) > readyAt))).toEqual(new Set(['s-0001', 's-0002']));
    // The hard restart replaced AO's process once.
    expect(named(lines, 'event', 'controlplane.ready')).toHaveLength(1);

    const analyzed = await cli(['analyze', trace, '--json']);
    expect(analyzed.code, analyzed.stderr).toBe(0);
    const analysis = JSON.parse(analyzed.stdout);
    expect(analysis.api.totals.calls).toBe(api.length);
    // Who spent the CPU while AO ran (src/base/process-cpu.ts): AO's process and the gh processes
    // it runs are the control plane's, this process fleetbench's.
    expect(analysis.harness.cpuS.controlPlane).toBeGreaterThan(0);
    expect(analysis.harness.cpuS.harness).toBeGreaterThan(0);
    expect(analysis.harness.samples).toBeGreaterThanOrEqual(2);
    expect(analysis.harness.sharePct).toBeGreaterThan(0);
  }, 900_000);

  it('AO dying during the run fails the run: exit non-zero, trace kept with its footer', async () => {
    const out = join(dir, 'crash');
    const cli = spawn(
      process.execPath,
      [
        BIN,
        'run',
        'S2-T1-1',
        '--target',
        'ao',
        '--set',
        'polling.interval=5s',
        '--set',
        'duration=2m',
        '--no-progress',
        '--out',
        out,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    cli.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => cli.on('close', (code) => resolve(code)));
    // Wait (bounded) until AO has made calls, then kill AO's process (the CLI's child).
    const trace = join(out, 'trace.jsonl');
    await waitUntil(
      'AO to make a call',
      () => existsSync(trace) && readFileSync(trace, 'utf8').includes('"kind":"api"'),
      { timeoutMs: 30_000, everyMs: 250 },
    );
    const children = spawnSync('pgrep', ['-P', String(cli.pid)], { encoding: 'utf8' })
      .stdout.trim()
      .split(/\s+/);
    for (const pid of children.filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
    const code = await exited;
    expect(code).not.toBe(0);
    expect(stderr).toContain('agent-orchestrator exited during the run');
    const last = JSON.parse(readFileSync(trace, 'utf8').trim().split('\n').at(-1)!);
    expect(last).toMatchObject({ kind: 'end', reason: 'failed' });
  }, 90_000);

  it('AO dying before it is ready: the run fails saying it did not start (not "exited during the run"), and ao.log is the run\'s own', async () => {
    const out = join(dir, 'boot-crash');
    mkdirSync(out, { recursive: true });
    // What an earlier run in the same --out left.
    writeFileSync(join(out, 'ao.log'), 'a line of an earlier run\n');
    const cli = spawn(
      process.execPath,
      [BIN, 'run', 'S2-T1-1', '--target', 'ao', '--set', 'duration=2m', '--no-progress', '--out', out],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    cli.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => cli.on('close', (code) => resolve(code)));
    // AO's process (the CLI's child running bin/ao-worker.js; not esbuild's, if the CLI is
    // bundling its sources first) is killed as soon as it exists: seconds before it is ready.
    let killed = false;
    await waitUntil(
      "AO's process to start",
      () => {
        const children = spawnSync('pgrep', ['-P', String(cli.pid), '-f', 'ao-worker'], { encoding: 'utf8' })
          .stdout.trim()
          .split(/\s+/)
          .filter(Boolean);
        for (const pid of children) process.kill(Number(pid), 'SIGKILL');
        killed ||= children.length > 0;
        return killed;
      },
      { timeoutMs: 30_000, everyMs: 10 },
    );
    const code = await exited;
    expect(code, stderr).toBe(3);
    expect(stderr).toContain('agent-orchestrator did not start: the process exited (SIGKILL)');
    expect(stderr).not.toContain('exited during the run');
    expect(readFileSync(join(out, 'ao.log'), 'utf8')).not.toContain('a line of an earlier run');
  }, 90_000);

  it('refuses a bad ao:DIR in seconds, naming what is missing', async () => {
    const missing = await cli(['run', 'S2-T1-1', '--target', `ao:${join(dir, 'nope')}`, '--no-progress']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such directory');
    const empty = join(dir, 'empty-checkout');
    mkdirSync(empty, { recursive: true });
    const result = await cli(['run', 'S2-T1-1', '--target', `ao:${empty}`, '--no-progress']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('@composio/ao-core');
  }, 60_000);
});
