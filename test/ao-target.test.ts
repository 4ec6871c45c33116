/**
 * The real agent-orchestrator (its published packages, pinned in package.json) driven by
 * `fleetbench run --target ao` through the real gh CLI against the run's emulator: a few
 * sessions for about 28 s of real time, a review burst AO must react to and a hard restart of
 * AO's process. What is asserted is what AO did, read from the trace.
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
    // Two sessions (each gh call is a Go process of ~0.15 s of CPU: most of this file's cost);
    // 12 s after the restart, so the new process polls at least twice even on a loaded machine.
    writeFileSync(
      scenario,
      [
        'name: ao-short',
        'duration: 28s',
        'target: ao',
        'polling: { interval: 4s }',
        'sessions: { count: 2, pr-after: 0, ci-after: 0, fix-after: 2s }',
        'faults:',
        '  - { type: review-burst, at: 9s, comments: { min: 2, max: 3 } }',
        '  - { type: restart, kind: hard, at: 16s }',
        'budgets: [track-b]',
        '',
      ].join('\n'),
    );
    const out = join(dir, 'run');
    mkdirSync(out, { recursive: true });
    const result = await cli(['run', scenario, '--out', out, '--no-progress']);
    // Track B judges the run (its headroom rows fail at 10 s polling projected to 50 sessions).
    expect([0, 99], result.stderr).toContain(result.code);
    expect(result.stderr).toContain('agent-orchestrator 0.2.0');
    expect(result.stdout).toContain('Budgets: track-b');

    const lines = readFileSync(join(out, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    expect(lines.at(-1)).toMatchObject({ kind: 'end', reason: 'completed' });
    const api = lines.filter((l) => l.kind === 'api');
    expect(api.length).toBeGreaterThan(30);
    // Attribution by content: gh sends no fleetbench header, yet every call has its session.
    expect(api.filter((r) => r.session === undefined)).toEqual([]);
    expect(new Set(api.map((r) => r.session))).toEqual(new Set(['s-0001', 's-0002']));
    // Nothing AO asked for was missing from the emulator.
    expect(api.filter((r) => r.status === 404 || r.status === 422 || (r.status ?? 0) >= 500)).toEqual([]);
    // gh's named GraphQL queries are the operations; calls inside a cycle carry its id.
    expect(api.some((r) => r.op === 'PullRequestByNumber')).toBe(true);
    expect(api.filter((r) => r.source === 'lifecycle').every((r) => typeof r.cycle === 'number')).toBe(true);

    const events = (name: string) => lines.filter((l) => l.kind === 'event' && l.name === name);
    const spans = (name: string) => lines.filter((l) => l.kind === 'span' && l.name === name);
    // Every session's PR was found by AO itself (gh pr list --head), so it left spawning.
    for (const s of ['s-0001', 's-0002'])
      expect(events('session.state').some((e) => e.session === s && e.labels?.to === 'pr_open')).toBe(true);
    // The review burst made AO send its changes-requested reaction to the agents.
    expect(events('ao.agent.message').some((e) => e.labels?.reaction === 'review-comments')).toBe(true);
    expect(spans('agent.review.addressed').length).toBeGreaterThan(0);
    // The hard restart replaced AO's process, and the new one went on polling.
    expect(events('controlplane.ready')).toHaveLength(1);
    const readyAt = (events('controlplane.ready')[0] as unknown as { t: number }).t;
    expect(spans('poll.cycle').some((s) => (s as unknown as { t: number }).t > readyAt)).toBe(true);

    const analyzed = await cli(['analyze', join(out, 'trace.jsonl'), '--json']);
    expect(analyzed.code, analyzed.stderr).toBe(0);
    const analysis = JSON.parse(analyzed.stdout);
    expect(analysis.api.totals.calls).toBe(api.length);
  }, 180_000);

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
