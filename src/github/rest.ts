/**
 * The REST routes, in groups by what they answer (account and search, issues, pull requests,
 * commits and Actions; Git refs, branches and compare in rest-git.ts), each with GitHub's
 * documentation anchor and cost class, on the pieces of rest-kit.ts. `buildRestRouter` is what
 * the emulator routes with.
 */
import { workflowObjects, workflowRuns } from './actions.ts';
import { changedFiles, pullDiff, pullPatch } from './changes.ts';
import { actionsRuns, addActionsRunRoutes } from './rest-actions.ts';
import { addAppRoutes } from './rest-apps.ts';
import { addCiRoutes } from './rest-ci.ts';
import { addCollaboratorRoutes } from './rest-collaborators.ts';
import { addContentsRoutes } from './rest-contents.ts';
import { addGitRoutes } from './rest-git.ts';
import { addHookRoutes } from './rest-hooks.ts';
import { addIssueLabelAndTimelineRoutes, unassignable } from './rest-issues.ts';
import {
  actor,
  bodyField,
  cachedList,
  commentsListed,
  fail,
  intParam,
  listOf,
  mutate,
  notFound,
  numberParam,
  pagedList,
  paginate,
  plainly,
  type RenderedPage,
  type RestContext,
  type RestResult,
  RestRouter,
  repoList,
  sortBy,
  str,
  strings,
  unchanged,
  validation,
  withIssue,
  withPull,
  withRepo,
} from './rest-kit.ts';
import { addMilestoneRoutes, milestoneOfWrite } from './rest-milestones.ts';
import { addReadRoutes } from './rest-reads.ts';
import { addReleaseRoutes } from './rest-releases.ts';
import { addTagRoutes } from './rest-tags.ts';
import { MAX_RESULTS, parseSearch, runSearch, SearchQueryError, type SearchSort } from './search.ts';
import {
  changedFileObject,
  issueCommentObject,
  issueJson,
  organizationSimple,
  pullFullJson,
  pullFullVersion,
  pullSimpleJson,
  repoDetailJson,
  repoObject,
  reviewCommentObject,
  reviewObject,
  userDetailJson,
} from './shapes.ts';
import {
  checkCommentBody,
  type GitHubState,
  GitHubStateError,
  type Issue,
  type IssueComment,
  type PullRequest,
  type Repo,
  type Review,
  type ReviewState,
  sortIssues,
  USER_UPDATED_AT,
  type User,
} from './state.ts';
import { issueVersion } from './world/milestones.ts';

const pullsList = (ctx: RestContext) => repoList(ctx, 'pulls', (repo) => repo.pullsVersion, renderPulls);

function renderPulls(ctx: RestContext, repo: Repo): RenderedPage {
  const q = ctx.query;
  const stateFilter = q.get('state') ?? 'open';
  const sort = q.get('sort') ?? 'created';
  const direction = q.get('direction') ?? (sort === 'created' ? 'desc' : 'asc');
  const keyFn =
    sort === 'updated'
      ? (p: PullRequest) => p.issue.updatedAt
      : sort === 'popularity'
        ? (p: PullRequest) => p.issue.comments.length
        : (p: PullRequest) => p.issue.createdAt;
  const desc = sort === 'long-running' ? direction !== 'desc' : direction === 'desc';
  const wanted = (pull: PullRequest) => stateFilter === 'all' || pull.issue.state === stateFilter;
  const head = q.get('head');
  const base = q.get('base');
  let list: PullRequest[];
  if (head !== undefined) {
    // A head filter starts from the PRs on that branch (a handful), not every PR in the repo.
    const colon = head.indexOf(':');
    const ownerMatches = colon < 0 || head.slice(0, colon).toLowerCase() === repo.owner.login.toLowerCase();
    const headRef = colon < 0 ? head : head.slice(colon + 1);
    const onHead = ownerMatches ? (repo.pullsByHead.get(headRef) ?? []) : [];
    list = sortBy(
      onHead.filter(wanted).map((p) => p as PullRequest & { version: number }),
      keyFn,
      desc,
    );
  } else {
    list = cachedList(repo, `pulls|${stateFilter}|${sort}|${direction}`, repo.pullsVersion, () =>
      sortBy([...repo.pulls.values()].filter(wanted) as (PullRequest & { version: number })[], keyFn, desc),
    );
  }
  if (base !== undefined) list = list.filter((p) => p.base === base);
  const page = paginate(ctx, list);
  return { body: listOf(page.items.map((p) => pullSimpleJson(ctx.state, p))), page: page.page };
}

const issuesList = (ctx: RestContext) => repoList(ctx, 'issues', (repo) => repo.issuesVersion, renderIssues);

