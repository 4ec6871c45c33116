/**
 * A control plane measured from its traffic (docs/analysis.md#edges-any-control-plane-from-its-traffic):
 * hand-written traces, record for record as a world and the command target write them
 * (test/helpers/edges-trace.ts), of what no real run can be made to do on demand: a kill -9
 * whose agent outlives it, a task redone, a graceful drain, a control plane that dies. Each
 * figure is asserted through the real analyzer, the real judge with a budget file and the CLI.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import { type Analysis, analysisSchema } from '../src/analyze/schema.ts';
import { resolveBudgets } from '../src/judge/budgets.ts';
import { judge, parseBudgetText } from '../src/judge/index.ts';
import { reporters, runSummarySections } from '../src/report/index.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { cli } from './helpers/cli.ts';
import {
  attributed,
  blocked,
  boot,
  call,
  cpExited,
  exited,
  ready,
  request,
  restarted,
  spawned,
  state,
  workCreated,
  worldStarted,
  worldStopped,
  writeTrace,
} from './helpers/edges-trace.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-edges-');

function analyse(records: readonly BodyRecord[]): Analysis {
  const analyzer = createAnalyzer();
  for (const r of records) analyzer.add(r);
  const analysis = analyzer.finish();
  expect(analysisSchema.parse(analysis)).toEqual(analysis);
  return analysis;
}

const a1 = { id: 'a1', agent: 'codex' };
const a2 = { id: 'a2', agent: 'claude' };
const a3 = { id: 'a3', agent: 'codex' };
const a4 = { id: 'a4', agent: 'codex' };
const ISSUE = '/repos/{owner}/{repo}/issues/{issue_number}';
const COMMENTS = `${ISSUE}/comments`;
const PULL = '/repos/{owner}/{repo}/pulls/{pull_number}';

/**
 * A kill -9 mid-task. s1's agent a1 (codex) outlives the kill and sends one more request; the
 * control plane comes back, starts a3 for s1 and comments on the issue again. a2 is the control
 * plane's own agent and dies with it. s2 was still waiting for its agent at the kill; s3 never
 * got one. Times in ms.
 */
const KILL_TRACE: BodyRecord[] = [
  worldStarted(0),
  call(100, 'GET', '/repos/{owner}/{repo}/issues'),
  call(200, 'GET', '/repos/{owner}/{repo}/issues'),
  workCreated(1000, 's1', 1),
  workCreated(1000, 's2', 2),
  workCreated(1500, 's3', 3),
  spawned(1200, 'a1', 'codex'),
  attributed(1300, 'a1', 's1', 'cwd'),
  spawned(1600, 'a2', 'claude'),
  request(1900, a2, 500, 50),
  request(2000, a1, 1000, 100, 300),
  call(2100, 'POST', COMMENTS, 's1'),
  call(2200, 'GET', ISSUE, 's1'),
  request(2500, null, 200, 20),
  blocked(2600, 'dns', 'example.com', ['curl', 'https://example.com']),
  blocked(2700, 'tcp', 'github.com', ['ssh', 'git@github.com'], 22),
  restarted(3000, 'hard'),
  exited(3050, 'a2', 'claude', 1600),
  boot(3100, 900, 'hard'),
  request(3500, a1, 1100, 110),
  ready(4000, 'hard'),
  spawned(4500, 'a3', 'codex'),
  attributed(4600, 'a3', 's1', 'branch'),
  request(5000, a3, 1000, 100, 200),
  call(5200, 'POST', COMMENTS, 's1'),
  call(5300, 'PATCH', PULL, 's1'),
  exited(6000, 'a1', 'codex', 1200),
  state(6000, 's1', 'working', 'pr_open'),
  spawned(7000, 'a4', 'codex'),
  attributed(7050, 'a4', 's2', 'cwd'),
  request(7400, a4, 400, 40),
  state(8000, 's2', 'working', 'pr_open'),
  worldStopped(9000, 3, 4),
];

