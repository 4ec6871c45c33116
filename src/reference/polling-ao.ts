/**
 * The `ao-0.2` strategy: agent-orchestrator 0.2.0's lifecycle poll, read from its code
 * (ao-core's lifecycle manager, scm-github's getPRState/getCISummary/getReviewDecision/
 * getMergeability) and checked against the real thing (`--target ao`, docs/calibration.md), so
 * that a virtual-time run predicts what the real AO spends. AO reaches GitHub only through `gh`,
 * whose `pr list`/`pr view`/`pr checks` are GraphQL queries (one point each), never cached, never
 * conditional. One poll loop per project (the control plane runs them), every session of the
 * project at once (`Promise.allSettled`). Per session per cycle:
 *
 * - no PR yet: `gh pr list --head BRANCH --limit 1` (PR detection).
 * - a PR: `gh pr view --json state`; then CI through `gh pr checks --json`:
 *   - `ao-gh: legacy` (gh before `pr checks --json`, e.g. Debian's 2.23): the flag is refused
 *     before any request, AO falls back to `pr view --json state` once more and, the PR being
 *     open, reads CI as failing (status `ci_failed`): 2 queries;
 *   - `ao-gh: current`: `gh pr checks` finds the PR (PullRequestByNumber) and reads its checks
 *     (PullRequestStatusChecks; the first time in a run, gh's feature detection asks two more).
 *     Failing CI stops there (`ci_failed`); pending or passing CI goes on to
 *     `pr view --json reviewDecision`: changes requested stops, review required stops
 *     (`review_pending`), approved or none goes on to mergeability: `pr view --json state`,
 *     `pr view --json mergeable,…` and the checks once more (2 queries).
 * - then, for every session with an open PR, its review backlog: the review-threads query
 *   (`gh api graphql`, anonymous) and the inline comments (`gh api …/pulls/N/comments`, REST).
 *
 * Operations are named as gh's requests are: the query's own name, the emulator's name for an
 * anonymous query, none for `gh api` REST calls (no fleetbench header is sent, as gh sends none).
 * At spawn, AO's tracker reads the issue twice (`gh issue view`: getIssue, generatePrompt). Each
 * call is a gh process: its client time queues on the cores (client-time.ts).
 */

import type { ClientTime } from './client-time.ts';
import type { CallAttribution, GitHubClient, GitHubResult } from './github-client.ts';
import { type PrSummary, readUnresolvedCommentIds } from './github-queries.ts';
import type { CycleStats, PollEnv } from './polling.ts';
import { CallCounter } from './polling.ts';
import type { SessionRecord } from './sessions.ts';

export const aoGhModes = ['current', 'legacy'] as const;
export type AoGhMode = (typeof aoGhModes)[number];

function split(repo: string): { owner: string; name: string } {
  const i = repo.indexOf('/');
  return { owner: repo.slice(0, i), name: repo.slice(i + 1) };
}

/** `gh pr view N --json FIELDS`: gh's PullRequestByNumber query. */
function prViewQuery(session: SessionRecord, fields: string): string {
  const { owner, name } = split(session.repo);
  return `query PullRequestByNumber { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { pullRequest(number: ${session.pr!.number}) { ${fields} } } }`;
}

/** `gh pr list --head BRANCH --limit 1`: gh's PullRequestList query. */
function prListQuery(session: SessionRecord): string {
  const { owner, name } = split(session.repo);
  return `query PullRequestList { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { pullRequests(states: [OPEN], headRefName: ${JSON.stringify(session.branch)}, first: 1, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { number headRefOid headRefName } } } }`;
}

/** `gh pr checks --json`'s read of the checks (gh asks by the PR's node id; the same rollup). */
function statusChecksQuery(session: SessionRecord): string {
  const { owner, name } = split(session.repo);
  return `query PullRequestStatusChecks { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { pullRequest(number: ${session.pr!.number}) { commits(last: 1) { nodes { commit { oid statusCheckRollup { state contexts(first: 100) { nodes { __typename ... on CheckRun { name status conclusion } } } } } } } } } }`;
}

/** gh's feature detection before its first `pr checks` (cached for 24 h under gh's TMPDIR). */
const FEATURE_QUERIES = [
  'query PullRequest_fields { PullRequest: __type(name: "PullRequest") { fields(includeDeprecated: true) { name } } }',
  'query PullRequest_fields2 { WorkflowRun: __type(name: "WorkflowRun") { fields(includeDeprecated: true) { name } } }',
];

/** AO's getPendingComments: unresolved review threads, first comment of each (anonymous). */
function reviewThreadsQuery(session: SessionRecord): string {
  const { owner, name } = split(session.repo);
  return `query { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { pullRequest(number: ${session.pr!.number}) { reviewThreads(first: 100) { nodes { isResolved comments(first: 1) { nodes { databaseId author { login } body path line url createdAt } } } } } } }`;
}

/** A call as gh makes it: no operation header, so the record carries the name gh's request has. */
function asGh(attr: CallAttribution): CallAttribution {
  const { op: _op, ...rest } = attr;
  return rest;
}

/**
 * AO's spawn path reads the issue twice through `gh issue view` (the tracker's getIssue, then
 * generatePrompt): two IssueByNumber queries, source `cli`, before the session exists for the loop.
 */