function renderIssues(ctx: RestContext, repo: Repo): RenderedPage {
  const q = ctx.query;
  const stateFilter = q.get('state') ?? 'open';
  const sort = q.get('sort') ?? 'created';
  const direction = q.get('direction') ?? 'desc';
  let list = cachedList(repo, `issues|${stateFilter}|${sort}|${direction}`, repo.issuesVersion, () => {
    const items: Issue[] = [];
    for (const issue of repo.issues.values()) {
      if (stateFilter === 'all' || issue.state === stateFilter) items.push(issue);
    }
    return sortIssues(
      items,
      sort === 'updated' || sort === 'comments' ? sort : 'created',
      direction === 'desc',
    );
  });
  const labels = q.get('labels');
  const creator = q.get('creator');
  const assignee = q.get('assignee');
  const since = q.get('since');
  if (labels || creator || assignee || since) {
    const wanted = labels ? labels.split(',').map((l) => l.trim()) : [];
    const sinceMs = since ? Date.parse(since) : Number.NaN;
    list = list.filter(
      (i) =>
        wanted.every((w) => i.labels.some((l) => l.name === w)) &&
        (!creator || i.user.login === creator) &&
        (!assignee ||
          (assignee === 'none'
            ? i.assignees.length === 0
            : assignee === '*'
              ? i.assignees.length > 0
              : i.assignees.some((u) => u.login === assignee))) &&
        (Number.isNaN(sinceMs) || ctx.state.time.clock.toWallMs(i.updatedAt) >= sinceMs),
    );
  }
  const page = paginate(ctx, list);
  return { body: listOf(page.items.map((i) => issueJson(ctx.state, i))), page: page.page };
}

/** GET /search/issues: the query, GitHub's refusals, the first 1,000 results by page. */
function searchIssues(ctx: RestContext): RestResult {
  const q = ctx.query.get('q');
  if (q === undefined || q.trim() === '')
    return fail(422, 'Validation Failed', { errors: [{ resource: 'Search', field: 'q', code: 'missing' }] });
  const version = ctx.state.time.version;
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  let found: Issue[];
  let complete: boolean;
  try {
    const parsed = parseSearch(ctx.state, q, ctx.user);
    const sortParam = ctx.query.get('sort');
    const sort =
      sortParam === 'created' || sortParam === 'updated' || sortParam === 'comments'
        ? { field: sortParam as SearchSort, desc: ctx.query.get('order') !== 'asc' }
        : undefined;
    ({ issues: found, complete } = runSearch(ctx.state, parsed, sort));
  } catch (error) {
    if (!(error instanceof SearchQueryError)) throw error;
    return fail(422, 'Validation Failed', {
      errors: [{ message: error.message, resource: 'Search', field: 'q', code: 'invalid' }],
    });
  }
  const perPage = Math.min(intParam(ctx.query, 'per_page', 30), 100);
  const page = intParam(ctx.query, 'page', 1);
  if ((page - 1) * perPage >= MAX_RESULTS && found.length > 0)
    return fail(422, `Only the first ${MAX_RESULTS} search results are available`);
  const reachable = found.slice(0, MAX_RESULTS);
  const last = Math.max(1, Math.ceil(reachable.length / perPage));
  const items = reachable.slice((page - 1) * perPage, page * perPage);
  // A search result is the issue's JSON with a relevance score.
  const texts = items.map((issue) => `${issueJson(ctx.state, issue).slice(0, -1)},"score":1}`);
  return {
    status: 200,
    // GitHub's answer to a search stopped by its time limit: what was found, and that it stopped.
    body: `{"total_count":${found.length},"incomplete_results":${!complete},"search_type":"lexical","items":${listOf(texts)}}`,
    version,
    page: { page, last },
  };
}

/**
 * An account's repositories (`/users/{u}/repos`, `/orgs/{org}/repos`): `type` (all, owner,
 * public, private, …: every one of them here is the owner's, and a private one is listed only to
 * a caller with a role on it: its owner, a collaborator, a member of its organization), `sort` (created, updated, pushed, full_name) and `direction`
 * (ascending for full_name, else descending, as GitHub's default), paged.
 */
function ownedRepos(ctx: RestContext, owner: User, defaultSort: 'full_name' | 'created'): RestResult {
  const type = ctx.query.get('type') ?? 'all';
  const sort = ctx.query.get('sort') ?? defaultSort;
  const byName = sort === 'full_name';
  const direction = ctx.query.get('direction') ?? (byName ? 'asc' : 'desc');
  const key = (r: Repo): number | string =>
    byName
      ? r.fullName.toLowerCase()
      : sort === 'updated'
        ? r.updatedAt
        : sort === 'pushed'
          ? r.pushedAt
          : r.id;
  const repos = ctx.state
    .reposOwnedBy(owner, ctx.user, key, direction !== 'asc')
    .filter((r) => (type !== 'public' || !r.private) && (type !== 'private' || r.private));
  return repoPage(ctx, repos);
}

/** A page of repositories, as every repository list answers it. */
function repoPage(ctx: RestContext, repos: readonly Repo[]): RestResult {
  return accountListPage(ctx, repos, (repo) => repoObject(ctx.state, repo));
}

/** A page of an account-level list (repositories, organizations): versioned by the repositories' version. */
function accountListPage<T>(ctx: RestContext, items: readonly T[], toJson: (item: T) => object): RestResult {
  const page = paginate(ctx, items);
  return {
    status: 200,
    body: JSON.stringify(page.items.map(toJson)),
    version: ctx.state.refs.reposVersion,
    page: page.page,
  };
}