describe('edges: a kill -9 mid-task, measured from the traffic', () => {
  const a = analyse(KILL_TRACE);
  const e = a.edges!;

  it('attributes GitHub calls to sessions or to the control plane, and model requests through their agent', () => {
    expect(e.attribution.github).toEqual({
      calls: 6,
      attributed: 4,
      overhead: 2,
      attributedPct: 66.667,
      points: 6,
      attributedPoints: 4,
      overheadPoints: 2,
      writes: 3,
      overheadWrites: 0,
      handover: { calls: 0, points: 0, writes: 0 },
    });
    expect(e.attribution.model).toEqual({
      requests: 6,
      sessions: { requests: 4, tokensIn: 3500, tokensOut: 350 },
      controlPlane: { requests: 1, tokensIn: 500, tokensOut: 50 },
      outside: { requests: 1, tokensIn: 200, tokensOut: 20 },
      unidentified: { requests: 0, tokensIn: 0, tokensOut: 0 },
      attributedPct: 66.667,
    });
    // The api totals agree with the attribution: nothing is lost between the two.
    expect(e.attribution.github.calls).toBe(a.api.totals.calls);
    expect(e.attribution.github.writes).toBe(a.api.totals.writes);
  });

  it('gives model requests and tokens per session beside its GitHub calls', () => {
    const rows = Object.fromEntries(e.sessions.list.map((s) => [s.session, s]));
    expect(Object.keys(rows)).toEqual(['s1', 's2', 's3']);
    expect(rows.s1).toMatchObject({
      createdAtMs: 1000,
      doneAtMs: 6000,
      firstOutputAtMs: 2300,
      github: { calls: 4, points: 4, pointsByResource: { core: 4 }, writes: 3 },
      model: { requests: 3, tokensIn: 3100, tokensOut: 310 },
      spawns: 2,
    });
    expect(rows.s2).toMatchObject({
      doneAtMs: 8000,
      github: { calls: 0 },
      model: { requests: 1 },
      spawns: 1,
    });
    expect(rows.s3).toMatchObject({ doneAtMs: null, firstOutputAtMs: null, spawns: 0 });
    expect(e.sessions).toMatchObject({ count: 3, created: 3, completed: 2 });
    expect(e.spawns).toMatchObject({ count: 4, ofSessions: 3, ofControlPlane: 1 });
    expect(e.spawns.list.map((s) => [s.spawn, s.session, s.how, s.bootMs])).toEqual([
      ['a1', 's1', 'cwd', 800],
      ['a2', null, null, 300],
      ['a3', 's1', 'branch', 500],
      ['a4', 's2', 'cwd', 400],
    ]);
  });

  it('costs a completed task its own calls, points and tokens plus its share of the overhead', () => {
    expect(e.costPerTask).toEqual({
      completed: 2,
      // s1 made 4 calls, s2 none; the control plane's own 2 shared over the 2 tasks.
      calls: { mean: 2, p50: 0, overheadPerTask: 1, allIn: 3 },
      points: { mean: 2, p50: 0, overheadPerTask: 1, allIn: 3 },
      // s1: a1 2,310 + a3 1,100; s2: a4 440; overhead: a2 550 + the SDK outside the launchers 220.
      tokens: { mean: 1925, p50: 440, overheadPerTask: 385, allIn: 2310 },
    });
  });

  it('counts per hour over the active window only: first work created → last session done', () => {
    // Seconds 1..8: the boot calls of second 0 are left out; every request is in.
    expect(e.activeWindow).toEqual({
      startMs: 1000,
      endMs: 8000,
      seconds: 8,
      calls: 4,
      points: 4,
      tokens: 4620,
      callsPerHour: 1800,
      pointsPerHour: 1800,
      tokensPerHour: 2_079_000,
    });
  });

  it('counts the agent that outlived its control plane, how long it ran and what it spent after', () => {
    expect(e.orphans).toEqual({
      count: 1,
      ranAfterMs: 3000,
      tokensAfter: 1210,
      list: [
        {
          spawn: 'a1',
          agent: 'codex',
          session: 's1',
          cause: 'hard',
          killAtMs: 3000,
          goneAtMs: 3000,
          startedAtMs: 1200,
          exitedAtMs: 6000,
          open: false,
          ranAfterMs: 3000,
          requestsAfter: 1,
          tokensAfter: 1210,
        },
      ],
    });
  });

  it('counts the work done again: the cut agent’s tokens and the writes made again after ready', () => {
    expect(e.duplicated).toEqual({
      tokens: 2310,
      writes: 1,
      restarts: [
        {
          kind: 'hard',
          killAtMs: 3000,
          readyAtMs: 4000,
          sessions: [
            {
              session: 's1',
              cutSpawns: ['a1'],
              newSpawn: 'a3',
              tokensBeforeKill: 1100,
              tokensAfterKill: 1210,
              tokens: 2310,
              writes: 1,
              writesAgain: [{ write: `POST ${COMMENTS}`, count: 1 }],
            },
          ],
        },
      ],
    });
  });

  it('lists blocked attempts by host and how, with the processes that tried', () => {
    expect(e.blocked).toEqual({
      attempts: 3,
      recorded: 2,
      byHost: [
        {
          via: 'dns',
          host: 'example.com',
          ports: [],
          attempts: 1,
          processes: ['curl https://example.com'],
          firstAtMs: 2600,
          lastAtMs: 2600,
        },
        {
          via: 'tcp',
          host: 'github.com',
          ports: [22],
          attempts: 1,
          processes: ['ssh git@github.com'],
          firstAtMs: 2700,
          lastAtMs: 2700,
        },
      ],
    });
  });

  it('feeds the speed metrics the budgets judge, each sample from where it starts to where it ends', () => {
    const speed = a.speed!;
    const values = (name: keyof typeof speed.metrics) =>
      speed.metrics[name]!.groups.map((g) => [g.labels, g.values]);
    // s1: work created 1000 → a1's first token 2300. s2's first output came after the kill.
    expect(values('time_to_first_activity')).toEqual([[{ adapter: 'codex', start: 'unknown' }, [1300]]]);
    expect(e.firstActivity).toEqual({ created: 3, withActivity: 1, interrupted: 1, noActivity: 1 });
    expect(values('agent_boot')).toEqual([
      [{ adapter: 'claude', start: 'unknown' }, [300]],
      [{ adapter: 'codex', start: 'unknown' }, [800, 500, 400]],
    ]);
    // ready 4000 → a3 spawned 4500 → its first request 5000.
    expect(values('restart_recovery')).toEqual([[{ adapter: 'codex', kind: 'hard' }, [1000]]]);
    expect(values('restart_recovery_control_plane')).toEqual([[{ adapter: 'codex', kind: 'hard' }, [500]]]);
    expect(values('restart_provider_load')).toEqual([[{ adapter: 'codex', kind: 'hard' }, [500]]]);
    expect(speed.recoveries).toEqual([
      expect.objectContaining({
        session: 's1',
        run: 'a3',
        readyAtMs: 4000,
        loadStartMs: 4500,
        eventAtMs: 5000,
        eventType: 'provider.request',
        fullMs: 1000,
        controlPlaneMs: 500,
        providerLoadMs: 500,
        killAtMs: 3000,
      }),
    ]);
    expect(speed.recoveryCounts).toEqual([
      { adapter: 'codex', kind: 'hard', cut: 1, recovered: 1, finished: 0, unrecovered: 0, open: 0 },
    ]);
    expect(speed.restarts).toEqual([
      {
        kind: 'hard',
        killAtMs: 3000,
        readyAtMs: 4000,
        outageMs: 1000,
        runs: { cut: 1, recovered: 1, finished: 0, unrecovered: 0, open: 0 },
      },
    ]);
  });

  it('is judged by the built-in native-speed budgets (start unknown: the looser of cold and warm)', () => {
    const verdict = judge(resolveBudgets('native-speed'), [{ name: 'trace', analysis: a }]);
    expect(verdict.errors).toEqual([]);
    const row = (metric: string, adapter: string) =>
      verdict.rows.find((r) => r.metric === metric && r.scope.adapter === adapter && r.status !== 'skipped');
    expect(row('agent_boot', 'codex')).toMatchObject({ status: 'pass', n: 3 });
    expect(row('agent_boot', 'claude')).toMatchObject({ status: 'pass', n: 1 });
    expect(row('restart_recovery_control_plane', 'codex')).toMatchObject({ status: 'pass', n: 1 });
    expect(row('time_to_first_activity', 'codex')).toMatchObject({ status: 'pass', n: 1 });
    expect(verdict.verdict).toBe('pass');
  });

  it('a budget file can name the new metrics, and check judges them', () => {
    const set = parseBudgetText(
      `name: edges
budgets:
  - { metric: orphaned_agents, value: 0 }
  - { metric: duplicated_tokens, thresholds: ["value<=2310"] }
  - { metric: duplicated_writes, thresholds: ["count<1"] }
  - { metric: cost_per_task_calls, max: 3 }
  - { metric: cost_per_task_tokens, thresholds: ["value<2000"] }
  - { metric: blocked_attempts, thresholds: ["count==3"] }
  - { metric: github_calls_per_active_hour, thresholds: ["rate<=1800"] }
  - { metric: tokens_per_active_hour, thresholds: ["rate<1000000"] }
  - { metric: github_calls_attributed_pct, thresholds: ["value>=90"] }
`,
      'edges.yaml',
    );
    const verdict = judge(set, [{ name: 'trace', analysis: a }]);
    expect(verdict.errors).toEqual([]);
    expect(verdict.rows.map((r) => [r.metric, r.value, r.status])).toEqual([
      ['orphaned_agents', 1, 'fail'],
      ['duplicated_tokens', 2310, 'pass'],
      ['duplicated_writes', 1, 'fail'],
      ['cost_per_task_calls', 3, 'pass'],
      ['cost_per_task_tokens', 2310, 'fail'],
      ['blocked_attempts', 3, 'pass'],
      ['github_calls_per_active_hour', 1800, 'pass'],
      ['tokens_per_active_hour', 2_079_000, 'fail'],
      ['github_calls_attributed_pct', 66.667, 'fail'],
    ]);
    expect(verdict.verdict).toBe('fail');
  });

  it('the end-of-run summary says the share attributed, the cost per task and what went wrong', () => {
    const text = reporters.terminal().render({
      title: 'run',
      document: a,
      sections: () =>
        runSummarySections(a, {
          outcome: {
            reason: 'completed',
            sessionsStarted: 3,
            sessionsDropped: 0,
            tracePath: 't',
            wallMs: 9000,
          },
          scorecard: false,
        }),
    });
    expect(text).toContain('▸ Edges (the control plane from its traffic)');
    expect(text).toMatch(/GitHub calls\.*: 6 · 4 attributed to sessions \(66\.7%\)/);
    expect(text).toMatch(
      /model requests\.*: 6 · sessions 4 \(66\.7%\) · control plane's agents 1 · outside the launchers 1/,
    );
    expect(text).toMatch(/active window\.*: 1s → 8s \(8 s counted\): 1,800 calls\/h/);
    expect(text).toMatch(/blocked attempts\.*: 3 \(dns example\.com, tcp github\.com\)/);
  });

  it('fleetbench analyze shows it; check exits 99 on a breach', async () => {
    const trace = writeTrace(`${dir}/kill.jsonl`, KILL_TRACE);
    const shown = await cli(['analyze', trace]);
    expect(shown.code, shown.stderr).toBe(0);
    const text = shown.stdout;
    expect(text).toContain('Edges: the control plane from its traffic (world: sandbox)');
    expect(text).toMatch(
      /GitHub calls\.*: 6 · 4 attributed to sessions \(66\.7%\) · 2 the control plane's own/,
    );
    expect(text).toMatch(
      /cost per task\.*: over 2 completed sessions: 3 calls \(own mean 2 · p50 0 · overhead 1 per task\)/,
    );
    expect(text).toMatch(
      /orphaned agents\.*: 1 · ran up to 3s after their control plane was gone · 1,210 tokens after it/,
    );
    expect(text).toMatch(/duplicated work\.*: 2,310 model tokens · 1 GitHub write made again/);
    expect(text).toMatch(/tcp\s+github\.com\s+22\s+1\s+ssh git@github\.com/);
    expect(text).toMatch(/hard at 3s\s+s1\s+a1\s+a3\s+1,100\s+1,210\s+2,310\s+1 \(POST \/repos/);
    const markdown = await cli(['analyze', trace, '--markdown']);
    expect(markdown.stdout).toContain('## Blocked attempts (refused by the world)');
    expect(markdown.stdout).toMatch(/\| dns \| example\.com \| – \| 1 \| curl https:\/\/example\.com \|/);
    const json = JSON.parse((await cli(['analyze', trace, '--json'])).stdout) as Analysis;
    expect(json.edges).toEqual(e);
    const budgets = `${dir}/edges-budgets.yaml`;
    writeFileSync(budgets, 'name: edges\nbudgets:\n  - { metric: orphaned_agents, value: 0 }\n');
    const checked = await cli(['check', trace, '--budgets', budgets]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(99);
    expect(checked.stdout).toMatch(/orphaned_agents/);
  });
});

describe('edges: restarts that are not a plain kill', () => {
  it('a graceful restart: the agents that finished during the drain are not orphans, those alive past it are', () => {
    const a = analyse([
      worldStarted(0),
      workCreated(100, 's1', 1),
      workCreated(100, 's2', 2),
      spawned(200, 'a1', 'claude'),
      attributed(250, 'a1', 's1'),
      spawned(300, 'a2', 'claude'),
      attributed(350, 'a2', 's2'),
      request(400, { id: 'a1', agent: 'claude' }, 100, 10),
      request(450, { id: 'a2', agent: 'claude' }, 100, 10),
      restarted(1000, 'graceful'),
      // The drain: a1 finishes its turn and exits before the old process is gone.
      request(1100, { id: 'a1', agent: 'claude' }, 100, 10),
      exited(1500, 'a1', 'claude', 200),
      // The old process exited; the new one is spawned at 2000 (the boot's start), ready at 2600.
      boot(2000, 600, 'graceful'),
      request(2200, { id: 'a2', agent: 'claude' }, 100, 10),
      ready(2600, 'graceful'),
      exited(3000, 'a2', 'claude', 300),
      state(3000, 's2', 'working', 'pr_open'),
      spawned(3200, 'a3', 'claude'),
      attributed(3250, 'a3', 's1'),
      request(3900, { id: 'a3', agent: 'claude' }, 100, 10),
    ]);
    const e = a.edges!;
    expect(
      e.orphans.list.map((o) => [o.spawn, o.cause, o.killAtMs, o.goneAtMs, o.ranAfterMs, o.tokensAfter]),
    ).toEqual([['a2', 'graceful', 1000, 2000, 1000, 110]]);
    // s1 recovered by a3 (ready 2600 → spawn 3200 → request 3900); s2's orphan finished it: nothing to recover.
    expect(a.speed!.recoveries.map((r) => [r.session, r.fullMs, r.controlPlaneMs, r.providerLoadMs])).toEqual(
      [['s1', 1300, 600, 700]],
    );
    expect(a.speed!.recoveryCounts).toEqual([
      { adapter: 'claude', kind: 'graceful', cut: 2, recovered: 1, finished: 1, unrecovered: 0, open: 0 },
    ]);
    // s1's cut agent spent 220 tokens (110 before the kill, 110 during the drain), redone by a3;
    // s2 got no new agent: nothing spent again.
    expect(e.duplicated.restarts[0]!.sessions.map((s) => [s.session, s.newSpawn, s.tokens])).toEqual([
      ['s1', 'a3', 220],
      ['s2', null, 0],
    ]);
    expect(e.duplicated.tokens).toBe(220);
  });

  it('a new agent started before ready was seen (its log line read late, ready: {delay}): recovered, its cut work spent again', () => {
    // Found with a Node control plane: ready by its log line, its new agent spawned 126 ms before
    // fleetbench read that line; the session was called finished by its orphan and nothing spent again.
    const c1 = { id: 'a1', agent: 'claude' };
    const c2 = { id: 'a2', agent: 'claude' };
    const a = analyse([
      worldStarted(0),
      workCreated(100, 's1', 1),
      spawned(200, 'a1', 'claude'),
      attributed(250, 'a1', 's1', 'argv'),
      request(400, c1, 100, 10),
      restarted(1000, 'hard'),
      boot(1010, 600, 'hard'),
      // The new process at work before fleetbench saw it ready; the orphan a1 runs on.
      spawned(1300, 'a2', 'claude'),
      attributed(1310, 'a2', 's1', 'argv'),
      request(1500, c1, 100, 10),
      ready(1610, 'hard'),
      request(1800, c2, 100, 10),
      state(2500, 's1', 'working', 'pr_open'),
    ]);
    // Measured from ready, as every recovery: its agent was already there (control plane's share 0).
    expect(
      a.speed!.recoveries.map((r) => [r.session, r.run, r.fullMs, r.controlPlaneMs, r.providerLoadMs]),
    ).toEqual([['s1', 'a2', 190, 0, 190]]);
    expect(a.speed!.recoveryCounts).toEqual([
      { adapter: 'claude', kind: 'hard', cut: 1, recovered: 1, finished: 0, unrecovered: 0, open: 0 },
    ]);
    expect(a.edges!.duplicated.restarts[0]!.sessions.map((s) => [s.session, s.newSpawn, s.tokens])).toEqual([
      ['s1', 'a2', 220],
    ]);
  });

  it('a session its cut agent had finished, done after the outage: the summary does not say it finished during the outage', async () => {
    // Found with a bash control plane under done: merged: its pull request was open before the
    // kill, merged by the world's CI 4 s after the outage, and the summary said "finished during the outage".
    const trace = writeTrace(`${dir}/finished-after.jsonl`, [
      worldStarted(0),
      workCreated(100, 's1', 1),
      spawned(200, 'a1', 'codex'),
      attributed(250, 'a1', 's1', 'argv'),
      request(400, a1, 100, 10, 50),
      exited(900, 'a1', 'codex', 200),
      restarted(1000, 'hard'),
      boot(1010, 300, 'hard'),
      ready(1310, 'hard'),
      state(5000, 's1', 'working', 'pr_open'),
    ]);
    const shown = await cli(['analyze', trace]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/codex hard: 1 cut · 0 recovered · 1 finished without a new agent/);
    expect(shown.stdout).not.toContain('during the outage');
  });

  it('a session never picked up again fails its restart row; a second kill during a recovery is one sample', () => {
    const records = [
      worldStarted(0),
      workCreated(0, 's1', 1),
      workCreated(0, 's2', 2),
      spawned(100, 'a1', 'codex'),
      attributed(100, 'a1', 's1'),
      spawned(100, 'a2', 'codex'),
      attributed(100, 'a2', 's2'),
      request(200, { id: 'a1', agent: 'codex' }, 10, 1),
      request(200, { id: 'a2', agent: 'codex' }, 10, 1),
      restarted(1000, 'hard'),
      exited(1050, 'a1', 'codex', 100),
      exited(1050, 'a2', 'codex', 100),
      ready(2000, 'hard'),
      spawned(2500, 'a3', 'codex'),
      attributed(2500, 'a3', 's1'),
      // Killed again before a3's first request: s1's recovery goes on from the first ready.
      restarted(3000, 'hard'),
      exited(3050, 'a3', 'codex', 2500),
      ready(4000, 'hard'),
      spawned(4200, 'a4', 'codex'),
      attributed(4200, 'a4', 's1'),
      request(4700, { id: 'a4', agent: 'codex' }, 10, 1),
    ];
    const a = analyse(records);
    const speed = a.speed!;
    // ready 2000 → a4's request 4700, less the second outage (3000 → 4000): 1700; its spawn at
    // 4200: 1200 of control plane.
    expect(speed.recoveries.map((r) => [r.session, r.fullMs, r.controlPlaneMs, r.absorbedRestarts])).toEqual([
      ['s1', 1700, 1200, 1],
    ]);
    expect(speed.unrecovered).toEqual([
      expect.objectContaining({
        session: 's2',
        kind: 'hard',
        status: 'running',
        open: true,
        atLeastMs: 2000,
      }),
    ]);
    expect(a.edges!.orphans.count).toBe(0);
    const verdict = judge(resolveBudgets('native-speed'), [{ name: 'trace', analysis: a }]);
    const cp = verdict.rows.find(
      (r) => r.metric === 'restart_recovery_control_plane' && r.scope.adapter === 'codex',
    );
    // 1.2 s is within 4 s; s2 has waited 2 s (ready → the end, the second outage removed), not
    // yet past the 4 s limit: pending, not a failure.
    expect(cp).toMatchObject({ status: 'pass', unrecovered: { failing: 0, pending: 1 } });

    // s2 given up (closed) without ever being picked up again: it fails the row.
    const closed = analyse([...records, state(4800, 's2', 'working', 'closed')]);
    expect(closed.speed!.unrecovered).toEqual([
      expect.objectContaining({ session: 's2', status: 'closed', open: false, atLeastMs: null }),
    ]);
    const failed = judge(resolveBudgets('native-speed'), [{ name: 'trace', analysis: closed }]);
    expect(
      failed.rows.find((r) => r.metric === 'restart_recovery_control_plane' && r.scope.adapter === 'codex'),
    ).toMatchObject({ status: 'fail', unrecovered: { failing: 1, pending: 0 } });
    expect(failed.verdict).toBe('fail');
  });

  it('a control plane that dies outside a restart leaves its agents orphaned, and says so', async () => {
    const records = [
      worldStarted(0),
      workCreated(0, 's1', 1),
      spawned(100, 'a1', 'opencode'),
      attributed(150, 'a1', 's1', 'argv'),
      request(300, { id: 'a1', agent: 'opencode' }, 50, 5),
      cpExited(1000, null, 'SIGSEGV'),
      request(1400, { id: 'a1', agent: 'opencode' }, 70, 7),
      worldStopped(2000, 0, 1),
    ];
    const a = analyse(records);
    const e = a.edges!;
    expect(e.controlPlane).toEqual({ restarts: 0, exited: [{ atMs: 1000, code: null, signal: 'SIGSEGV' }] });
    // Never exited: it ran at least to the end of the trace.
    expect(e.orphans.list).toEqual([
      expect.objectContaining({
        spawn: 'a1',
        cause: 'exited',
        open: true,
        ranAfterMs: 1000,
        tokensAfter: 77,
      }),
    ]);
    const shown = await cli(['analyze', writeTrace(`${dir}/died.jsonl`, records)]);
    expect(shown.stdout).toMatch(/control plane\.*: 0 restarts · DIED outside a restart at 1s \(SIGSEGV\)/);
    expect(shown.stdout).toMatch(/a1\s+opencode\s+s1\s+exited\s+1s\s+≥ 1s\s+1\s+77/);
  });
});

describe('edges: work that never reaches its done state', () => {
  it('done: closed for sessions whose pull requests were merged: the warning says where they got to', () => {
    // Found with a bash control plane (done: closed, pull requests that close their issues,
    // merged by the world's CI): "no piece of work was done" and nothing said why.
    const a = analyse([
      worldStarted(0),
      workCreated(100, 's1', 1, 'closed'),
      workCreated(200, 's2', 2, 'closed'),
      state(1000, 's1', 'spawning', 'pr_open'),
      state(2000, 's1', 'pr_open', 'merged'),
      state(2500, 's2', 'spawning', 'pr_open'),
      state(3000, 's2', 'pr_open', 'merged'),
    ]);
    expect(a.edges!.sessions).toMatchObject({ created: 2, completed: 0, reached: { merged: 2 } });
    expect(a.warnings).toContainEqual(
      expect.stringMatching(
        /^no piece of work was done: 2 given, none reached its done state by the run's end \(where they got to: 2 merged\), .*done: closed for work whose pull requests are merged/,
      ),
    );
  });
});

describe('edges: bounds (docs/limits.md)', () => {
  it('lists at most 5,000 sessions and counts the rest; absurd token counts are read as whole, non-negative numbers', () => {
    const records: BodyRecord[] = [worldStarted(0)];
    for (let i = 0; i < 6000; i++) records.push(workCreated(i, `s${i}`, i + 1));
    records.push(spawned(10, 'a1', 'codex'), attributed(10, 'a1', 's0'));
    records.push(request(20, a1, 1e13, -5), request(30, a1, 1.5, 2.4), state(40, 's0', 'working', 'pr_open'));
    const e = analyse(records).edges!;
    expect(e.sessions).toMatchObject({ count: 6000, created: 6000, completed: 1, leftOut: 1000 });
    expect(e.sessions.list).toHaveLength(5000);
    expect(e.attribution.model.sessions).toEqual({ requests: 2, tokensIn: 1e13 + 2, tokensOut: 2 });
    expect(e.costPerTask.tokens).toEqual({
      mean: 1e13 + 4,
      p50: 1e13 + 4,
      overheadPerTask: 0,
      allIn: 1e13 + 4,
    });
  });
});

describe('edges: what is not a world', () => {
  it('a world whose command started no agent and created no work has edges and no speed to measure', () => {
    const a = analyse([
      worldStarted(0),
      call(10, 'GET', '/user'),
      blocked(20, 'connect', 'registry.npmjs.org', ['npm', 'install'], 443),
      worldStopped(30, 1, 0),
    ]);
    expect(a.speed).toBeUndefined();
    expect(a.edges!.attribution.github).toMatchObject({ calls: 1, overhead: 1, attributedPct: 0 });
    expect(a.edges!.blocked.byHost).toEqual([
      expect.objectContaining({
        via: 'connect',
        host: 'registry.npmjs.org',
        ports: [443],
        processes: ['npm install'],
      }),
    ]);
    expect(a.edges!.notes).toEqual([
      'no work.created in the trace: no active window, and sessions are only those its calls and agents name',
    ]);
  });

  it('a trace without world or command-target records has no edges section', () => {
    const a = analyse([
      call(0, 'GET', '/user', 's1'),
      request(10, null, 1, 1),
      restarted(100, 'hard'),
      ready(200, 'hard'),
    ]);
    expect(a.edges).toBeUndefined();
  });
});
