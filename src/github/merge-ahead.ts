/**
 * The merges a request will compute, computed before it is handled (docs/limits.md, "Servers"):
 * a request is answered synchronously, and in a served repository a merge reads trees from git
 * and may run git's own merge, which for 60,000 files held the event loop, and every other
 * client, for seconds. So the emulator computes them first, off the event loop (world/refs.ts
 * `prepareMerge`), and the request, then handled as any other, finds them done.
 *
 * What is computed ahead: a pull request's merge (REST `PUT …/pulls/{n}/merge`, GraphQL
 * `mergePullRequest`, the admin API's `merge-pull-request`, and the workload's merges in process,
 * through `AdminApi.mergeAhead`) and its update from its base (REST
 * `PUT …/pulls/{n}/update-branch`). A rebase merge's steps (each commit's own change picked onto
 * the one before it, from the base) are computed ahead too, one after the other: a later step
 * picks onto a commit the merge itself makes, which does not exist before it, but whose tree the
 * step before gives.
 * Mergeability (REST and GraphQL `mergeable`) needs nothing here: its job runs the merge ahead
 * when it starts (state.ts `mergeability`).
 */
import type { GitHubState, PullRequest } from './state.ts';
import type { EmulatorRequest } from './types.ts';

const REST_MERGE = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d{1,9})\/(merge|update-branch)\/?$/;
// Enabling auto-merge judges, on the spot, whether the pull request could merge now.
const GRAPHQL_MERGE = /\bmergePullRequest\b|\benablePullRequestAutoMerge\b/;
const REBASE = /\brebase\b|\bREBASE\b/;
/** A node id named in a GraphQL request, inline or among its variables (`"PR_…"`). */
const QUOTED_NODE_ID = /"(PR_[A-Za-z0-9_=-]{1,100})"/g;
/** At most this many pull requests' merges computed ahead for one request. */
const MAX_MERGES = 32;

/** Which merge of a pull request: its head into its base, or its base into its head (update-branch). */
type Merge = { pull: PullRequest; into: 'base' | 'head' };

/**
 * A promise that settles once the request's merges are computed ahead, or undefined when it
 * needs none (nothing it merges, nothing to compute: in process, kept already, no tree to read).
 * `pathname` is the request's path without its query or `/api/v3` prefix.
 */
export function mergesAhead(
  state: GitHubState,
  req: EmulatorRequest,
  method: string,
  pathname: string,
): Promise<void> | undefined {
  if (method !== 'PUT' && method !== 'POST') return undefined;
  const runs: Promise<void>[] = [];
  // A rebase merge (REST `merge_method`, GraphQL `mergeMethod`, the admin API's `method`) picks
  // the pull request's commits onto the base one by one: those steps too.
  const rebase = req.body !== undefined && REBASE.test(req.body);
  for (const { pull, into } of mergesOf(state, req, method, pathname)) {
    const run = pullMergeAhead(state, pull, into);
    if (run !== undefined) runs.push(run);
    const steps = rebase && into === 'base' ? rebaseAhead(state, pull) : undefined;
    if (steps !== undefined) runs.push(steps);
  }
  return runs.length === 0 ? undefined : Promise.all(runs).then(() => undefined);
}

/**
 * One pull request's merge computed ahead: its head into its base (a merge), or its base into
 * its head (update-branch); undefined when there is nothing to compute.
 */
export function pullMergeAhead(
  state: GitHubState,
  pull: PullRequest,
  into: 'base' | 'head',
): Promise<void> | undefined {
  const repo = pull.issue.repo;
  const baseTip = repo.branches.get(pull.base);
  if (pull.issue.state !== 'open' || baseTip === undefined) return undefined;
  return into === 'base'
    ? state.refs.prepareMerge(repo, baseTip, pull.headSha)
    : state.refs.prepareMerge(repo, pull.headSha, baseTip);
}

/**
 * A pull request's rebase merge computed ahead: each of its commits picked in turn onto the tree
 * the one before made, from the base's tip (world/refs.ts `prepareRebase`); undefined when there
 * is nothing to compute.
 */
export function rebaseAhead(state: GitHubState, pull: PullRequest): Promise<void> | undefined {
  const repo = pull.issue.repo;
  const baseTip = repo.branches.get(pull.base);
  if (pull.issue.state !== 'open' || baseTip === undefined) return undefined;
  return state.refs.prepareRebase(repo, baseTip, pull.commits);
}

function mergesOf(state: GitHubState, req: EmulatorRequest, method: string, pathname: string): Merge[] {
  if (pathname === '/graphql' || pathname === '/graphql/') return graphqlMerges(state, req.body);
  if (pathname === '/_fleetbench/merge-pull-request') return adminMerge(state, req.body);
  const match = method === 'PUT' ? REST_MERGE.exec(pathname) : null;
  if (match === null) return [];
  const pull = pullOf(state, decodeURIComponent(match[1]!), decodeURIComponent(match[2]!), Number(match[3]));
  if (pull === undefined) return [];
  return [{ pull, into: match[4] === 'update-branch' ? 'head' : 'base' }];
}

function graphqlMerges(state: GitHubState, body: string | undefined): Merge[] {
  if (body === undefined || !GRAPHQL_MERGE.test(body)) return [];
  const merges: Merge[] = [];
  for (const [, id] of body.matchAll(QUOTED_NODE_ID)) {
    const node = state.nodes.get(id!);
    if (node !== undefined && 'issue' in node) merges.push({ pull: node, into: 'base' });
    if (merges.length >= MAX_MERGES) break;
  }
  return merges;
}

function adminMerge(state: GitHubState, body: string | undefined): Merge[] {
  try {
    const input = JSON.parse(body ?? '{}') as { repo?: unknown; number?: unknown };
    if (typeof input.repo !== 'string' || typeof input.number !== 'number') return [];
    const [owner, name] = input.repo.split('/');
    const pull = owner && name ? pullOf(state, owner, name, input.number) : undefined;
    return pull === undefined ? [] : [{ pull, into: 'base' }];
  } catch {
    return [];
  }
}

function pullOf(state: GitHubState, owner: string, name: string, number: number): PullRequest | undefined {
  return state.findRepo(owner, name)?.pulls.get(number);
}