/** GET …/pulls/{n} as JSON, or as a diff or a patch when the Accept header asks for one. */
function pullAnswer(ctx: RestContext, pull: PullRequest): RestResult {
  // A read starts GitHub's mergeability job, or takes its result (which moves the version).
  ctx.state.mergeability(pull);
  const version = pullFullVersion(pull);
  const lastModified = pull.issue.updatedAt;
  const hit = unchanged(ctx, version);
  if (hit) return { ...hit, lastModified };
  if (ctx.format === 'json' || ctx.format === 'raw')
    return { status: 200, body: pullFullJson(ctx.state, pull), version, lastModified };
  const diff = ctx.format === 'diff';
  return {
    status: 200,
    body: diff ? pullDiff(pull) : pullPatch(ctx.state, pull),
    version,
    lastModified,
    contentType: `application/vnd.github.${diff ? 'diff' : 'patch'}; charset=utf-8`,
    mediaType: `github.v3; param=${ctx.format}; format=${ctx.format}`,
  };
}

/** PUT …/merge: GitHub's refusals (409 stale sha, 405 not mergeable or blocked), else the merge. */
function mergePull(ctx: RestContext, pull: PullRequest): RestResult {
  const method = str(ctx, 'merge_method') ?? 'merge';
  if (method !== 'merge' && method !== 'squash' && method !== 'rebase')
    return validation('PullRequest', 'merge_method', 'invalid');
  const notAllowed = ctx.state.mergeMethodRefusal(pull.issue.repo, method);
  if (notAllowed) return fail(405, notAllowed);
  const refusal = ctx.state.mergeRefusal(pull, str(ctx, 'sha'));
  if (refusal) return fail(refusal.status, refusal.message);
  const merged = mutate(() => {
    ctx.state.mergePullRequest(pull, {
      user: actor(ctx).login,
      method,
      title: str(ctx, 'commit_title'),
      message: str(ctx, 'commit_message'),
    });
    return { status: 200, body: '' };
  }, 'PullRequest');
  if (merged.status !== 200) return merged;
  return {
    status: 200,
    body: JSON.stringify({
      sha: pull.mergeCommitSha,
      merged: true,
      message: 'Pull Request successfully merged',
    }),
  };
}

/**
 * PATCH …/repos/{owner}/{repo}: the settings a control plane reads or sets (`description`, the
 * merge methods allowed, `delete_branch_on_merge`); anything else is ignored, as GitHub ignores
 * what it does not know.
 */
function updateRepo(ctx: RestContext, repo: Repo): RestResult {
  const settings = {
    allow_merge_commit: 'allowMergeCommit',
    allow_squash_merge: 'allowSquashMerge',
    allow_rebase_merge: 'allowRebaseMerge',
    delete_branch_on_merge: 'deleteBranchOnMerge',
    allow_auto_merge: 'allowAutoMerge',
  } as const;
  for (const field of Object.keys(settings)) {
    const value = bodyField(ctx, field);
    if (value !== undefined && typeof value !== 'boolean') return validation('Repository', field, 'invalid');
  }
  const description = bodyField(ctx, 'description');
  if (description !== undefined && description !== null && typeof description !== 'string')
    return validation('Repository', 'description', 'invalid');
  const next = { ...repo.settings };
  for (const [field, key] of Object.entries(settings)) {
    const value = bodyField(ctx, field);
    if (typeof value === 'boolean') next[key] = value;
  }
  if (!next.allowMergeCommit && !next.allowSquashMerge && !next.allowRebaseMerge)
    return fail(422, 'Validation Failed', {
      errors: [
        { resource: 'Repository', code: 'custom', message: 'At least one merge method must be enabled' },
      ],
    });
  ctx.state.updateRepo(repo, { settings: next, description: description as string | null | undefined });
  return { status: 200, body: repoDetailJson(ctx.state, repo) };
}

/** The repository's issue comments, oldest first unless `direction=desc`, updated since `since`. */
function repoComments(ctx: RestContext, repo: Repo): { issue: Issue; comment: IssueComment }[] {
  const all: { issue: Issue; comment: IssueComment }[] = [];
  for (const issue of repo.issues.values())
    for (const comment of issue.comments) all.push({ issue, comment });
  return commentsListed(ctx, all, (found) => found.comment);
}

/** POST …/pulls: GitHub's 422s (no such head or base branch, a PR already open on the head). */
function createPull(ctx: RestContext, repo: Repo): RestResult {
  const head = str(ctx, 'head');
  const base = str(ctx, 'base');
  const title = str(ctx, 'title');
  const issueNumber = bodyField(ctx, 'issue');
  if (!head) return validation('PullRequest', 'head');
  if (!base) return validation('PullRequest', 'base');
  if (!title && typeof issueNumber !== 'number') return validation('PullRequest', 'title');
  const colon = head.indexOf(':');
  const headRef = colon >= 0 ? head.slice(colon + 1) : head;
  if (colon >= 0 && head.slice(0, colon).toLowerCase() !== repo.owner.login.toLowerCase())
    return validation('PullRequest', 'head', 'invalid');
  if (!repo.branches.has(headRef)) return validation('PullRequest', 'head', 'invalid');
  if (!repo.branches.has(base)) return validation('PullRequest', 'base', 'invalid');
  return mutate(() => {
    const pull = ctx.state.openPullRequest(repo, {
      head: headRef,
      base,
      title,
      body: str(ctx, 'body'),
      user: actor(ctx).login,
      draft: bodyField(ctx, 'draft') === true,
      issue: typeof issueNumber === 'number' ? issueNumber : undefined,
    });
    return {
      status: 201,
      body: pullFullJson(ctx.state, pull),
      location: `${ctx.state.apiUrl}/repos/${repo.fullName}/pulls/${pull.issue.number}`,
    };
  }, 'PullRequest');
}