export async function aoSpawnCalls(
  client: GitHubClient,
  clientTime: ClientTime | undefined,
  spec: { id: string; repo: string; issue: number },
): Promise<void> {
  const { owner, name } = split(spec.repo);
  const query = `query IssueByNumber { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { issue(number: ${spec.issue}) { number title body url state labels(first: 100) { nodes { name } } assignees(first: 100) { nodes { login } } } } }`;
  for (let i = 0; i < 2; i++) {
    await clientTime?.beforeCall();
    await client.graphql(query, { source: 'cli', session: spec.id });
  }
}

type Json = Record<string, unknown> | undefined;
const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined);

function pullOf(json: unknown): Json {
  return obj(obj(obj(obj(json)?.data)?.repository)?.pullRequest);
}

function ciOf(pull: Json): PrSummary['ci'] {
  const commit = obj(obj((obj(pull?.commits)?.nodes as unknown[] | undefined)?.[0])?.commit);
  const state = obj(commit?.statusCheckRollup)?.state;
  if (state === 'SUCCESS') return 'success';
  if (state === 'FAILURE' || state === 'ERROR') return 'failure';
  if (state === 'PENDING' || state === 'EXPECTED') return 'pending';
  return undefined;
}

/** Each call is a gh process: its client time first (client-time.ts), then the request. */
class GhProcesses extends CallCounter {
  constructor(
    env: PollEnv,
    private readonly clientTime: ClientTime,
  ) {
    super(env);
  }
  override async get(path: string, attr: CallAttribution): Promise<GitHubResult | undefined> {
    await this.clientTime.beforeCall();
    return super.get(path, asGh(attr));
  }
  override async graphql(query: string, attr: CallAttribution): Promise<GitHubResult | undefined> {
    await this.clientTime.beforeCall();
    return super.graphql(query, asGh(attr));
  }
}

/** gh's feature detection runs once per run (its answers are cached), before the first `pr checks`. */
const detectedFeatures = new WeakSet<ClientTime>();

export async function runAoCycle(
  env: PollEnv,
  sessions: SessionRecord[],
  cycle: number,
  gh: AoGhMode,
  clientTime: ClientTime,
): Promise<CycleStats> {
  const calls = new GhProcesses(env, clientTime);
  const checks = async (s: SessionRecord): Promise<PrSummary['ci']> => {
    await calls.graphql(prViewQuery(s, 'number headRefName id'), env.attr('PullRequestByNumber', s, cycle));
    if (!detectedFeatures.has(clientTime)) {
      detectedFeatures.add(clientTime);
      for (const query of FEATURE_QUERIES)
        await calls.graphql(query, env.attr('feature-detection', s, cycle));
    }
    const rollup = await calls.graphql(statusChecksQuery(s), env.attr('PullRequestStatusChecks', s, cycle));
    return ciOf(pullOf(rollup?.json));
  };
  await Promise.all(
    sessions.map(async (s) => {
      if (!s.pr) {
        const listed = await calls.graphql(prListQuery(s), env.attr('PullRequestList', s, cycle));
        const node = obj(
          (
            obj(obj(obj(obj(listed?.json)?.data)?.repository)?.pullRequests)?.nodes as unknown[] | undefined
          )?.[0],
        );
        if (typeof node?.number !== 'number') return;
        env.prDetected(s, { number: node.number, headSha: String(node.headRefOid ?? '') });
      }
      const view = (fields: string) =>
        calls.graphql(prViewQuery(s, fields), env.attr('PullRequestByNumber', s, cycle));
      const stateResult = await view('state');
      const state = pullOf(stateResult?.json)?.state as PrSummary['state'];
      const summary: PrSummary = { ...(state ? { state } : {}) };
      if (state === 'OPEN') {
        if (gh === 'legacy') {
          // `gh pr checks --json` is refused by gh itself (no request); AO reads the state again.
          await view('state');
          summary.ci = 'failure';
        } else {
          const ci = await checks(s);
          if (ci) summary.ci = ci;
          // Only failing CI stops AO here (getCISummary → ci_failed); pending goes on.
          if (ci !== 'failure') {
            const decided = await view('reviewDecision');
            const decision = pullOf(decided?.json)?.reviewDecision as string | null | undefined;
            summary.reviewDecision = decision ?? null;
            if (decision === 'APPROVED' || decision == null) {
              await view('state');
              await view('mergeable reviewDecision mergeStateStatus isDraft');
              await checks(s);
            }
          }
        }
      }
      env.applySummary(s, summary);
      if (state !== 'OPEN' || !env.alive()) return;
      const [threads] = await Promise.all([
        calls.graphql(reviewThreadsQuery(s), env.attr('review-threads', s, cycle)),
        calls.get(
          `/repos/${s.repo}/pulls/${s.pr!.number}/comments?per_page=100&page=1`,
          env.attr('review-comments', s, cycle),
        ),
      ]);
      const ids = readUnresolvedCommentIds(threads?.json, env.botLogin).filter(
        (id) => id > (s.lastCommentId ?? 0),
      );
      // AO's review backlog tells the agent (its changes-requested reaction) without a status change.
      if (ids.length > 0) env.newReviewComments(s, ids, Math.max(...ids), true);
    }),
  );
  return { calls: calls.calls };
}
