/**
 * The GitHub side of a run with the embedded target: the emulator in-process on the run's
 * clock, a token for the control plane, the world's admin operations and the fault switches.
 */

import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import { GitHubEmulator } from '../github/emulator.ts';
import { InProcessTransport } from '../github/transport.ts';
import type { GitHubTransport } from '../github/types.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { GitHubFaults } from './faults.ts';
import type { Scenario } from './scenario.ts';
import type { RepoIssues } from './spawner.ts';
import type { WorldAdmin } from './world.ts';

export interface GitHubSide extends GitHubFaults {
  transport: GitHubTransport;
  token: string;
  admin: WorldAdmin;
  repos: RepoIssues[];
  /** `/rate_limit` of the control plane's identity, as a `ratelimit.snapshot` event. */
  snapshot(label: 'before' | 'after'): Promise<void>;
  emulator?: GitHubEmulator;
  /** A shared emulator's URL (`run --github URL`, docs/distributed.md): nothing to serve. */
  url?: string;
}

const UNLIMITED_SECONDARY = {
  concurrent: Number.MAX_SAFE_INTEGER,
  restPointsPerMinute: Number.MAX_SAFE_INTEGER,
  graphqlPointsPerMinute: Number.MAX_SAFE_INTEGER,
  contentPerMinute: Number.MAX_SAFE_INTEGER,
  contentPerHour: Number.MAX_SAFE_INTEGER,
  cpuMsPerMinute: Number.MAX_SAFE_INTEGER,
  graphqlCpuMsPerMinute: Number.MAX_SAFE_INTEGER,
};

/** Enough open issues for every session the executors can start, spread over the repos. */
export function issuesNeeded(scenario: Scenario): number {
  let total = 0;
  for (const e of scenario.executors) {
    if (e.type === 'turnover') continue; // actors, not GitHub sessions: no issues needed
    total += e.type === 'arrival-rate' ? e.maxSessions : e.type === 'chaos-wave' ? e.concurrency : e.count;
  }
  return Math.max(total, scenario.sessions.count);
}

export function createInProcessGitHub(
  scenario: Scenario,
  clock: Clock,
  rng: Rng,
  trace: TraceSink,
): GitHubSide {
  const repoCount = scenario.topology.repos;
  // A command target's work arrives during the run (docs/command-target.md): an open issue at
  // the start would be work the control plane takes before any arrival.
  const issuesPerRepo = scenario.command ? 0 : Math.max(1, Math.ceil(issuesNeeded(scenario) / repoCount));
  const emulator = new GitHubEmulator({
    clock,
    rng,
    trace,
    fixtures: { repos: repoCount, issuesPerRepo, owner: scenario.topology.owner },
    // A control plane of the user's brings whatever token its configuration holds: it is the
    // default user's, as the world's token is (docs/command-target.md).
    // Its links are github.com's, as the control plane inside the world sees the host. Its calls
    // are attributed by what they name, never by `x-fleetbench-*` headers it sends.
    ...(scenario.command
      ? {
          acceptUnknownTokens: true,
          alwaysAttributeContent: true,
          attributionHeaders: false,
          webUrl: 'https://github.com',
        }
      : {}),
    latency: { rest: scenario.github.latency.rest, graphql: scenario.github.latency.graphql },
    limits: {
      primary: { user: { core: scenario.github.limits.core, graphql: scenario.github.limits.graphql } },
      ...(scenario.github.limits.secondary ? {} : { secondary: UNLIMITED_SECONDARY }),
    },
  });
  const admin = emulator.admin;
  const repos: RepoIssues[] = admin.listRepos().repos.map((r) => ({ repo: r.repo, issues: r.openIssues }));
  const faultIds: Partial<Record<'latency' | 'error' | 'secondary', string>> = {};
  const swap = (
    kind: 'latency' | 'error' | 'secondary',
    input: Parameters<typeof admin.injectFault>[0] | undefined,
  ) => {
    const previous = faultIds[kind];
    if (previous) admin.clearFaults({ id: previous });
    delete faultIds[kind];
    if (input) faultIds[kind] = admin.injectFault(input).id;
  };
  const world: WorldAdmin = {
    async openPullRequest(repo, input) {
      const pr = admin.openPullRequest({ repo, head: input.head, title: input.title, issue: input.issue });
      return { number: pr.number, headSha: pr.headSha };
    },
    async pushCommit(repo, number) {
      return admin.pushCommit({ repo, number }).sha;
    },
    async setChecks(repo, sha, names, state) {
      for (const name of names) {
        if (state === 'pending') admin.setCheckRun({ repo, sha, name, status: 'in_progress' });
        else admin.setCheckRun({ repo, sha, name, conclusion: state });
      }
    },
    async postReviewComments(repo, number, count) {
      return admin.postReviewComments({ repo, number, count }).ids;
    },
    async mergePullRequest(repo, number) {
      // Its merge first, off the event loop when the repository is served (docs/limits.md,
      // "Servers"); in process there is none, and the merge is made in this turn, as before.
      const ahead = admin.mergeAhead({ repo, number });
      if (ahead !== undefined) await ahead;
      admin.mergePullRequest({ repo, number });
    },
  };
  return {
    emulator,
    transport: new InProcessTransport(emulator),
    token: emulator.defaultToken,
    admin: world,
    repos,
    async snapshot(label) {
      admin.snapshotRateLimit({ label });
    },
    async setFaults(faults) {
      if (faults.extraLatencyMs !== undefined)
        swap(
          'latency',
          faults.extraLatencyMs > 0 ? { kind: 'latency', ms: faults.extraLatencyMs } : undefined,
        );
      if (faults.errorShare !== undefined)
        swap(
          'error',
          faults.errorShare > 0 ? { kind: 'error', share: faults.errorShare, status: 503 } : undefined,
        );
      if (faults.secondaryShare !== undefined)
        swap(
          'secondary',
          faults.secondaryShare > 0 ? { kind: 'secondary', share: faults.secondaryShare } : undefined,
        );
    },
  };
}