/** PATCH …/issues/{n}: title, body, state (with state_reason), labels and assignees replaced. */
function updateIssue(ctx: RestContext, issue: Issue): RestResult {
  const state = str(ctx, 'state');
  if (state !== undefined && state !== 'open' && state !== 'closed')
    return validation('Issue', 'state', 'invalid');
  const reason = str(ctx, 'state_reason');
  if (reason !== undefined && reason !== 'completed' && reason !== 'not_planned' && reason !== 'reopened')
    return validation('Issue', 'state_reason', 'invalid');
  const labels = strings(ctx, 'labels');
  const assignees = strings(ctx, 'assignees');
  const refused = unassignable(ctx, assignees);
  if (refused) return refused;
  const milestone = milestoneOfWrite(ctx, issue.repo);
  if ('status' in milestone) return milestone;
  return mutate(() => {
    const by = actor(ctx);
    ctx.state.editIssue(
      issue,
      {
        title: str(ctx, 'title'),
        body: str(ctx, 'body'),
        state,
        stateReason: reason === 'completed' || reason === 'not_planned' ? reason : undefined,
      },
      by,
    );
    if (labels !== undefined) ctx.state.setLabels(issue, labels, by);
    if (assignees !== undefined) ctx.state.setAssignees(issue, assignees, by);
    if (milestone.milestone !== undefined) ctx.state.milestones.assign(issue, milestone.milestone);
    return { status: 200, body: issueJson(ctx.state, issue) };
  }, 'Issue');
}

function filesList(ctx: RestContext, pull: PullRequest): RestResult {
  const repo = pull.issue.repo;
  return pagedList(
    ctx,
    pull.version,
    () => changedFiles(pull),
    (file) => changedFileObject(ctx.state, repo, file),
  );
}

const REVIEW_EVENTS: Record<string, ReviewState> = {
  APPROVE: 'APPROVED',
  REQUEST_CHANGES: 'CHANGES_REQUESTED',
  COMMENT: 'COMMENTED',
};

/** A review of the path's pull request; a pending one is its author's alone (404 for anyone else). */
function withReview(ctx: RestContext, fn: (pull: PullRequest, review: Review) => RestResult): RestResult {
  return withPull(ctx, (pull) => {
    const id = numberParam(ctx.params[3]);
    const review = pull.reviews.find(
      (rv) => rv.id === id && (rv.state !== 'PENDING' || rv.user === ctx.user),
    );
    return review === undefined ? notFound() : fn(pull, review);
  });
}

/**
 * POST …/reviews: a review with its inline comments, submitted (APPROVE, REQUEST_CHANGES or
 * COMMENT) or, without an event, PENDING (GitHub's: "Leave this blank to set the review action
 * state to PENDING").
 */
function createReview(ctx: RestContext, pull: PullRequest): RestResult {
  const event = str(ctx, 'event');
  const state = event === undefined ? undefined : REVIEW_EVENTS[event];
  // Without an event GitHub creates a PENDING review, submitted later (`…/reviews/{id}/events`).
  if (event !== undefined && state === undefined) return validation('PullRequestReview', 'event', 'invalid');
  const raw = bodyField(ctx, 'comments');
  const comments = (Array.isArray(raw) ? raw : []).flatMap((c: unknown) => {
    const o = c as { path?: unknown; line?: unknown; position?: unknown; body?: unknown };
    const line = typeof o.line === 'number' ? o.line : typeof o.position === 'number' ? o.position : 1;
    return typeof o.path === 'string' && typeof o.body === 'string'
      ? [{ path: o.path, line, body: o.body }]
      : [];
  });
  return mutateReview(() => {
    const review = ctx.state.submitReviewWithComments(pull, {
      user: actor(ctx).login,
      state: state ?? 'PENDING',
      body: str(ctx, 'body'),
      comments,
    });
    return { status: 200, body: JSON.stringify(reviewObject(ctx.state, pull, review)) };
  });
}

/**
 * A review write, its refusals answered as GitHub answers them: "Validation Failed (simple)",
 * whose errors are plain messages (`["Can not approve your own pull request"]`).
 */
function mutateReview(fn: () => RestResult): RestResult {
  return mutate(() => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof GitHubStateError && error.status === 422)
        return fail(422, 'Unprocessable Entity', { errors: [error.message] });
      throw error;
    }
  }, 'PullRequestReview');
}

