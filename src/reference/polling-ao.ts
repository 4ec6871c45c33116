/**
 * The `ao-0.2` strategy: agent-orchestrator 0.2.0's lifecycle poll, as measured against the real
 * thing (`--target ao`, docs/calibration.md), so that a virtual-time run predicts what the real
 * AO spends. AO reaches GitHub only through `gh`, whose `pr list`/`pr view`/`pr checks` are
 * GraphQL queries (one point each), never cached, never conditional. Per session per cycle:
 *
 * - no PR yet: `gh pr list --head BRANCH --limit 1` (PR detection).
 * - a PR: `gh pr view --json state`; then CI through `gh pr checks --json`:
 *   - `ao-gh: legacy` (gh before `pr checks --json`, e.g. Debian's 2.23): the flag is refused
 *     before any request, AO falls back to `pr view --json state` once more and, the PR being
 *     open, reads CI as failing (status `ci_failed`): 2 queries;
 *   - `ao-gh: current`: the checks query; a failing or pending CI stops there; otherwise
 *     `pr view --json reviewDecision`, and when that is approved or none, mergeability:
 *     `pr view --json state`, `pr view --json mergeable,…` and the checks once more.
 * - then, for every session with a PR, its review backlog: the review-threads GraphQL query
 *   (`gh api graphql`) and the inline comments list (`gh api …/pulls/N/comments?per_page=100`).
 *
 * At spawn, AO's tracker reads the issue twice (`gh issue view`: getIssue, generatePrompt).
 * Sessions are polled concurrently (`Promise.allSettled` in AO), which the limiter bounds here.
 */
import type { CallAttribution, GitHubClient, GitHubResult } from './github-client.ts';
import { type PrSummary, readUnresolvedCommentIds } from './github-queries.ts';
import { Limiter } from './limiter.ts';
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

/** `gh pr checks --json …`: the head commit's status check rollup. */
const CHECKS_FIELDS =
  'commits(last: 1) { nodes { commit { oid statusCheckRollup { state contexts(first: 100) { nodes { __typename ... on CheckRun { name status conclusion } } } } } } }';

/** AO's getPendingComments: unresolved review threads, first comment of each. */
function reviewThreadsQuery(session: SessionRecord): string {
  const { owner, name } = split(session.repo);
  return `query { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { pullRequest(number: ${session.pr!.number}) { reviewThreads(first: 100) { nodes { isResolved comments(first: 1) { nodes { databaseId author { login } body path line url createdAt } } } } } } }`;
}

/**
 * AO's spawn path reads the issue twice through `gh issue view` (the tracker's getIssue, then
 * generatePrompt): two IssueByNumber queries, source `cli`, before the session exists for the loop.
 */
export async function aoSpawnCalls(
  client: GitHubClient,
  spec: { id: string; repo: string; issue: number },
): Promise<void> {
  const { owner, name } = split(spec.repo);
  const query = `query IssueByNumber { repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { issue(number: ${spec.issue}) { number title body url state labels(first: 100) { nodes { name } } assignees(first: 100) { nodes { login } } } } }`;
  for (let i = 0; i < 2; i++)
    await client.graphql(query, { source: 'cli', op: 'IssueByNumber', session: spec.id });
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

export interface AoModel {
  gh: AoGhMode;
  /** CPU time of one gh process before its request goes out (0: not modelled). */
  processMs: number;
  /** Cores the cycle's gh processes share: their CPU time queues on these. */
  cpus: number;
}

/**
 * Each `gh` is a process: its start, TLS handshake and JSON work cost CPU before and after the
 * request. With every session polled at once (AO's Promise.allSettled) those processes queue on
 * the machine's cores, which is what makes a 50-session cycle outlast its interval on 2 cores
 * (docs/calibration.md). Modelled as `processMs` of CPU per call, queued on `cpus` cores.
 */
class GhProcesses extends CallCounter {
  private readonly cores: Limiter;
  constructor(
    env: PollEnv,
    private readonly model: AoModel,
  ) {
    super(env);
    this.cores = new Limiter(model.cpus);
  }
  private async spawnCost(env: PollEnv): Promise<void> {
    if (this.model.processMs > 0) await this.cores.run(() => env.clock.sleep(this.model.processMs));
  }
  override async get(path: string, attr: CallAttribution): Promise<GitHubResult | undefined> {
    await this.spawnCost(this.envRef);
    return super.get(path, attr);
  }
  override async graphql(query: string, attr: CallAttribution): Promise<GitHubResult | undefined> {
    await this.spawnCost(this.envRef);
    return super.graphql(query, attr);
  }
}

export async function runAoCycle(
  env: PollEnv,
  sessions: SessionRecord[],
  cycle: number,
  model: AoModel,
): Promise<CycleStats> {
  const gh = model.gh;
  const calls = new GhProcesses(env, model);
  await env.limiter.all(
    sessions.map((s) => async () => {
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
          const checks = await calls.graphql(prViewQuery(s, CHECKS_FIELDS), env.attr('pr-checks', s, cycle));
          const ci = ciOf(pullOf(checks?.json));
          if (ci) summary.ci = ci;
          if (ci !== 'failure' && ci !== 'pending') {
            const decided = await view('reviewDecision');
            const decision = pullOf(decided?.json)?.reviewDecision as string | null | undefined;
            summary.reviewDecision = decision ?? null;
            if (decision === 'APPROVED' || decision == null) {
              await view('state');
              await view('mergeable reviewDecision mergeStateStatus isDraft');
              await calls.graphql(prViewQuery(s, CHECKS_FIELDS), env.attr('pr-checks', s, cycle));
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
      if (ids.length > 0) env.newReviewComments(s, ids, Math.max(...ids));
    }),
  );
  return { calls: calls.calls };
}
