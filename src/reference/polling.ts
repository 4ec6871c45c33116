/**
 * Lifecycle polling strategies (docs/reference-control-plane.md#lifecycle-polling). Each runs one poll cycle over the active sessions and
 * reports what it saw through `PollEnv`; the loop that schedules cycles lives in
 * control-plane.ts. Operation names (`op`) are what the trace and the reports group by.
 *
 * naive   per cycle: the tracker's issue list per repo (R), one GraphQL batch per 25 PRs
 *         (⌈N/25⌉), PR detection for sessions without a PR, and per PR: state, checks and
 *         reviews (3), plus mergeability (state and CI again), commit status and both comment
 *         lists while the PR is active: CI pending or a review under way (8). No caching.
 * guarded ETag guards: guard 1 per repo (newest-updated open PR), detection only behind a
 *         changed guard 1, guard 2 per PR (its head commit's check runs), one GraphQL batch of
 *         up to 25 changed PRs, guard 3 per PR at most every 2 min (newest review comment)
 *         followed by a review-threads query when it changed. 304s are free.
 */

import type { LruMap } from '../base/lru-map.ts';
import type { Clock } from '../clock/clock.ts';
import type { TtlCache } from './cache.ts';
import type { CallAttribution, GitHubClient, GitHubResult } from './github-client.ts';
import {
  firstAuthor,
  firstId,
  type PrSummary,
  prBatchQuery,
  readCheckRuns,
  readPrBatch,
  readReviews,
  readUnresolvedCommentIds,
  reviewThreadsQuery,
} from './github-queries.ts';
import type { Limiter } from './limiter.ts';
import type { SessionRecord } from './sessions.ts';

export const pollingStrategies = ['guarded', 'naive', 'ao-0.2', 'learned'] as const;
export type PollingStrategyName = (typeof pollingStrategies)[number];

export interface PollCaches {
  repoEtags: LruMap<string, string>;
  commitEtags: LruMap<string, string>;
  prEtags: LruMap<string, string>;
  /** When guard 3 last ran per session (lost on restart, so a restart re-checks every PR). */
  lastReviewCheck: Map<string, number>;
  /** The tracker's issue list per repo (guarded only; naive fetches every cycle). */
  issueLists: TtlCache<string, true>;
  /** PR summaries fetched very recently: a second request inside the TTL is skipped. */
  prSummaries: TtlCache<string, true>;
}

export interface PollEnv {
  clock: Clock;
  client: GitHubClient;
  limiter: Limiter;
  caches: PollCaches;
  reviewThrottleMs: number;
  /** Our own login: review comments we wrote are not news. */
  botLogin?: string;
  /** False once the control plane restarted or stopped: results of this cycle are dropped. */
  alive(): boolean;
  attr(op: string, session: SessionRecord | undefined, cycle: number): CallAttribution;
  prDetected(session: SessionRecord, pr: { number: number; headSha: string }): void;
  applySummary(session: SessionRecord, summary: PrSummary): void;
  /**
   * Review comments by others newer than the last handled one; `newest` is the newest seen. The
   * session goes to `review` unless `keepState` (agent-orchestrator tells its agent and keeps the
   * status its PR checks gave).
   */
  newReviewComments(session: SessionRecord, commentIds: number[], newest: number, keepState?: boolean): void;
  /** Count a call whose answer was neither 2xx nor 304 (it is retried next cycle). */
  failed(result: GitHubResult): void;
}

export interface CycleStats {
  calls: number;
}

const BATCH = 25;