/** POST …/pulls/{n}/comments: a review comment on a line, or a reply to one (`in_reply_to`). */
function createReviewComment(ctx: RestContext, pull: PullRequest): RestResult {
  const body = str(ctx, 'body');
  if (body === undefined) return validation('PullRequestReviewComment', 'body');
  const inReplyTo = bodyField(ctx, 'in_reply_to');
  const path = str(ctx, 'path');
  if (typeof inReplyTo !== 'number' && !path) return validation('PullRequestReviewComment', 'path');
  const line = bodyField(ctx, 'line') ?? bodyField(ctx, 'position');
  return mutate(() => {
    const comment = ctx.state.createReviewComment(pull, {
      user: actor(ctx).login,
      body,
      path: path ?? '',
      line: typeof line === 'number' ? line : undefined,
      inReplyTo: typeof inReplyTo === 'number' ? inReplyTo : undefined,
      commitId: str(ctx, 'commit_id'),
    });
    return {
      status: 201,
      body: JSON.stringify(reviewCommentObject(ctx.state, pull, comment)),
      location: `${ctx.state.apiUrl}/repos/${pull.issue.repo.fullName}/pulls/comments/${comment.id}`,
    };
  }, 'PullRequestReviewComment');
}

/** PATCH …/pulls/{n}: title, body, base or state (open/closed). */
function updatePull(ctx: RestContext, pull: PullRequest): RestResult {
  const state = str(ctx, 'state');
  if (state !== undefined && state !== 'open' && state !== 'closed')
    return validation('PullRequest', 'state', 'invalid');
  return mutate(() => {
    ctx.state.editIssue(
      pull.issue,
      { title: str(ctx, 'title'), body: str(ctx, 'body'), base: str(ctx, 'base'), state },
      actor(ctx),
    );
    return { status: 200, body: pullFullJson(ctx.state, pull) };
  }, 'PullRequest');
}

/**
 * The REST routes, in groups by what they answer (Git refs, branches and compare in
 * rest-git.ts). Each route names GitHub's documentation anchor (errors carry it as
 * `documentation_url`) and its cost class (docs/github-emulator.md).
 */
export function buildRestRouter(): RestRouter {
  const r = new RestRouter();
  addAccountRoutes(r);
  addIssueRoutes(r);
  addPullRoutes(r);
  addIssueLabelAndTimelineRoutes(r);
  addCollaboratorRoutes(r);
  addCiRoutes(r);
  addActionRoutes(r);
  addGitRoutes(r);
  addTagRoutes(r);
  addReleaseRoutes(r);
  addMilestoneRoutes(r);
  addHookRoutes(r);
  addContentsRoutes(r);
  addAppRoutes(r);
  addReadRoutes(r);
  return r;
}

/** GitHub's design principles, which `GET /zen` answers one at a time. */
const ZEN = [
  'Responsive is better than fast.',
  "It's not fully shipped until it's fast.",
  'Anything added dilutes everything else.',
  'Practicality beats purity.',
  'Approachable is better than simple.',
  'Mind your words, they are important.',
  'Speak like a human.',
  'Half measures are as bad as nothing at all.',
  'Encourage flow.',
  'Non-blocking is better than blocking.',
  'Favor focus over features.',
  'Avoid administrative distraction.',
  'Design for failure.',
  'Keep it logically awesome.',
];
/** Each world's next saying: deterministic, as the rest of a run. */
const zenTurns = new WeakMap<GitHubState, number>();

