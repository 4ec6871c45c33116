/**
 * The GraphQL the reference control plane sends, and readers for the JSON GitHub answers.
 * Readers are defensive: an answer that lacks a field leaves the session as it was.
 */
import type { SessionRecord } from './sessions.ts';

export function splitRepo(repo: string): { owner: string; name: string } {
  const slash = repo.indexOf('/');
  return { owner: repo.slice(0, slash), name: repo.slice(slash + 1) };
}

/** One query, up to 25 aliased pull requests, plus the free rateLimit field (docs/reference-control-plane.md, `guarded`). */
export function prBatchQuery(sessions: readonly SessionRecord[]): string {
  const parts = sessions.map((s, i) => {
    const { owner, name } = splitRepo(s.repo);
    return `pr${i}: repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) { pullRequest(number: ${s.pr!.number}) { number state mergeable reviewDecision headRefOid commits(last: 1) { nodes { commit { oid statusCheckRollup { state } } } } } }`;
  });
  return `query {\n  ${parts.join('\n  ')}\n  rateLimit { limit cost remaining used resetAt }\n}`;
}

/** Review threads plus the last 5 reviews of one PR (guarded, guard 3 reported a change). */
export function reviewThreadsQuery(session: SessionRecord): string {
  const { owner, name } = splitRepo(session.repo);
  return `query {
  repository(owner: ${JSON.stringify(owner)}, name: ${JSON.stringify(name)}) {
    pullRequest(number: ${session.pr!.number}) {
      reviewDecision
      reviewThreads(first: 100) { nodes { isResolved comments(first: 20) { nodes { databaseId author { login } } } } }
      reviews(last: 5) { nodes { state } }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}`;
}

export interface PrSummary {
  state?: 'OPEN' | 'CLOSED' | 'MERGED';
  reviewDecision?: string | null;
  headSha?: string;
  ci?: 'pending' | 'success' | 'failure';
}

function rollupToCi(state: unknown): PrSummary['ci'] {
  if (state === 'SUCCESS') return 'success';
  if (state === 'FAILURE' || state === 'ERROR') return 'failure';
  if (state === 'PENDING' || state === 'EXPECTED') return 'pending';
  return undefined;
}

type Json = Record<string, unknown> | undefined;
const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined);

export function readPrBatch(json: unknown, count: number): Array<PrSummary | undefined> {
  const data = obj(obj(json)?.data);
  return Array.from({ length: count }, (_, i) => {
    const pr = obj(obj(data?.[`pr${i}`])?.pullRequest);
    if (!pr) return undefined;
    const nodes = obj(pr.commits)?.nodes;
    const commit = obj(obj(Array.isArray(nodes) ? nodes[nodes.length - 1] : undefined)?.commit);
    return {
      state: pr.state as PrSummary['state'],
      reviewDecision: (pr.reviewDecision as string | null | undefined) ?? null,
      headSha: (pr.headRefOid as string | undefined) ?? (commit?.oid as string | undefined),
      ci: rollupToCi(obj(commit?.statusCheckRollup)?.state),
    };
  });
}

/** Ids of comments in unresolved review threads, except those written by `ownLogin`. */
export function readUnresolvedCommentIds(json: unknown, ownLogin?: string): number[] {
  const pr = obj(obj(obj(obj(json)?.data)?.repository)?.pullRequest);
  const threads = obj(pr?.reviewThreads)?.nodes;
  const ids: number[] = [];
  if (!Array.isArray(threads)) return ids;
  for (const thread of threads) {
    const t = obj(thread);
    if (!t || t.isResolved === true) continue;
    const comments = obj(t.comments)?.nodes;
    if (!Array.isArray(comments)) continue;
    for (const c of comments) {
      const id = obj(c)?.databaseId;
      const author = obj(obj(c)?.author)?.login;
      if (typeof id === 'number' && (ownLogin === undefined || author !== ownLogin)) ids.push(id);
    }
  }
  return ids;
}

/** REST check-runs list → CI state. */
export function readCheckRuns(json: unknown): PrSummary['ci'] {
  const runs = obj(json)?.check_runs;
  if (!Array.isArray(runs) || runs.length === 0) return undefined;
  let ci: PrSummary['ci'] = 'success';
  for (const run of runs) {
    const r = obj(run);
    if (r?.status !== 'completed') return 'pending';
    if (r.conclusion !== 'success' && r.conclusion !== 'neutral' && r.conclusion !== 'skipped')
      ci = 'failure';
  }
  return ci;
}

/** REST reviews list → a review decision like GitHub's. */
export function readReviews(json: unknown): string | null {
  if (!Array.isArray(json)) return null;
  let decision: string | null = null;
  for (const review of json) {
    const state = obj(review)?.state;
    if (state === 'CHANGES_REQUESTED') decision = 'CHANGES_REQUESTED';
    else if (state === 'APPROVED' && decision !== 'CHANGES_REQUESTED') decision = 'APPROVED';
    else if (state === 'COMMENTED' && decision === null) decision = 'REVIEW_REQUIRED';
  }
  return decision;
}

export function firstId(json: unknown): number | undefined {
  if (!Array.isArray(json) || json.length === 0) return undefined;
  const id = obj(json[0])?.id;
  return typeof id === 'number' ? id : undefined;
}

export function firstAuthor(json: unknown): string | undefined {
  if (!Array.isArray(json) || json.length === 0) return undefined;
  const login = obj(obj(json[0])?.user)?.login;
  return typeof login === 'string' ? login : undefined;
}
