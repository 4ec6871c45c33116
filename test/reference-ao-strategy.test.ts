/**
 * The reference strategy `ao-0.2` against the counts read off agent-orchestrator 0.2.0's source
 * (scm-github's getPRState/getCISummary/getReviewDecision/getMergeability, the lifecycle
 * manager's review backlog) and gh's (`gh pr checks --json` finds the PR, then reads its checks),
 * for S2 (PRs open, CI green, no review; the fixture repos require a review):
 *   legacy gh: pr view state (1) + checks refused, pr view state again (1) → ci_failed;
 *              review threads (1 GraphQL) + inline comments (1 REST) = 3 GraphQL + 1 core = 4.
 *   current gh: pr view state (1) + pr checks: PullRequestByNumber + PullRequestStatusChecks (2,
 *              SUCCESS) + pr view reviewDecision (1); REVIEW_REQUIRED skips mergeability;
 *              review threads (1) + inline comments (1 REST) = 5 GraphQL + 1 core = 6.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectGhOnce } from '../src/targets/ao/gh.ts';
import { cli } from './helpers/cli.ts';
import { runRef } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const sets = (gh: string) => [
  'polling.strategy=ao-0.2',
  `polling.ao-gh=${gh}`,
  'duration=5m',
  'markers.steady-start=2m',
];
const dir = scratchDir('fleetbench-ao-strategy-');
const gh = systemTool('gh', ['--version'], 'gh');

interface Line {
  kind: string;
  name?: string;
  op?: string;
  session?: string;
  cycle?: number;
  repo?: string;
  route?: string;
  labels?: Record<string, unknown>;
  data?: Record<string, unknown>;
}

function traceOf(out: string): Line[] {
  return readFileSync(join(out, 'trace.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
}

describe('reference strategy ao-0.2 (agent-orchestrator 0.2.0)', () => {
  it('legacy gh: 4 calls per session per cycle, 3 GraphQL and 1 core, none conditional', async () => {
    const { analysis } = await runRef('S2-T1-5', sets('legacy'));
    const floor = analysis.api.pollingFloor.steady!.perSessionCycle;
    expect(floor.all!.mean).toBe(4);
    expect(floor.graphql!.mean).toBe(3);
    expect(floor.core!.mean).toBe(1);
    expect(analysis.api.totals.conditional).toBe(0);
  });

  it('current gh: 6 calls per session per cycle (state, pr checks as gh makes it, review decision; no mergeability)', async () => {
    const { analysis } = await runRef('S2-T1-5', sets('current'));
    const floor = analysis.api.pollingFloor.steady!.perSessionCycle;
    expect(floor.all!.mean).toBe(6);
    expect(floor.graphql!.mean).toBe(5);
    expect(floor.core!.mean).toBe(1);
  });

  it('current gh, CI pending: AO goes on to the review decision (only failing CI stops it)', async () => {
    // CI never completes: a model that stopped at pending CI would make 4 calls (state, checks, threads, comments).
    const { analysis } = await runRef('S2-T1-5', [...sets('current'), 'sessions.ci-after=1h']);
    const floor = analysis.api.pollingFloor.steady!.perSessionCycle;
    expect(floor.all!.mean).toBe(6);
    const ops = analysis.api.counts.byOperation as Record<string, { calls: number }>;
    // state, the checks' find and the review decision are all PullRequestByNumber: 3 a session a cycle.
    expect(ops.PullRequestByNumber!.calls).toBe(3 * ops.PullRequestStatusChecks!.calls);
  });

  it("names its calls as gh's are named: the review-threads query as the emulator names gh's, no name for gh api REST", async () => {
    const { analysis } = await runRef('S2-T1-5', sets('legacy'));
    const ops = Object.keys(analysis.api.counts.byOperation);
    expect(ops).toContain('query repository.pullRequest.reviewThreads');
    expect(ops).toContain('(none)');
    expect(ops).toContain('PullRequestByNumber');
    expect(ops.filter((op) => op === 'review-threads' || op === 'review-comments')).toEqual([]);
  });

  it('runs one poll loop per project: each cycle polls one repository, labelled with it', async () => {
    const out = join(dir, 'per-project');
    const result = await cli([
      'run',
      'S2-T2-10',
      ...sets('legacy').flatMap((s) => ['--set', s]),
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).not.toBe(2);
    const lines = traceOf(out);
    const cycles = lines.filter((l) => l.kind === 'span' && l.name === 'poll.cycle');
    const projects = new Set(cycles.map((c) => c.labels?.project));
    expect(projects).toEqual(new Set(['acme/repo-1', 'acme/repo-2']));
    // Every call of a cycle is of that cycle's repository.
    const projectOf = new Map(cycles.map((c) => [c.data?.cycle as number, c.labels?.project]));
    const lifecycle = lines.filter((l) => l.kind === 'api' && l.cycle !== undefined);
    expect(lifecycle.length).toBeGreaterThan(100);
    expect(lifecycle.filter((l) => l.repo !== projectOf.get(l.cycle!))).toEqual([]);
    // Both loops tick on the same schedule: as many cycles each.
    const perProject = [...projects].map((p) => cycles.filter((c) => c.labels?.project === p).length);
    expect(perProject[0]).toBe(perProject[1]);
  });

  it.skipIf(gh.skip)("models this machine's gh by default, and says which in the run's output", async () => {
    gh.require();
    const found = detectGhOnce()!;
    const out = join(dir, 'auto');
    const result = await cli([
      'run',
      'S2-T1-5',
      ...['polling.strategy=ao-0.2', 'duration=5m', 'markers.steady-start=2m'].flatMap((s) => ['--set', s]),
      '--out',
      out,
    ]);
    expect(result.stderr).toContain(`gh ${found.version}, the one on this machine`);
    const model = traceOf(out).find((l) => l.name === 'controlplane.model');
    expect(model?.data).toMatchObject({
      aoGh: found.prChecksJson ? 'current' : 'legacy',
      ghVersion: found.version,
    });
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      analysis: { api: { pollingFloor: { steady: { perSessionCycle: { all: { mean: number } } } } } };
    };
    expect(summary.analysis.api.pollingFloor.steady.perSessionCycle.all.mean).toBe(
      found.prChecksJson ? 6 : 4,
    );
  });

  it('review comments do not move a session to review: AO tells its agent and keeps the status its checks gave', async () => {
    const { analysis, records } = await runRef('S4-T1-5', [
      ...sets('legacy'),
      'duration=6m',
      'faults.0.at=2m30s',
      'sessions.fix-after=30s',
    ]);
    // The agents were told of the comments and answered them...
    expect(records.filter((r) => r.kind === 'event' && r.name === 'agent.review.received').length).toBe(5);
    expect(
      (analysis.api.counts.byOperation as Record<string, { calls: number }>)['reply-review-comment']!.calls,
    ).toBeGreaterThan(20);
    // ...and every session stayed where AO's status put it (ci_failed: pr_open).
    const reviewed = records.filter(
      (r) => r.kind === 'event' && r.name === 'session.state' && r.labels?.to === 'review',
    );
    expect(reviewed).toEqual([]);
  });

  it('gh process time queues on the cores: 20 calls × 500 ms on 2 cores make a cycle of at least 5 s', async () => {
    const { analysis } = await runRef('S2-T1-5', [
      ...sets('legacy'),
      'polling.ao-gh-process=500ms',
      'polling.ao-cpus=2',
    ]);
    const cycles = analysis.controlPlane.pollCycles!;
    // 5 sessions × 4 calls = 20 gh processes a cycle, 500 ms of CPU each, 2 at a time: ≥ 5,000 ms.
    expect(cycles.durationMs!.p50!).toBeGreaterThanOrEqual(5_000);
    // And the quota is unchanged: the same 4 calls per session per cycle.
    expect(analysis.api.pollingFloor.steady!.perSessionCycle.all!.mean).toBe(4);
  });
});