function groupByRepo(sessions: readonly SessionRecord[]): Map<string, SessionRecord[]> {
  const groups = new Map<string, SessionRecord[]>();
  for (const s of sessions) {
    const list = groups.get(s.repo);
    if (list) list.push(s);
    else groups.set(s.repo, [s]);
  }
  return groups;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Counts a cycle's calls; a failed answer is reported and read as no answer. */
export class CallCounter {
  calls = 0;
  constructor(private readonly env: PollEnv) {}
  protected get envRef(): PollEnv {
    return this.env;
  }
  async get(path: string, attr: CallAttribution, etag?: string): Promise<GitHubResult | undefined> {
    if (!this.env.alive()) return undefined;
    this.calls++;
    const result = await this.env.client.get(path, attr, etag);
    if (!this.env.alive()) return undefined;
    if (result.status >= 400) {
      this.env.failed(result);
      return undefined;
    }
    return result;
  }
  async graphql(query: string, attr: CallAttribution): Promise<GitHubResult | undefined> {
    if (!this.env.alive()) return undefined;
    this.calls++;
    const result = await this.env.client.graphql(query, attr);
    if (!this.env.alive()) return undefined;
    const errors = (result.json as { errors?: unknown[] } | undefined)?.errors;
    if (
      result.status >= 400 ||
      (Array.isArray(errors) && errors.length > 0 && !(result.json as { data?: unknown }).data)
    ) {
      this.env.failed(result);
      return undefined;
    }
    return result;
  }
}

async function detectPr(
  env: PollEnv,
  calls: CallCounter,
  session: SessionRecord,
  cycle: number,
): Promise<void> {
  const owner = session.repo.slice(0, session.repo.indexOf('/'));
  const result = await calls.get(
    `/repos/${session.repo}/pulls?head=${encodeURIComponent(`${owner}:${session.branch}`)}&state=open&per_page=1`,
    env.attr('detect-pr', session, cycle),
  );
  const pr = Array.isArray(result?.json)
    ? (result.json[0] as { number?: number; head?: { sha?: string } })
    : undefined;
  if (pr?.number !== undefined) env.prDetected(session, { number: pr.number, headSha: pr.head?.sha ?? '' });
}

async function batchSummaries(
  env: PollEnv,
  calls: CallCounter,
  sessions: SessionRecord[],
  cycle: number,
): Promise<void> {
  await env.limiter.all(
    chunks(sessions, BATCH).map((batch) => async () => {
      const result = await calls.graphql(prBatchQuery(batch), env.attr('graphql-batch', undefined, cycle));
      if (!result) return;
      readPrBatch(result.json, batch.length).forEach((summary, i) => {
        const session = batch[i]!;
        if (summary) {
          env.caches.prSummaries.set(session.id, true);
          env.applySummary(session, summary);
        }
      });
    }),
  );
}

export async function runGuardedCycle(
  env: PollEnv,
  sessions: SessionRecord[],
  cycle: number,
): Promise<CycleStats> {
  const calls = new CallCounter(env);
  const { caches } = env;
  const byRepo = groupByRepo(sessions);

  // Guard 1: has any open PR in the repo changed?
  const changedRepos = new Set<string>();
  await env.limiter.all(
    [...byRepo.keys()].map((repo) => async () => {
      const result = await calls.get(
        `/repos/${repo}/pulls?state=open&sort=updated&direction=desc&per_page=1`,
        env.attr('guard-pr-list', undefined, cycle),
        caches.repoEtags.get(repo),
      );
      if (result?.status === 200) {
        changedRepos.add(repo);
        if (result.etag) caches.repoEtags.set(repo, result.etag);
      }
    }),
  );

  // The tracker's view of the issues, refreshed when its TTL cache runs out.
  await env.limiter.all(
    [...byRepo.keys()]
      .filter((repo) => caches.issueLists.get(repo) === undefined)
      .map((repo) => async () => {
        const result = await calls.get(
          `/repos/${repo}/issues?state=open&per_page=100`,
          env.attr('tracker-issue-list', undefined, cycle),
        );
        if (result) caches.issueLists.set(repo, true);
      }),
  );

  // PR detection, only where guard 1 saw a change.
  const undetected = sessions.filter((s) => !s.pr && changedRepos.has(s.repo));
  await env.limiter.all(undetected.map((s) => () => detectPr(env, calls, s, cycle)));

  // Guard 2: the head commit's check runs of every open PR.
  const withPr = sessions.filter((s) => s.pr);
  const changed = new Set(withPr.filter((s) => changedRepos.has(s.repo)));
  await env.limiter.all(
    withPr.map((s) => async () => {
      const key = `${s.repo}@${s.pr!.headSha}`;
      const result = await calls.get(
        `/repos/${s.repo}/commits/${s.pr!.headSha}/check-runs?per_page=1`,
        env.attr('guard-check-runs', s, cycle),
        caches.commitEtags.get(key),
      );
      if (result?.status === 200) {
        changed.add(s);
        if (result.etag) caches.commitEtags.set(key, result.etag);
      }
    }),
  );

  // One GraphQL query per 25 changed PRs.
  const refresh = withPr.filter((s) => changed.has(s) && caches.prSummaries.get(s.id) === undefined);
  await batchSummaries(env, calls, refresh, cycle);

  // Guard 3: newest review comment, at most once per throttle interval per PR.
  const now = env.clock.now();
  const due = withPr.filter(
    (s) => now - (caches.lastReviewCheck.get(s.id) ?? Number.NEGATIVE_INFINITY) >= env.reviewThrottleMs,
  );
  await env.limiter.all(
    due.map((s) => async () => {
      caches.lastReviewCheck.set(s.id, env.clock.now());
      const key = `${s.repo}#${s.pr!.number}`;
      const result = await calls.get(
        `/repos/${s.repo}/pulls/${s.pr!.number}/comments?sort=created&direction=desc&per_page=1`,
        env.attr('guard-review-comments', s, cycle),
        caches.prEtags.get(key),
      );
      if (result?.status !== 200) return;
      if (result.etag) caches.prEtags.set(key, result.etag);
      const newest = firstId(result.json);
      if (newest === undefined || newest === s.lastCommentId) return;
      if (env.botLogin !== undefined && firstAuthor(result.json) === env.botLogin) {
        // The newest comment is our own reply: nothing new to read.
        env.newReviewComments(s, [], newest);
        return;
      }
      const threads = await calls.graphql(
        reviewThreadsQuery(s),
        env.attr('graphql-review-threads', s, cycle),
      );
      if (!threads) return;
      const fresh = readUnresolvedCommentIds(threads.json, env.botLogin).filter(
        (id) => id > (s.lastCommentId ?? 0),
      );
      env.newReviewComments(s, fresh, newest);
    }),
  );
  return { calls: calls.calls };
}

export async function runNaiveCycle(
  env: PollEnv,
  sessions: SessionRecord[],
  cycle: number,
): Promise<CycleStats> {
  const calls = new CallCounter(env);
  const byRepo = groupByRepo(sessions);

  await env.limiter.all(
    [...byRepo.keys()].map((repo) => async () => {
      await calls.get(
        `/repos/${repo}/issues?state=open&per_page=100`,
        env.attr('tracker-issue-list', undefined, cycle),
      );
    }),
  );
  const withPr = sessions.filter((s) => s.pr);
  await batchSummaries(env, calls, withPr, cycle);

  await env.limiter.all(sessions.filter((s) => !s.pr).map((s) => () => detectPr(env, calls, s, cycle)));

  await env.limiter.all(
    withPr.map((s) => async () => {
      const base = `/repos/${s.repo}`;
      const pr = s.pr!;
      const state = await calls.get(`${base}/pulls/${pr.number}`, env.attr('pr-state', s, cycle));
      const checks = await calls.get(
        `${base}/commits/${pr.headSha}/check-runs`,
        env.attr('pr-checks', s, cycle),
      );
      const reviews = await calls.get(`${base}/pulls/${pr.number}/reviews`, env.attr('pr-reviews', s, cycle));
      const pull = state?.json as { state?: string; merged?: boolean; head?: { sha?: string } } | undefined;
      const summary: PrSummary = {
        state: pull?.merged ? 'MERGED' : pull?.state === 'closed' ? 'CLOSED' : pull ? 'OPEN' : undefined,
        headSha: pull?.head?.sha,
        ci: checks ? readCheckRuns(checks.json) : undefined,
        reviewDecision: reviews ? readReviews(reviews.json) : undefined,
      };
      env.applySummary(s, summary);
      const busy =
        s.state === 'review' ||
        s.ci !== 'success' ||
        (summary.reviewDecision != null && summary.reviewDecision !== 'APPROVED');
      if (!busy || summary.state !== 'OPEN') return;
      // Mergeability reads state and CI again; then both comment lists.
      await calls.get(`${base}/pulls/${pr.number}`, env.attr('pr-mergeable', s, cycle));
      await calls.get(`${base}/commits/${s.pr!.headSha}/status`, env.attr('pr-ci-status', s, cycle));
      await calls.get(
        `${base}/commits/${s.pr!.headSha}/check-runs`,
        env.attr('pr-mergeable-checks', s, cycle),
      );
      const comments = await calls.get(
        `${base}/pulls/${pr.number}/comments?per_page=100`,
        env.attr('pr-review-comments', s, cycle),
      );
      await calls.get(
        `${base}/issues/${pr.number}/comments?per_page=100`,
        env.attr('pr-issue-comments', s, cycle),
      );
      if (Array.isArray(comments?.json)) {
        const fresh: number[] = [];
        let newest = s.lastCommentId;
        for (const c of comments.json as Array<{ id?: number; user?: { login?: string } }>) {
          if (typeof c.id !== 'number') continue;
          if (newest === undefined || c.id > newest) newest = c.id;
          if (c.id > (s.lastCommentId ?? 0) && c.user?.login !== env.botLogin) fresh.push(c.id);
        }
        if (newest !== undefined && newest !== s.lastCommentId) env.newReviewComments(s, fresh, newest);
      }
    }),
  );
  return { calls: calls.calls };
}
