/**
 * `--target ao` with `agents: real` (docs/agent-orchestrator.md#real-agents-agents-real): AO 0.2.0's own
 * tmux runtime, claude-code agent and worktree workspace plugins start the real Claude Code,
 * whose model is the run's provider emulator following the `ao-agent` script, so the agent's
 * `gh` calls (reading its issue, its PR, its checks and review comments, replying to each) come
 * from a real agent, attributed to its session as source `agent`. One session, two review bursts
 * and a hard restart of AO between them: the agent outlives AO's restart and answers the
 * restarted AO. Run in a network namespace with only loopback, so nothing beyond 127.0.0.1 is
 * reached, with every connect() observed (strace): nothing but loopback is dialled. Off CI, skipped with one line when gh, tmux, the agent CLIs or the namespace are
 * missing; under CI all are required (.ci/run installs them).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_PACKAGES } from '../src/agents/index.ts';
import { scriptsFileSchema } from '../src/provider/index.ts';
import { AO_AGENT_SCRIPT, aoAgentScript } from '../src/targets/ao/agents.ts';
import { BIN, cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import {
  agentClisPresent,
  dialled,
  inLoopbackNamespace,
  loopbackNamespace,
  straceTool,
  systemTool,
} from './helpers/tools.ts';

const ci = Boolean(process.env.CI);
const dir = scratchDir('fleetbench-ao-real-');
const gh = systemTool('gh', ['--version'], 'gh');
const tmux = systemTool('tmux', ['-V'], 'tmux');

const ready =
  !gh.skip && !tmux.skip && agentClisPresent(['claude'], { what: 'Claude Code' }) && loopbackNamespace();

interface Line {
  kind: string;
  name?: string;
  t?: number;
  session?: string;
  status?: number;
  method?: string;
  route?: string;
  op?: string;
  source?: string;
  outcome?: string;
  labels?: Record<string, unknown>;
  data?: Record<string, unknown>;
  reason?: string;
}

describe('the ao-agent script', () => {
  it('is a valid scripts-file entry: one spawn turn, then reactions, each command within the bounds', () => {
    const parsed = scriptsFileSchema.parse({ scripts: { [AO_AGENT_SCRIPT]: aoAgentScript() } });
    const turns = parsed.scripts[AO_AGENT_SCRIPT]!.turns;
    expect(turns[0]!.commands).toEqual(['gh issue view "$AO_ISSUE_ID"']);
    // Every reaction looks at the PR and its review comments, and pushes only with comments to answer.
    for (const turn of turns.slice(1)) {
      expect(turn.commands.some((c) => c.startsWith('gh pr view'))).toBe(true);
      expect(turn.commands.at(-1)).toMatch(/^if \[ -s \.fleetbench-unanswered \]; then git commit/);
    }
  });
});

describe.skipIf(gh.skip)('--target ao with agents: real: refusals', () => {
  it('refuses more sessions than the machine holds agents, before anything starts', async () => {
    gh.require();
    const result = await cli([
      'run',
      'S2-T1-5',
      '--target',
      'ao',
      '--set',
      'agents=real',
      '--set',
      'sessions.count=41',
      '--no-progress',
      '--out',
      join(dir, 'too-many'),
    ]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('the scenario starts 41 sessions, at most 40');
    // Nothing started: the trace is its header and a failed footer.
    const trace = readFileSync(join(dir, 'too-many', 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(trace.map((l) => JSON.parse(l).kind)).toEqual(['run', 'end']);
  }, 60_000);

  it('refuses in seconds without tmux, naming its Debian package', async () => {
    gh.require();
    // A PATH with gh (and git, ps) but no tmux.
    const bin = join(dir, 'no-tmux-bin');
    mkdirSync(bin, { recursive: true });
    for (const tool of ['gh', 'git', 'ps']) {
      const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      if (found) symlinkSync(found, join(bin, tool));
    }
    const started = performance.now();
    const result = spawnSync(
      process.execPath,
      [
        BIN,
        'run',
        'S2-T1-1',
        '--target',
        'ao',
        '--set',
        'agents=real',
        '--no-progress',
        '--out',
        join(dir, 'refused'),
      ],
      { encoding: 'utf8', env: { ...process.env, PATH: bin, NO_COLOR: '1' }, timeout: 60_000 },
    );
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain('needs tmux');
    expect(result.stderr).toContain('apt-get install tmux');
    expect(performance.now() - started).toBeLessThan(30_000);
  }, 60_000);
});

describe.skipIf(!ready && !ci)('--target ao with agents: real: the real Claude Code under AO', () => {
  it('AO starts Claude Code in tmux; its gh calls are the session’s (source agent); it pushes, replies, and outlives a hard restart of AO', async () => {
    gh.require();
    tmux.require();
    expect(ready, 'gh, tmux, Claude Code (targets install agents) and unshare -rn').toBe(true);
    const scenario = join(dir, 'ao-real.yaml');
    writeFileSync(
      scenario,
      [
        'name: ao-real-agents',
        'duration: 15m',
        'target: ao',
        'agents: real',
        'provider: { latency: none }',
        'polling: { interval: 4s }',
        'sessions: { count: 1, pr-after: 0, ci-after: 0 }',
        'faults:',
        // After the agent exists (fixed.spawned): AO reacts to each burst by typing a message
        // into the agent's terminal; the restart comes between the two.
        '  - { type: review-burst, after: fixed.spawned, delay: 15s, comments: { min: 2, max: 2 } }',
        '  - { type: restart, kind: hard, after: fixed.spawned, delay: 40s }',
        '  - { type: review-burst, after: fixed.spawned, delay: 55s, comments: { min: 1, max: 1 } }',
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
    const named = (lines: Line[], name: string) => lines.filter((l) => l.name === name);
    const agentCalls = (lines: Line[]) => lines.filter((l) => l.kind === 'api' && l.source === 'agent');
    const replies = (lines: Line[]) =>
      agentCalls(lines).filter(
        (l) => l.method === 'POST' && l.route?.endsWith('/comments') && l.status === 201,
      );
    const commentsPosted = (lines: Line[]) =>
      named(lines, 'world.review.posted').reduce((sum, e) => sum + Number(e.data?.comments ?? 0), 0);
    const missing = (lines: Line[]) => {
      const readyAt = named(lines, 'controlplane.ready')[0]?.t;
      return Object.entries({
        'the agent launched by AO': named(lines, 'ao.agent.launched').length > 0,
        'the agent reading its issue': agentCalls(lines).some((l) => l.op === 'IssueByNumber'),
        'a push by the agent': named(lines, 'agent.pushed').some((e) => e.labels?.pr === true),
        'the restart': readyAt !== undefined,
        'both bursts posted': named(lines, 'world.review.posted').length === 2,
        'a reply to every comment':
          commentsPosted(lines) > 0 && replies(lines).length === commentsPosted(lines),
        // A message of the restarted AO, and a turn of the agent begun after it.
        'the agent answering the restarted AO': named(lines, 'ao.agent.message').some(
          (m) =>
            readyAt !== undefined &&
            (m.t ?? 0) > readyAt &&
            named(lines, 'provider.request').some((r) => (r.t ?? 0) > (m.t ?? 0) && r.data?.step === 0),
        ),
      })
        .filter(([, seen]) => !seen)
        .map(([what]) => what);
    };
    // Inside a network namespace with only loopback: the run, AO, tmux, Claude Code and gh, each
    // connect() observed (strace).
    if (ci) straceTool().require();
    const connects = straceTool().present ? join(dir, 'connects.log') : undefined;
    const run = spawn(
      ...inLoopbackNamespace(
        process.execPath,
        [BIN, 'run', scenario, '--out', out, '--no-progress', '--no-report'],
        connects,
      ),
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    run.stderr.on('data', (d) => {
      stderr += d;
    });
    run.stdout.resume();
    const exited = new Promise<number | null>((resolve) => run.on('close', (code) => resolve(code)));
    try {
      // As long as the run makes progress (a record at least every 2 minutes), up to 12
      // minutes: a loaded machine makes the wait longer, a stuck agent or AO fails it.
      const started = performance.now();
      let records = 0;
      let lastProgress = started;
      for (;;) {
        const lines = read();
        const left = missing(lines);
        if (left.length === 0) break;
        const now = performance.now();
        if (lines.length > records) {
          records = lines.length;
          lastProgress = now;
        }
        if (now - lastProgress > 120_000 || now - started > 720_000 || run.exitCode !== null)
          throw new Error(
            `after ${Math.round((now - started) / 1000)} s, still missing: ${left.join(', ')}; stderr: ${stderr}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      run.kill('SIGINT');
    }
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain(`Claude Code ${AGENT_PACKAGES.claude.version}`);

    const lines = read();
    expect(lines.at(-1)).toMatchObject({ kind: 'end', reason: 'interrupted' });
    // The agent process AO started: the pinned binary and version.
    expect(named(lines, 'ao.agent.launched')).toEqual([
      expect.objectContaining({
        session: 's-0001',
        labels: { cli: 'claude', version: AGENT_PACKAGES.claude.version },
        data: expect.objectContaining({ runtime: 'tmux', binary: expect.stringContaining('claude') }),
      }),
    ]);
    // Every model request came from that Claude Code, for that session, and was answered.
    const requests = named(lines, 'provider.request');
    expect(requests.length).toBeGreaterThanOrEqual(6);
    for (const r of requests) {
      expect(r).toMatchObject({ session: 's-0001', outcome: 'ok', labels: { cli: 'claude', status: '200' } });
      expect(r.data?.cliVersion).toBe(AGENT_PACKAGES.claude.version);
    }
    // One Claude Code process throughout: its own session id never changed, across AO's restart.
    expect(new Set(requests.map((r) => r.data?.cliSession)).size).toBe(1);
    // Turn 1 answered AO's spawn prompt (read the issue); later turns AO's reactions.
    expect(requests.find((r) => r.data?.turn === 1)?.data?.command).toBe('gh issue view "$AO_ISSUE_ID"');
    const messages = named(lines, 'ao.agent.message');
    expect(messages[0]?.labels?.reaction).toBe('prompt');
    expect(messages.some((e) => e.labels?.reaction === 'review-comments')).toBe(true);
    // The agent's gh calls: its session's, source agent, none refused or unknown to the emulator.
    const calls = agentCalls(lines);
    expect(calls.every((l) => l.session === 's-0001')).toBe(true);
    expect(calls.filter((l) => (l.status ?? 0) >= 400)).toEqual([]);
    expect([...new Set(calls.map((l) => l.op))]).toEqual(
      expect.arrayContaining(['IssueByNumber', 'PullRequestForBranch', 'PullRequestStatusChecks']),
    );
    // AO's own calls stay AO's: no call of the lifecycle or spawn path is counted as the agent's.
    expect(lines.filter((l) => l.kind === 'api' && l.source !== 'agent').length).toBeGreaterThan(0);
    // AO never found the agent dead (it would mark the session killed).
    expect(named(lines, 'ao.status').filter((e) => e.labels?.to === 'killed')).toEqual([]);
    // Each push by the agent moved the PR's head through the world (CI ran again on it).
    const pushes = named(lines, 'agent.pushed');
    expect(pushes.length).toBeGreaterThanOrEqual(1);
    expect(named(lines, 'world.pushed').length).toBe(pushes.length);
    // Nothing but loopback dialled by any process of the run: AO, tmux, Claude Code, gh, git.
    if (connects !== undefined) {
      const seen = dialled(connects);
      expect(seen.inet).toBeGreaterThan(requests.length);
      expect(seen.beyondLoopback).toEqual([]);
    }
  }, 900_000);
});