/** The API root, meta information and zen, the rate limit, users, the caller's repositories, search and a repository. */
function addAccountRoutes(r: RestRouter): void {
  r.add('GET', '/', 'meta/meta#github-api-root', (ctx) => {
    const api = ctx.state.apiUrl;
    const web = ctx.state.webUrl;
    return {
      status: 200,
      body: JSON.stringify({
        current_user_url: `${api}/user`,
        current_user_authorizations_html_url: `${web}/settings/connections/applications{/client_id}`,
        authorizations_url: `${api}/authorizations`,
        code_search_url: `${api}/search/code?q={query}{&page,per_page,sort,order}`,
        commit_search_url: `${api}/search/commits?q={query}{&page,per_page,sort,order}`,
        emails_url: `${api}/user/emails`,
        emojis_url: `${api}/emojis`,
        events_url: `${api}/events`,
        feeds_url: `${api}/feeds`,
        followers_url: `${api}/user/followers`,
        following_url: `${api}/user/following{/target}`,
        gists_url: `${api}/gists{/gist_id}`,
        hub_url: `${api}/hub`,
        issue_search_url: `${api}/search/issues?q={query}{&page,per_page,sort,order}`,
        issues_url: `${api}/issues`,
        keys_url: `${api}/user/keys`,
        label_search_url: `${api}/search/labels?q={query}&repository_id={repository_id}{&page,per_page}`,
        notifications_url: `${api}/notifications`,
        organization_url: `${api}/orgs/{org}`,
        organization_repositories_url: `${api}/orgs/{org}/repos{?type,page,per_page,sort}`,
        organization_teams_url: `${api}/orgs/{org}/teams`,
        public_gists_url: `${api}/gists/public`,
        rate_limit_url: `${api}/rate_limit`,
        repository_url: `${api}/repos/{owner}/{repo}`,
        repository_search_url: `${api}/search/repositories?q={query}{&page,per_page,sort,order}`,
        current_user_repositories_url: `${api}/user/repos{?type,page,per_page,sort}`,
        starred_url: `${api}/user/starred{/owner}{/repo}`,
        starred_gists_url: `${api}/gists/starred`,
        topic_search_url: `${api}/search/topics?q={query}{&page,per_page}`,
        user_url: `${api}/users/{user}`,
        user_organizations_url: `${api}/user/orgs`,
        user_repositories_url: `${api}/users/{user}/repos{?type,page,per_page,sort}`,
        user_search_url: `${api}/search/users?q={query}{&page,per_page,sort,order}`,
      }),
    };
  });

  // GitHub's meta information: the addresses its services answer from. Here every service is the
  // emulator, served on the loopback addresses; no SSH (git is served over HTTP only).
  r.add('GET', '/meta', 'meta/meta#get-apiname-meta-information', (ctx) => {
    const host = new URL(ctx.state.webUrl).host;
    const loopback = ['127.0.0.1/32', '::1/128'];
    return {
      status: 200,
      body: JSON.stringify({
        verifiable_password_authentication: false,
        ssh_key_fingerprints: {},
        ssh_keys: [],
        hooks: loopback,
        web: loopback,
        api: loopback,
        git: loopback,
        domains: { website: [host], packages: [], actions: [] },
      }),
      // The answer never changes within a run: its one version, for a conditional GET's 304.
      version: 1,
    };
  });

  // One of GitHub's design principles, a different one each call (in turn), as text/plain.
  r.add('GET', '/zen', 'meta/meta#get-the-zen-of-github', (ctx) => {
    const turn = zenTurns.get(ctx.state) ?? 0;
    zenTurns.set(ctx.state, turn + 1);
    return {
      status: 200,
      body: ZEN[turn % ZEN.length]!,
      contentType: 'text/plain;charset=utf-8',
    };
  });

  r.add(
    'GET',
    '/rate_limit',
    'rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user',
    (ctx) => ({ status: 200, body: JSON.stringify(ctx.ledger.rateLimitJson(ctx.identity)) }),
    { free: true },
  );

  r.add('GET', '/user', 'users/users#get-the-authenticated-user', (ctx) =>
    ctx.user
      ? {
          status: 200,
          body: userDetailJson(ctx.state, ctx.user, true),
          version: ctx.user.id,
          lastModified: USER_UPDATED_AT,
        }
      : fail(401, 'Requires authentication'),
  );

  r.add('GET', '/user/repos', 'repos/repos#list-repositories-for-the-authenticated-user', (ctx) => {
    if (!ctx.user) return fail(401, 'Requires authentication');
    return repoPage(
      ctx,
      [...ctx.state.repos.values()].sort((a, b) => (a.fullName < b.fullName ? -1 : 1)),
    );
  });

  // The repositories an account owns, and the organizations a user belongs to: how a control
  // plane that serves "every repository of an owner" finds its work.
  r.add('GET', '/users/{username}/repos', 'repos/repos#list-repositories-for-a-user', (ctx) => {
    const owner = ctx.state.findUser(ctx.params[0]!);
    if (owner === undefined) return notFound();
    return ownedRepos(ctx, owner, 'full_name');
  });
  r.add('GET', '/orgs/{org}/repos', 'repos/repos#list-organization-repositories', (ctx) => {
    const org = ctx.state.findUser(ctx.params[0]!);
    if (org === undefined || org.type !== 'Organization') return notFound();
    return ownedRepos(ctx, org, 'created');
  });
  r.add('GET', '/user/orgs', 'orgs/orgs#list-organizations-for-the-authenticated-user', (ctx) => {
    if (!ctx.user) return fail(401, 'Requires authentication');
    const me = ctx.user;
    const orgs = [...ctx.state.users.values()]
      .filter((u) => u.type === 'Organization' && u.members?.has(me) === true)
      .sort((a, b) => a.id - b.id);
    return accountListPage(ctx, orgs, (org) => organizationSimple(ctx.state, org));
  });

  r.add('GET', '/users/{username}', 'users/users#get-a-user', (ctx) => {
    const user = ctx.state.findUser(ctx.params[0]!);
    return user
      ? {
          status: 200,
          body: userDetailJson(ctx.state, user),
          version: user.id,
          lastModified: USER_UPDATED_AT,
        }
      : notFound();
  });

  r.add('GET', '/search/issues', 'search/search#search-issues-and-pull-requests', searchIssues, {
    resource: 'search',
  });

  r.add('PATCH', '/repos/{owner}/{repo}', 'repos/repos#update-a-repository', (ctx) =>
    withRepo(ctx, (repo) => updateRepo(ctx, repo)),
  );

  r.add('GET', '/repos/{owner}/{repo}', 'repos/repos#get-a-repository', (ctx) =>
    withRepo(ctx, (repo) => ({
      status: 200,
      body: repoDetailJson(ctx.state, repo),
      version: Math.max(repo.version, repo.issuesVersion, repo.pushVersion),
      // The object's last change: its own (updated_at) or a push (pushed_at).
      lastModified: Math.max(repo.updatedAt, repo.pushedAt),
    })),
  );
}

