/**
 * Auto-merge (docs/github-emulator.md, "Auto-merge"): GraphQL `enablePullRequestAutoMerge` and
 * `disablePullRequestAutoMerge` through Octokit against a served emulator, GitHub's refusals in
 * its words, the pull request merged by whoever enabled it once nothing stops the merge, and what
 * REST and GraphQL say of it meanwhile (`auto_merge`, `autoMergeRequest`, the events). The
 * invariant, searched for a counter-example over random sequences of changes: a pull request set
 * to auto-merge is never left open while it could be merged, and is merged only by it.
 */

import { join } from 'node:path';
import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock, VirtualClock } from '../src/clock/index.ts';
import { GitHubEmulator } from '../src/github/index.ts';
import { GitHubStateError } from '../src/github/world/objects.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { gitTestEnv, runGit } from './helpers/git.ts';
import { serve } from './helpers/github.ts';
import { stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

afterAll(stopAll);

const Octokit = Core.plugin(restEndpointMethods);
const REPO = 'fleetbench/repo-1';

async function served() {
  const emulator = new GitHubEmulator({
    clock: new VirtualClock(),
    rng: new Rng(3),
    trace: new MemorySink(),
    fixtures: { repos: 1, issuesPerRepo: 6, pullsPerRepo: 4 },
    latency: false,
  });
  const server = await serve(emulator);
  const client = (user: string) =>
    new Octokit({ auth: emulator.admin.mintToken({ user, session: user }).token, baseUrl: server.url });
  const pull = (n: number) => emulator.state.pull(emulator.state.repo(REPO), n);
  return { emulator, agent: client('fleet-agent'), reviewer: client('reviewer-1'), pull };
}

const ENABLE = `mutation($id: ID!, $mergeMethod: PullRequestMergeMethod, $title: String) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $mergeMethod, commitHeadline: $title}) {
    pullRequest { autoMergeRequest { mergeMethod commitHeadline enabledBy { login } } }
  }
}`;
const DISABLE = `mutation($id: ID!) { disablePullRequestAutoMerge(input: {pullRequestId: $id}) {
  pullRequest { autoMergeRequest { mergeMethod } } } }`;

describe('auto-merge through GraphQL', () => {
  it('merges a pull request by its enabler once its approval comes, as it was told to', async () => {
    const { agent, reviewer, pull } = await served();
    const number = 7;
    const id = pull(number).nodeId;
    const enabled = await agent.graphql<{
      enablePullRequestAutoMerge: { pullRequest: { autoMergeRequest: Record<string, unknown> } };
    }>(ENABLE, { id, mergeMethod: 'SQUASH', title: 'Ship it' });
    expect(enabled.enablePullRequestAutoMerge.pullRequest.autoMergeRequest).toEqual({
      mergeMethod: 'SQUASH',
      commitHeadline: 'Ship it',
      enabledBy: { login: 'fleet-agent' },
    });
    const rest = await agent.rest.pulls.get({ owner: 'fleetbench', repo: 'repo-1', pull_number: number });
    expect(rest.data.auto_merge).toMatchObject({
      merge_method: 'squash',
      commit_title: 'Ship it',
      enabled_by: { login: 'fleet-agent' },
    });
    expect(rest.data.state).toBe('open');
    const baseTip = pull(number).baseSha;
    await reviewer.rest.pulls.createReview({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: number,
      event: 'APPROVE',
    });
    const merged = await agent.rest.pulls.get({ owner: 'fleetbench', repo: 'repo-1', pull_number: number });
    expect(merged.data).toMatchObject({ merged: true, state: 'closed', auto_merge: null });
    expect(merged.data.merged_by?.login).toBe('fleet-agent');
    const commit = await agent.rest.git.getCommit({
      owner: 'fleetbench',
      repo: 'repo-1',
      commit_sha: merged.data.merge_commit_sha!,
    });
    // A squash: one commit on the base's tip, titled as the enabler asked.
    expect(commit.data.parents.map((p) => p.sha)).toEqual([baseTip]);
    expect(commit.data.message.split('\n')[0]).toBe('Ship it');
    const events = await agent.rest.issues.listEvents({
      owner: 'fleetbench',
      repo: 'repo-1',
      issue_number: number,
    });
    expect(events.data.map((e) => e.event)).toEqual(
      expect.arrayContaining(['auto_merge_enabled', 'merged', 'closed']),
    );
  });

  it("refuses in GitHub's words: not allowed, a method not allowed, mergeable now, closed", async () => {
    const { agent, reviewer, pull } = await served();
    const refusal = (n: number, method = 'MERGE') =>
      agent.graphql(ENABLE, { id: pull(n).nodeId, mergeMethod: method }).then(
        () => 'enabled',
        (error: { errors?: Array<{ type?: string; message: string }> }) =>
          `${error.errors?.[0]?.type}: ${error.errors?.[0]?.message}`,
      );
    await reviewer.rest.pulls.createReview({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: 8,
      event: 'APPROVE',
    });
    expect(await refusal(8)).toBe('UNPROCESSABLE: Pull request Pull request is in clean status');
    await agent.rest.pulls.update({ owner: 'fleetbench', repo: 'repo-1', pull_number: 9, state: 'closed' });
    expect(await refusal(9)).toBe('UNPROCESSABLE: Pull request is closed');
    await agent.rest.repos.update({ owner: 'fleetbench', repo: 'repo-1', allow_rebase_merge: false });
    expect(await refusal(10, 'REBASE')).toBe(
      'UNPROCESSABLE: Rebase merges are not allowed on this repository.',
    );
    const settings = await agent.rest.repos.update({
      owner: 'fleetbench',
      repo: 'repo-1',
      allow_auto_merge: false,
    });
    expect(settings.data.allow_auto_merge).toBe(false);
    expect(await refusal(10)).toBe('UNPROCESSABLE: Auto merge is not allowed for this repository');
    const graphql = await agent.graphql<{
      repository: { autoMergeAllowed: boolean; rebaseMergeAllowed: boolean };
    }>('{ repository(owner: "fleetbench", name: "repo-1") { autoMergeAllowed rebaseMergeAllowed } }');
    expect(graphql.repository).toEqual({ autoMergeAllowed: false, rebaseMergeAllowed: false });
  });

  it('a pull request into a branch no rule protects needs no review: mergeable at once, as GitHub has it', async () => {
    const { emulator, agent, pull } = await served();
    const repo = emulator.state.repo(REPO);
    // A stacked pull request: #8's branch into #7's.
    const stacked = emulator.admin.openPullRequest({ repo: REPO, head: pull(8).head, base: pull(7).head });
    const rest = await agent.rest.pulls.get({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: stacked.number,
    });
    expect(emulator.state.reviewDecision(pull(stacked.number))).toBeNull();
    expect(emulator.state.mergeRefusal(pull(stacked.number))).toBeUndefined();
    expect(rest.data.mergeable_state).not.toBe('blocked');
    // Into the default branch, the repository's rule holds: one approval.
    expect(pull(8).base).toBe(repo.defaultBranch);
    expect(emulator.state.reviewDecision(pull(8))).toBe('REVIEW_REQUIRED');
    const merged = await agent.rest.pulls.merge({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: stacked.number,
    });
    expect(merged.data.merged).toBe(true);
  });

  it('disabled, it merges nothing; a draft set to auto-merge waits until it is ready', async () => {
    const { agent, reviewer, pull } = await served();
    await agent.graphql(ENABLE, { id: pull(7).nodeId });
    const off = await agent.graphql<{
      disablePullRequestAutoMerge: { pullRequest: { autoMergeRequest: unknown } };
    }>(DISABLE, { id: pull(7).nodeId });
    expect(off.disablePullRequestAutoMerge.pullRequest.autoMergeRequest).toBeNull();
    await reviewer.rest.pulls.createReview({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: 7,
      event: 'APPROVE',
    });
    expect(pull(7).merged).toBe(false);
    const timeline = await agent.graphql<{
      repository: { pullRequest: { timelineItems: { nodes: Array<{ __typename: string }> } } };
    }>(
      `{ repository(owner: "fleetbench", name: "repo-1") { pullRequest(number: 7) {
        timelineItems(last: 10, itemTypes: [AUTO_MERGE_ENABLED_EVENT, AUTO_MERGE_DISABLED_EVENT]) { nodes { __typename } } } } }`,
    );
    expect(timeline.repository.pullRequest.timelineItems.nodes.map((n) => n.__typename)).toEqual([
      'AutoMergeEnabledEvent',
      'AutoMergeDisabledEvent',
    ]);
    pull(8).draft = true;
    await reviewer.rest.pulls.createReview({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: 8,
      event: 'APPROVE',
    });
    await agent.graphql(ENABLE, { id: pull(8).nodeId, mergeMethod: 'REBASE' });
    expect(pull(8).merged).toBe(false);
    await agent.graphql(
      'mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { clientMutationId } }',
      {
        id: pull(8).nodeId,
      },
    );
    expect(pull(8).merged).toBe(true);
    expect(pull(8).mergedBy?.login).toBe('fleet-agent');
  });
});

const gitTool = systemTool('git', ['--version'], 'git');

/** A served emulator whose repository is cloned into a scratch `work`, with the agent's and a reviewer's clients. */
async function servedWithGit(seed: number) {
  const dir = scratchDir('fleetbench-auto-merge-');
  const env = gitTestEnv(dir);
  const git = (args: string[], cwd = dir) => runGit(args, cwd, env);
  const emulator = new GitHubEmulator({
    clock: new RealClock(),
    rng: new Rng(seed),
    fixtures: { repos: 1, issuesPerRepo: 1, pullsPerRepo: 0 },
    latency: false,
  });
  const server = await serve(emulator);
  const token = emulator.defaultToken;
  const agent = new Octokit({ baseUrl: server.url, auth: token });
  const reviewer = new Octokit({
    baseUrl: server.url,
    auth: emulator.admin.mintToken({ user: 'reviewer-1', session: 'r' }).token,
  });
  const pushUrl = `${server.url.replace('://', `://x-access-token:${token}@`)}/fleetbench/repo-1.git`;
  const work = join(dir, 'work');
  await git(['clone', '--quiet', `${server.url}/fleetbench/repo-1`, work]);
  return { dir, env, git, emulator, server, agent, reviewer, pushUrl, work };
}

describe.skipIf(gitTool.skip)('auto-merge of a pushed branch in a served repository, with git', () => {
  beforeAll(() => gitTool.require());

  it('merges once approved a branch whose merge needs git (both sides moved); git clone of main has both changes', async () => {
    const { dir, env, git, emulator, server, agent, reviewer, pushUrl, work } = await servedWithGit(4);
    await git(['checkout', '-q', '-b', 'agent/auto'], work);
    await runGit(
      ['-c', 'core.hooksPath=/dev/null', 'commit', '-q', '--allow-empty', '-m', 'empty'],
      work,
      env,
    );
    await import('node:fs').then((fs) => fs.writeFileSync(join(work, 'auto.txt'), 'merged by auto-merge\n'));
    await git(['add', 'auto.txt'], work);
    await git(['commit', '-q', '-m', 'Add auto.txt'], work);
    await git(['push', '-q', pushUrl, 'agent/auto'], work);
    // The base moves too, so the merge is a three-way merge of trees only git has.
    await git(['checkout', '-q', 'main'], work);
    await import('node:fs').then((fs) => fs.writeFileSync(join(work, 'base.txt'), 'moved on main\n'));
    await git(['add', 'base.txt'], work);
    await git(['commit', '-q', '-m', 'Move main'], work);
    await git(['push', '-q', pushUrl, 'main'], work);
    const opened = await agent.rest.pulls.create({
      owner: 'fleetbench',
      repo: 'repo-1',
      head: 'agent/auto',
      base: 'main',
      title: 'Auto',
    });
    const pull = emulator.state.pull(emulator.state.repo(REPO), opened.data.number);
    await agent.graphql(ENABLE, { id: pull.nodeId, mergeMethod: 'SQUASH' });
    await reviewer.rest.pulls.createReview({
      owner: 'fleetbench',
      repo: 'repo-1',
      pull_number: opened.data.number,
      event: 'APPROVE',
    });
    // The merge reads trees only git has: computed ahead, then made; bounded wait.
    for (let i = 0; i < 100 && !pull.merged; i++) await new Promise((r) => setTimeout(r, 50));
    expect(pull.merged).toBe(true);
    const check = join(dir, 'check');
    await git(['clone', '--quiet', `${server.url}/fleetbench/repo-1`, check]);
    expect(await git(['log', '-1', '--format=%s'], check)).toBe('Auto (#' + opened.data.number + ')');
    expect(await git(['show', 'HEAD:auto.txt'], check)).toBe('merged by auto-merge');
    expect(await git(['show', 'HEAD:base.txt'], check)).toBe('moved on main');
  });
});

describe.skipIf(gitTool.skip)('a train of auto-merges into one base, with git', () => {
  beforeAll(() => gitTool.require());

  it('every approved pull request merges though each merge moves the base the others wait on', async () => {
    const fs = await import('node:fs');
    const { dir, git, emulator, server, agent, reviewer, pushUrl, work } = await servedWithGit(6);
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    fs.writeFileSync(join(work, 'shared.txt'), `${lines.join('\n')}\n`);
    await git(['add', 'shared.txt'], work);
    await git(['commit', '-q', '-m', 'Shared file'], work);
    await git(['push', '-q', pushUrl, 'HEAD:main'], work);
    const n = 6;
    for (let i = 0; i < n; i++) {
      // Each branch changes a line of its own of the shared file: they merge one after another.
      await git(['checkout', '-q', '-B', `agent/${i}`, 'main'], work);
      const mine = [...lines];
      mine[i * 5] = `changed by ${i}`;
      fs.writeFileSync(join(work, 'shared.txt'), `${mine.join('\n')}\n`);
      await git(['commit', '-q', '-am', `Change ${i}`], work);
      await git(['push', '-q', pushUrl, `agent/${i}`], work);
    }
    const numbers: number[] = [];
    for (let i = 0; i < n; i++) {
      const opened = await agent.rest.pulls.create({
        owner: 'fleetbench',
        repo: 'repo-1',
        head: `agent/${i}`,
        base: 'main',
        title: `Change ${i}`,
      });
      numbers.push(opened.data.number);
      const id = emulator.state.pull(emulator.state.repo(REPO), opened.data.number).nodeId;
      await agent.graphql(ENABLE, { id, mergeMethod: 'SQUASH' });
    }
    // Approved all at once: each merge moves main under the others.
    await Promise.all(
      numbers.map((pull_number) =>
        reviewer.rest.pulls.createReview({
          owner: 'fleetbench',
          repo: 'repo-1',
          pull_number,
          event: 'APPROVE',
        }),
      ),
    );
    const pulls = numbers.map((number) => emulator.state.pull(emulator.state.repo(REPO), number));
    for (let i = 0; i < 200 && !pulls.every((p) => p.merged); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(pulls.filter((p) => !p.merged).map((p) => p.issue.number)).toEqual([]);
    const check = join(dir, 'check');
    await git(['clone', '--quiet', `${server.url}/fleetbench/repo-1`, check]);
    const merged = fs.readFileSync(join(check, 'shared.txt'), 'utf8');
    for (let i = 0; i < n; i++) expect(merged).toContain(`changed by ${i}`);
  });
});

describe('the invariant', () => {
  type Step =
    | { kind: 'enable'; pull: number; method: 'merge' | 'squash' | 'rebase'; by: number }
    | { kind: 'disable'; pull: number }
    | {
        kind: 'review';
        pull: number;
        state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED';
        by: number;
        pending: boolean;
      }
    | { kind: 'push'; pull: number }
    | { kind: 'draft'; pull: number; draft: boolean };
  const pullNumber = fc.integer({ min: 7, max: 10 });
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({
      kind: fc.constant('enable' as const),
      pull: pullNumber,
      method: fc.constantFrom('merge', 'squash', 'rebase'),
      by: fc.integer({ min: 1, max: 2 }),
    }),
    fc.record({ kind: fc.constant('disable' as const), pull: pullNumber }),
    fc.record({
      kind: fc.constant('review' as const),
      pull: pullNumber,
      state: fc.constantFrom('APPROVED', 'CHANGES_REQUESTED', 'COMMENTED'),
      by: fc.integer({ min: 1, max: 2 }),
      pending: fc.boolean(),
    }),
    fc.record({ kind: fc.constant('push' as const), pull: pullNumber }),
    fc.record({ kind: fc.constant('draft' as const), pull: pullNumber, draft: fc.boolean() }),
  );

  it('a pull request set to auto-merge is never left open while it could merge, and merges only so', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 25 }), async (steps) => {
        const emulator = new GitHubEmulator({
          clock: new VirtualClock(),
          rng: new Rng(1),
          fixtures: { repos: 1, issuesPerRepo: 6, pullsPerRepo: 4 },
          latency: false,
        });
        const state = emulator.state;
        const repo = state.repo(REPO);
        const enabledBy = new Map<number, string>();
        for (const s of steps) {
          const pull = state.pull(repo, s.pull);
          try {
            if (s.kind === 'enable') {
              state.enableAutoMerge(pull, { user: `agent-${s.by}`, method: s.method });
              enabledBy.set(s.pull, `agent-${s.by}`);
            } else if (s.kind === 'disable') state.disableAutoMerge(pull, 'fleet-agent');
            else if (s.kind === 'review' && s.pending) {
              // A review started pending, then submitted (REST POST …/reviews/{id}/events).
              const review = state.submitReview(pull, { user: `reviewer-${s.by}`, state: 'PENDING' });
              state.submitPendingReview(pull, review, { state: s.state });
            } else if (s.kind === 'review')
              state.submitReview(pull, { user: `reviewer-${s.by}`, state: s.state });
            else if (s.kind === 'push') {
              if (pull.issue.state === 'open') state.pushCommit(pull, {});
            } else if (s.draft) pull.draft = pull.issue.state === 'open';
            else if (pull.issue.state === 'open') state.markReadyForReview(pull);
          } catch (error) {
            if (!(error instanceof GitHubStateError)) throw error;
          }
          // GitHub merges after the change that unblocked it: a turn later here.
          await new Promise((resolve) => setImmediate(resolve));
          for (const n of [7, 8, 9, 10]) {
            const p = state.pull(repo, n);
            if (p.issue.state === 'open' && p.autoMerge !== undefined)
              expect(state.mergeRefusal(p), `#${n} left open though it could merge`).not.toBeUndefined();
            if (p.merged) {
              // Nothing else merges here: a merged pull request was set to auto-merge by its enabler.
              expect(p.mergedBy?.login).toBe(enabledBy.get(n));
              expect(p.autoMerge).toBeUndefined();
            }
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