/** Issues, their comments and labels. */
function addIssueRoutes(r: RestRouter): void {
  r.add('GET', '/repos/{owner}/{repo}/issues', 'issues/issues#list-repository-issues', issuesList);

  r.add(
    'POST',
    '/repos/{owner}/{repo}/issues',
    'issues/issues#create-an-issue',
    (ctx) =>
      withRepo(ctx, (repo) => {
        const title = str(ctx, 'title');
        if (!title) return validation('Issue', 'title');
        const assignees = strings(ctx, 'assignees');
        const refused = unassignable(ctx, assignees);
        if (refused) return refused;
        const milestone = milestoneOfWrite(ctx, repo);
        if ('status' in milestone) return milestone;
        return mutate(() => {
          const issue = ctx.state.createIssue(repo, {
            title,
            body: str(ctx, 'body'),
            user: actor(ctx).login,
            labels: strings(ctx, 'labels'),
            assignees,
          });
          if (milestone.milestone) ctx.state.milestones.assign(issue, milestone.milestone);
          return {
            status: 201,
            body: issueJson(ctx.state, issue),
            location: `${ctx.state.apiUrl}/repos/${repo.fullName}/issues/${issue.number}`,
          };
        }, 'Issue');
      }),
    { contentCreating: true },
  );

  r.add('GET', '/repos/{owner}/{repo}/issues/{issue_number}', 'issues/issues#get-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) => {
      const lastModified = issue.updatedAt;
      // Its milestone's counts are in it: the version moves with them too.
      const version = issueVersion(issue);
      const hit = unchanged(ctx, version);
      if (hit) return { ...hit, lastModified };
      return { status: 200, body: issueJson(ctx.state, issue), version, lastModified };
    }),
  );

  r.add('PATCH', '/repos/{owner}/{repo}/issues/{issue_number}', 'issues/issues#update-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) => updateIssue(ctx, issue)),
  );

  r.add(
    'GET',
    '/repos/{owner}/{repo}/issues/{issue_number}/comments',
    'issues/comments#list-issue-comments',
    (ctx) =>
      withIssue(ctx, 2, (issue) =>
        pagedList(
          ctx,
          issue.commentsVersion,
          () => issue.comments,
          (c) => issueCommentObject(ctx.state, issue, c),
        ),
      ),
  );

  // Every issue's and pull request's comments in the repository (a literal segment: never an
  // issue numbered "comments"): `sort` created or updated, `direction`, `since`.
  r.add(
    'GET',
    '/repos/{owner}/{repo}/issues/comments',
    'issues/comments#list-issue-comments-for-a-repository',
    (ctx) =>
      withRepo(ctx, (repo) =>
        pagedList(
          ctx,
          repo.issuesVersion,
          () => repoComments(ctx, repo),
          ({ issue, comment }) => issueCommentObject(ctx.state, issue, comment),
        ),
      ),
  );

  r.add(
    'POST',
    '/repos/{owner}/{repo}/issues/{issue_number}/comments',
    'issues/comments#create-an-issue-comment',
    (ctx) =>
      withIssue(ctx, 2, (issue) => {
        const body = str(ctx, 'body');
        if (body === undefined) return validation('IssueComment', 'body');
        return mutate(() => {
          checkCommentBody(body);
          const comment = ctx.state.postIssueComment(issue, { body, user: actor(ctx).login });
          return {
            status: 201,
            body: JSON.stringify(issueCommentObject(ctx.state, issue, comment)),
            location: `${ctx.state.apiUrl}/repos/${issue.repo.fullName}/issues/comments/${comment.id}`,
          };
        }, 'IssueComment');
      }),
    { contentCreating: true },
  );
}

/** Pull requests, their files, reviews, review comments and merges. */
function addPullRoutes(r: RestRouter): void {
  r.add('GET', '/repos/{owner}/{repo}/pulls', 'pulls/pulls#list-pull-requests', pullsList);

  r.add(
    'POST',
    '/repos/{owner}/{repo}/pulls',
    'pulls/pulls#create-a-pull-request',
    (ctx) => withRepo(ctx, (repo) => createPull(ctx, repo)),
    { contentCreating: true },
  );

  r.add('GET', '/repos/{owner}/{repo}/pulls/{pull_number}', 'pulls/pulls#get-a-pull-request', (ctx) =>
    withPull(ctx, (pull) => pullAnswer(ctx, pull)),
  );

  r.add('PATCH', '/repos/{owner}/{repo}/pulls/{pull_number}', 'pulls/pulls#update-a-pull-request', (ctx) =>
    withPull(ctx, (pull) => updatePull(ctx, pull)),
  );

  r.add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}/files',
    'pulls/pulls#list-pull-requests-files',
    (ctx) => withPull(ctx, (pull) => filesList(ctx, pull)),
  );

  r.add(
    'POST',
    '/repos/{owner}/{repo}/pulls/{pull_number}/reviews',
    'pulls/reviews#create-a-review-for-a-pull-request',
    (ctx) => withPull(ctx, (pull) => createReview(ctx, pull)),
    { contentCreating: true },
  );

  r.add('PUT', '/repos/{owner}/{repo}/pulls/{pull_number}/merge', 'pulls/pulls#merge-a-pull-request', (ctx) =>
    withPull(ctx, (pull) => mergePull(ctx, pull)),
  );

  // "Update branch": the base merged into the head (GitHub answers 202 and does it in the
  // background; here it is done by the answer).
  r.add(
    'PUT',
    '/repos/{owner}/{repo}/pulls/{pull_number}/update-branch',
    'pulls/pulls#update-a-pull-request-branch',
    (ctx) =>
      withPull(ctx, (pull) => {
        const expected = bodyField(ctx, 'expected_head_sha');
        if (expected !== undefined && typeof expected !== 'string')
          return validation('PullRequest', 'expected_head_sha', 'invalid');
        return plainly(() => {
          ctx.state.updatePullBranch(pull, expected, actor(ctx));
          return {
            status: 202,
            body: JSON.stringify({
              message: 'Updating pull request branch.',
              url: `${ctx.state.webUrl}/repos/${pull.issue.repo.fullName}/pulls/${pull.issue.number}`,
            }),
          };
        });
      }),
  );

  // "Check if a pull request has been merged": 204 when it has, 404 when not.
  r.add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}/merge',
    'pulls/pulls#check-if-a-pull-request-has-been-merged',
    (ctx) => withPull(ctx, (pull) => (pull.merged ? { status: 204, body: '' } : notFound())),
  );

  const review = '/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}';
  r.add('GET', review, 'pulls/reviews#get-a-review-for-a-pull-request', (ctx) =>
    withReview(ctx, (pull, rv) => ({
      status: 200,
      body: JSON.stringify(reviewObject(ctx.state, pull, rv)),
      version: pull.reviewsVersion,
    })),
  );
  r.add('POST', `${review}/events`, 'pulls/reviews#submit-a-review-for-a-pull-request', (ctx) =>
    withReview(ctx, (pull, rv) => {
      const event = str(ctx, 'event');
      const state = event === undefined ? undefined : REVIEW_EVENTS[event];
      if (state === undefined)
        return validation('PullRequestReview', 'event', event === undefined ? 'missing_field' : 'invalid');
      return mutateReview(() => {
        ctx.state.submitPendingReview(pull, rv, { state, body: str(ctx, 'body') });
        return { status: 200, body: JSON.stringify(reviewObject(ctx.state, pull, rv)) };
      });
    }),
  );
  r.add('DELETE', review, 'pulls/reviews#delete-a-pending-review-for-a-pull-request', (ctx) =>
    withReview(ctx, (pull, rv) => {
      // GitHub's "Validation Failed (simple)": its errors are plain messages.
      if (rv.state !== 'PENDING')
        return fail(422, 'Unprocessable Entity', {
          errors: ['Can not delete a non-pending pull request review'],
        });
      ctx.state.deletePendingReview(pull, rv);
      return { status: 200, body: JSON.stringify(reviewObject(ctx.state, pull, rv)) };
    }),
  );

  r.add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}/reviews',
    'pulls/reviews#list-reviews-for-a-pull-request',
    (ctx) =>
      withPull(ctx, (pull) =>
        pagedList(
          ctx,
          pull.reviewsVersion,
          // A pending review is its author's alone until submitted.
          () => pull.reviews.filter((rv) => rv.state !== 'PENDING' || rv.user === ctx.user),
          (rv) => reviewObject(ctx.state, pull, rv),
        ),
      ),
  );

  r.add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}/comments',
    'pulls/comments#list-review-comments-on-a-pull-request',
    (ctx) =>
      withPull(ctx, (pull) => {
        const desc = ctx.query.get('direction') === 'desc';
        return pagedList(
          ctx,
          pull.reviewCommentsVersion,
          () => (desc ? [...pull.reviewComments].reverse() : pull.reviewComments),
          (c) => reviewCommentObject(ctx.state, pull, c),
        );
      }),
  );

  r.add(
    'POST',
    '/repos/{owner}/{repo}/pulls/{pull_number}/comments',
    'pulls/comments#create-a-review-comment-for-a-pull-request',
    (ctx) => withPull(ctx, (pull) => createReviewComment(ctx, pull)),
    { contentCreating: true },
  );
}

/** Actions runs and workflows. */
function addActionRoutes(r: RestRouter): void {
  r.add(
    'GET',
    '/repos/{owner}/{repo}/actions/runs',
    'actions/workflow-runs#list-workflow-runs-for-a-repository',
    (ctx) => withRepo(ctx, (repo) => actionsRuns(ctx, repo)),
  );
  addActionsRunRoutes(r);

  r.add(
    'GET',
    '/repos/{owner}/{repo}/actions/workflows',
    'actions/workflows#list-repository-workflows',
    (ctx) =>
      withRepo(ctx, (repo) => {
        const workflows = workflowObjects(ctx.state, repo, workflowRuns(repo));
        const page = paginate(ctx, workflows);
        return {
          status: 200,
          body: JSON.stringify({ total_count: workflows.length, workflows: page.items }),
          version: ctx.state.time.version,
          page: page.page,
        };
      }),
  );
}
