/**
 * GitHub REST JSON shapes: the fields clients read, named and nested as api.github.com does.
 * Objects that are listed often (users, repos, issues, pull requests) are rendered to JSON text
 * once per version and reused, so a list body is a join of cached strings.
 */
import { ADDED_PER_COMMIT, type ChangedFile, REMOVED_PER_COMMIT } from './changes.ts';
import {
  type CheckApp,
  type CheckRun,
  type CheckSuite,
  type Commit,
  type CommitStatus,
  type GitHubState,
  type Issue,
  type IssueComment,
  type JsonCache,
  type Label,
  type Milestone,
  type PullRequest,
  type Release,
  type Repo,
  type Review,
  type ReviewComment,
  type TagObject,
  USER_CREATED_AT,
  USER_UPDATED_AT,
  type User,
} from './state.ts';
import { association } from './world/access.ts';
import { type GitIdent, gitDate } from './world/git-objects.ts';
import { issueVersion } from './world/milestones.ts';
import type { Reaction } from './world/reactions.ts';

function cached(
  state: GitHubState,
  holder: { [k: string]: unknown },
  field: string,
  version: number,
  render: () => unknown,
): string {
  const cache = holder[field] as JsonCache | undefined;
  if (cache !== undefined && cache.version === version && cache.epoch === state.urlEpoch) return cache.text;
  const text = JSON.stringify(render());
  holder[field] = { version, epoch: state.urlEpoch, text };
  return text;
}

const userObjects = new WeakMap<User, { epoch: number; value: Record<string, unknown> }>();

/** A user's web page; a bot's is its app's (`https://github.com/apps/github-actions`), as GitHub links it. */
export function webProfile(state: GitHubState, user: User): string {
  return user.type === 'Bot' && user.login.endsWith('[bot]')
    ? `${state.webUrl}/apps/${encodeURIComponent(user.login.slice(0, -'[bot]'.length))}`
    : `${state.webUrl}/${encodeURIComponent(user.login)}`;
}

export function userObject(state: GitHubState, user: User): Record<string, unknown> {
  const hit = userObjects.get(user);
  if (hit && hit.epoch === state.urlEpoch) return hit.value;
  // A bot's login has brackets (`github-actions[bot]`): GitHub percent-encodes them in its URLs.
  const api = `${state.apiUrl}/users/${encodeURIComponent(user.login)}`;
  const value = {
    login: user.login,
    id: user.id,
    node_id: user.nodeId,
    avatar_url: `https://avatars.githubusercontent.com/u/${user.id}?v=4`,
    gravatar_id: '',
    url: api,
    html_url: webProfile(state, user),
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: user.type,
    user_view_type: 'public',
    site_admin: false,
  };
  userObjects.set(user, { epoch: state.urlEpoch, value });
  return value;
}

/**
 * A user as `GET /users/{username}` answers ("public-user"), or as `GET /user` answers the
 * token's own user, with the private counts only its owner sees ("private-user").
 */
export function userDetailJson(state: GitHubState, user: User, own = false): string {
  const repos = [...state.repos.values()].filter((r) => r.owner === user);
  const visible = {
    ...userObject(state, user),
    name: user.name,
    company: null,
    blog: '',
    location: null,
    email: null,
    hireable: null,
    bio: null,
    twitter_username: null,
    public_repos: repos.filter((r) => !r.private).length,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: state.time.iso(USER_CREATED_AT),
    updated_at: state.time.iso(USER_UPDATED_AT),
  };
  if (!own) return JSON.stringify(visible);
  const privateRepos = repos.filter((r) => r.private).length;
  return JSON.stringify({
    ...visible,
    private_gists: 0,
    total_private_repos: privateRepos,
    owned_private_repos: privateRepos,
    disk_usage: 0,
    collaborators: 0,
    two_factor_authentication: false,
  });
}

const repoObjects = new WeakMap<Repo, { epoch: number; version: number; value: Record<string, unknown> }>();

export function repoObject(state: GitHubState, repo: Repo): Record<string, unknown> {
  const hit = repoObjects.get(repo);
  if (hit && hit.epoch === state.urlEpoch && hit.version === repo.pushVersion) return hit.value;
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const web = `${state.webUrl}/${repo.fullName}`;
  const host = new URL(state.webUrl).host;
  let open = 0;
  for (const issue of repo.issues.values()) if (issue.state === 'open') open++;
  const value = {
    id: repo.id,
    node_id: repo.nodeId,
    name: repo.name,
    full_name: repo.fullName,
    private: repo.private,
    owner: userObject(state, repo.owner),
    html_url: web,
    description: repo.description,
    fork: false,
    url: api,
    ...repoUrls(api),
    created_at: state.time.iso(repo.createdAt),
    updated_at: state.time.iso(repo.updatedAt),
    pushed_at: state.time.iso(repo.pushedAt),
    git_url: `git://${host}/${repo.fullName}.git`,
    ssh_url: `git@${host}:${repo.fullName}.git`,
    clone_url: `${web}.git`,
    svn_url: web,
    homepage: null,
    size: 0,
    stargazers_count: 0,
    watchers_count: 0,
    language: null,
    has_issues: true,
    has_projects: false,
    has_downloads: true,
    has_wiki: false,
    has_pages: false,
    has_discussions: false,
    forks_count: 0,
    mirror_url: null,
    archived: false,
    disabled: false,
    // As of the last push: the object is rendered once per push (open issues move in between).
    open_issues_count: open,
    license: null,
    allow_forking: true,
    is_template: false,
    web_commit_signoff_required: false,
    topics: repo.topics,
    visibility: repo.private ? 'private' : 'public',
    forks: 0,
    open_issues: open,
    watchers: 0,
    default_branch: repo.defaultBranch,
  };
  repoObjects.set(repo, { epoch: state.urlEpoch, version: repo.pushVersion, value });
  return value;
}

/** The URL templates of a repository object, as api.github.com writes them. */
function repoUrls(api: string): Record<string, string> {
  return {
    forks_url: `${api}/forks`,
    keys_url: `${api}/keys{/key_id}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    teams_url: `${api}/teams`,
    hooks_url: `${api}/hooks`,
    issue_events_url: `${api}/issues/events{/number}`,
    events_url: `${api}/events`,
    assignees_url: `${api}/assignees{/user}`,
    branches_url: `${api}/branches{/branch}`,
    tags_url: `${api}/tags`,
    blobs_url: `${api}/git/blobs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    trees_url: `${api}/git/trees{/sha}`,
    statuses_url: `${api}/statuses/{sha}`,
    languages_url: `${api}/languages`,
    stargazers_url: `${api}/stargazers`,
    contributors_url: `${api}/contributors`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    commits_url: `${api}/commits{/sha}`,
    git_commits_url: `${api}/git/commits{/sha}`,
    comments_url: `${api}/comments{/number}`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    contents_url: `${api}/contents/{+path}`,
    compare_url: `${api}/compare/{base}...{head}`,
    merges_url: `${api}/merges`,
    archive_url: `${api}/{archive_format}{/ref}`,
    downloads_url: `${api}/downloads`,
    issues_url: `${api}/issues{/number}`,
    pulls_url: `${api}/pulls{/number}`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    labels_url: `${api}/labels{/name}`,
    releases_url: `${api}/releases{/id}`,
    deployments_url: `${api}/deployments`,
  };
}

export function repoDetailJson(state: GitHubState, repo: Repo): string {
  let open = 0;
  for (const issue of repo.issues.values()) if (issue.state === 'open') open++;
  return JSON.stringify({
    ...repoObject(state, repo),
    open_issues_count: open,
    open_issues: open,
    network_count: 0,
    subscribers_count: 0,
    permissions: { admin: false, maintain: false, push: true, triage: true, pull: true },
    allow_merge_commit: repo.settings.allowMergeCommit,
    allow_squash_merge: repo.settings.allowSquashMerge,
    allow_rebase_merge: repo.settings.allowRebaseMerge,
    allow_auto_merge: repo.settings.allowAutoMerge,
    allow_update_branch: false,
    use_squash_pr_title_as_default: false,
    squash_merge_commit_title: 'COMMIT_OR_PR_TITLE',
    squash_merge_commit_message: 'COMMIT_MESSAGES',
    merge_commit_title: 'MERGE_MESSAGE',
    merge_commit_message: 'PR_TITLE',
    delete_branch_on_merge: repo.settings.deleteBranchOnMerge,
    temp_clone_token: '',
    ...(repo.owner.type === 'Organization' ? { organization: userObject(state, repo.owner) } : {}),
  });
}

export function labelObject(state: GitHubState, repo: Repo, l: Label): Record<string, unknown> {
  return {
    id: l.id,
    node_id: l.nodeId,
    url: `${state.apiUrl}/repos/${repo.fullName}/labels/${encodeURIComponent(l.name)}`,
    name: l.name,
    color: l.color,
    default: false,
    description: l.description,
  };
}

export function labelsJson(state: GitHubState, repo: Repo, issue: Issue): unknown[] {
  return issue.labels.map((l) => labelObject(state, repo, l));
}

/** No reactions, in GitHub's shape: a subject just made, or one the emulator takes none on (a review comment). */
export function reactions(url: string): Record<string, unknown> {
  return {
    url,
    total_count: 0,
    '+1': 0,
    '-1': 0,
    laugh: 0,
    hooray: 0,
    confused: 0,
    heart: 0,
    rocket: 0,
    eyes: 0,
  };
}

/** Who closed an issue: the actor of its latest `closed` event. */
function closer(state: GitHubState, issue: Issue): Record<string, unknown> | null {
  for (let i = issue.events.length - 1; i >= 0; i--)
    if (issue.events[i]!.event === 'closed') return userObject(state, issue.events[i]!.actor);
  return null;
}

export function issueJson(state: GitHubState, issue: Issue): string {
  return cached(state, issue as never, 'json', issueVersion(issue), () => {
    const repo = issue.repo;
    const api = `${state.apiUrl}/repos/${repo.fullName}`;
    const html = `${state.webUrl}/${repo.fullName}`;
    const pull = issue.pull;
    return {
      url: `${api}/issues/${issue.number}`,
      repository_url: api,
      labels_url: `${api}/issues/${issue.number}/labels{/name}`,
      comments_url: `${api}/issues/${issue.number}/comments`,
      events_url: `${api}/issues/${issue.number}/events`,
      timeline_url: `${api}/issues/${issue.number}/timeline`,
      html_url: `${html}/${pull ? 'pull' : 'issues'}/${issue.number}`,
      id: issue.id,
      node_id: issue.nodeId,
      number: issue.number,
      title: issue.title,
      user: userObject(state, issue.user),
      labels: labelsJson(state, repo, issue),
      state: issue.state,
      locked: false,
      assignee: issue.assignees[0] ? userObject(state, issue.assignees[0]) : null,
      assignees: issue.assignees.map((u) => userObject(state, u)),
      milestone: issue.milestone == null ? null : milestoneObject(state, repo, issue.milestone),
      comments: issue.comments.length,
      created_at: state.time.iso(issue.createdAt),
      updated_at: state.time.iso(issue.updatedAt),
      closed_at: issue.closedAt === null ? null : state.time.iso(issue.closedAt),
      author_association: association(issue.user, repo),
      active_lock_reason: null,
      ...(pull
        ? {
            draft: pull.draft,
            pull_request: {
              url: `${api}/pulls/${issue.number}`,
              html_url: `${html}/pull/${issue.number}`,
              diff_url: `${html}/pull/${issue.number}.diff`,
              patch_url: `${html}/pull/${issue.number}.patch`,
              merged_at: pull.mergedAt === null ? null : state.time.iso(pull.mergedAt),
            },
          }
        : {}),
      body: issue.body,
      closed_by: issue.state === 'closed' ? closer(state, issue) : null,
      reactions: state.reactions.rollup(issue, `${api}/issues/${issue.number}/reactions`),
      performed_via_github_app: null,
      state_reason: issue.stateReason,
    };
  });
}

function branchRef(state: GitHubState, repo: Repo, ref: string, sha: string): Record<string, unknown> {
  return {
    label: `${repo.owner.login}:${ref}`,
    ref,
    sha,
    user: userObject(state, repo.owner),
    repo: repoObject(state, repo),
  };
}

function pullObject(state: GitHubState, pull: PullRequest): Record<string, unknown> {
  const issue = pull.issue;
  const repo = issue.repo;
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const html = `${state.webUrl}/${repo.fullName}/pull/${issue.number}`;
  return {
    url: `${api}/pulls/${issue.number}`,
    id: pull.id,
    node_id: pull.nodeId,
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: `${api}/issues/${issue.number}`,
    commits_url: `${api}/pulls/${issue.number}/commits`,
    review_comments_url: `${api}/pulls/${issue.number}/comments`,
    review_comment_url: `${api}/pulls/comments{/number}`,
    comments_url: `${api}/issues/${issue.number}/comments`,
    statuses_url: `${api}/statuses/${pull.headSha}`,
    number: issue.number,
    state: issue.state,
    locked: false,
    title: issue.title,
    user: userObject(state, issue.user),
    body: issue.body,
    labels: labelsJson(state, repo, issue),
    milestone: null,
    active_lock_reason: null,
    created_at: state.time.iso(issue.createdAt),
    updated_at: state.time.iso(issue.updatedAt),
    closed_at: issue.closedAt === null ? null : state.time.iso(issue.closedAt),
    merged_at: pull.mergedAt === null ? null : state.time.iso(pull.mergedAt),
    merge_commit_sha: pull.mergeCommitSha,
    assignee: issue.assignees[0] ? userObject(state, issue.assignees[0]) : null,
    assignees: issue.assignees.map((u) => userObject(state, u)),
    requested_reviewers: (pull.requestedReviewers ?? []).map((u) => userObject(state, u)),
    requested_teams: [],
    head: branchRef(state, repo, pull.head, pull.headSha),
    base: branchRef(state, repo, pull.base, pull.baseSha),
    _links: {
      self: { href: `${api}/pulls/${issue.number}` },
      html: { href: html },
      issue: { href: `${api}/issues/${issue.number}` },
      comments: { href: `${api}/issues/${issue.number}/comments` },
      review_comments: { href: `${api}/pulls/${issue.number}/comments` },
      review_comment: { href: `${api}/pulls/comments{/number}` },
      commits: { href: `${api}/pulls/${issue.number}/commits` },
      statuses: { href: `${api}/statuses/${pull.headSha}` },
    },
    author_association: association(issue.user, repo),
    auto_merge:
      pull.autoMerge === undefined
        ? null
        : {
            enabled_by: userObject(state, pull.autoMerge.enabledBy),
            merge_method: pull.autoMerge.method,
            // What the merge commit will say when its enabler gave it; empty when GitHub's default.
            commit_title: pull.autoMerge.title ?? '',
            commit_message: pull.autoMerge.message ?? '',
          },
    draft: pull.draft,
  };
}

/** Version of a pull request's list-item shape: its own fields and the repository it embeds. */
function pullVersion(pull: PullRequest): number {
  return Math.max(pull.issue.repo.pushVersion, pull.version);
}

/** The list-item shape ("pull-request-simple"). */
export function pullSimpleJson(state: GitHubState, pull: PullRequest): string {
  return cached(state, pull as never, 'json', pullVersion(pull), () => pullObject(state, pull));
}

/**
 * Version of everything the full pull request shows: its own fields, the repository it embeds
 * (head.repo, base.repo: a push anywhere in it moves pushed_at) and its head's checks.
 */
export function pullFullVersion(pull: PullRequest): number {
  const own = pullVersion(pull);
  const commit = pull.issue.repo.commits.get(pull.headSha);
  return commit ? Math.max(commit.version, own) : own;
}

export function pullFullJson(state: GitHubState, pull: PullRequest): string {
  return cached(state, pull as never, 'fullJson', pullFullVersion(pull), () => ({
    ...pullObject(state, pull),
    merged: pull.merged,
    mergeable: pull.issue.state === 'open' ? pull.mergeable : null,
    rebaseable: pull.issue.state === 'open' ? pull.mergeable : null,
    mergeable_state: state.mergeableState(pull),
    merged_by: pull.mergedBy ? userObject(state, pull.mergedBy) : null,
    comments: pull.issue.comments.length,
    review_comments: pull.reviewComments.length,
    maintainer_can_modify: false,
    commits: pull.commits.length,
    additions: ADDED_PER_COMMIT * pull.commits.length,
    deletions: REMOVED_PER_COMMIT * pull.commits.length,
    changed_files: pull.commits.length,
  }));
}

export function issueCommentObject(
  state: GitHubState,
  issue: Issue,
  c: IssueComment,
): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${issue.repo.fullName}`;
  return {
    url: `${api}/issues/comments/${c.id}`,
    html_url: `${state.webUrl}/${issue.repo.fullName}/${issue.pull ? 'pull' : 'issues'}/${issue.number}#issuecomment-${c.id}`,
    issue_url: `${api}/issues/${issue.number}`,
    id: c.id,
    node_id: c.nodeId,
    user: userObject(state, c.user),
    created_at: state.time.iso(c.createdAt),
    updated_at: state.time.iso(c.updatedAt),
    author_association: association(c.user, issue.repo),
    body: c.body,
  };
}

/** A reaction as GitHub lists one. */
export function reactionObject(state: GitHubState, r: Reaction): Record<string, unknown> {
  return {
    id: r.id,
    node_id: r.nodeId,
    user: userObject(state, r.user),
    content: r.content,
    created_at: state.time.iso(r.createdAt),
  };
}

export function reviewObject(state: GitHubState, pull: PullRequest, r: Review): Record<string, unknown> {
  const repo = pull.issue.repo;
  const html = `${state.webUrl}/${repo.fullName}/pull/${pull.issue.number}`;
  return {
    id: r.id,
    node_id: r.nodeId,
    user: userObject(state, r.user),
    body: r.body,
    state: r.state,
    html_url: `${html}#pullrequestreview-${r.id}`,
    pull_request_url: `${state.apiUrl}/repos/${repo.fullName}/pulls/${pull.issue.number}`,
    author_association: association(r.user, repo),
    _links: {
      html: { href: `${html}#pullrequestreview-${r.id}` },
      pull_request: { href: `${state.apiUrl}/repos/${repo.fullName}/pulls/${pull.issue.number}` },
    },
    // A pending review has no submitted_at at all (GitHub leaves the field out).
    ...(r.submittedAt === null ? {} : { submitted_at: state.time.iso(r.submittedAt) }),
    commit_id: r.commitId,
  };
}

export function reviewCommentObject(
  state: GitHubState,
  pull: PullRequest,
  c: ReviewComment,
): Record<string, unknown> {
  const repo = pull.issue.repo;
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const html = `${state.webUrl}/${repo.fullName}/pull/${pull.issue.number}#discussion_r${c.id}`;
  return {
    url: `${api}/pulls/comments/${c.id}`,
    pull_request_review_id: c.reviewId,
    id: c.id,
    node_id: c.nodeId,
    diff_hunk: `@@ -${c.line},3 +${c.line},4 @@`,
    path: c.path,
    position: c.line,
    original_position: c.line,
    commit_id: c.commitId,
    original_commit_id: c.commitId,
    ...(c.inReplyToId === null ? {} : { in_reply_to_id: c.inReplyToId }),
    user: userObject(state, c.user),
    body: c.body,
    created_at: state.time.iso(c.createdAt),
    updated_at: state.time.iso(c.updatedAt),
    html_url: html,
    pull_request_url: `${api}/pulls/${pull.issue.number}`,
    author_association: association(c.user, repo),
    _links: {
      self: { href: `${api}/pulls/comments/${c.id}` },
      html: { href: html },
      pull_request: { href: `${api}/pulls/${pull.issue.number}` },
    },
    line: c.line,
    original_line: c.line,
    side: 'RIGHT',
    subject_type: 'line',
  };
}

/** The GitHub App behind check runs and suites (REST `integration`): GitHub Actions, or the CI app of `kind: enterprise` tokens. */
export function appObject(state: GitHubState, app: CheckApp): Record<string, unknown> {
  const actions = app === 'github-actions';
  const owner = actions ? GITHUB_ORG : state.defaultUser;
  return {
    id: actions ? 15368 : 900001,
    slug: app,
    node_id: actions ? 'MDM6QXBwMTUzNjg=' : 'A_kwDOAA27QQ',
    client_id: actions ? 'Iv1.05c79e9ad1f6bdfa' : 'Iv1.fleetbench0000ci',
    owner: actions ? owner : userObject(state, owner as User),
    name: actions ? 'GitHub Actions' : 'fleetbench CI',
    description: actions
      ? 'Automate your workflow from idea to production'
      : 'A CI bot in the emulated world',
    external_url: actions ? 'https://help.github.com/en/actions' : `${state.webUrl}/apps/${app}`,
    html_url: `${state.webUrl}/apps/${app}`,
    created_at: '2018-07-30T09:30:17Z',
    updated_at: '2019-12-10T19:04:12Z',
    permissions: { checks: 'write', metadata: 'read', pull_requests: 'write', statuses: 'write' },
    events: ['check_run', 'check_suite', 'pull_request', 'push'],
  };
}

/** github's organization account, as REST renders the owner of GitHub Actions. */
const GITHUB_ORG = {
  login: 'github',
  id: 9919,
  node_id: 'MDEyOk9yZ2FuaXphdGlvbjk5MTk=',
  avatar_url: 'https://avatars.githubusercontent.com/u/9919?v=4',
  gravatar_id: '',
  url: 'https://api.github.com/users/github',
  html_url: 'https://github.com/github',
  followers_url: 'https://api.github.com/users/github/followers',
  following_url: 'https://api.github.com/users/github/following{/other_user}',
  gists_url: 'https://api.github.com/users/github/gists{/gist_id}',
  starred_url: 'https://api.github.com/users/github/starred{/owner}{/repo}',
  subscriptions_url: 'https://api.github.com/users/github/subscriptions',
  organizations_url: 'https://api.github.com/users/github/orgs',
  repos_url: 'https://api.github.com/users/github/repos',
  events_url: 'https://api.github.com/users/github/events{/privacy}',
  received_events_url: 'https://api.github.com/users/github/received_events',
  type: 'Organization',
  site_admin: false,
};

/** The open pull requests a commit is the head of, as check runs and suites list them ("pull-request-minimal"). */
export function pullsOfCommit(state: GitHubState, repo: Repo, sha: string): Record<string, unknown>[] {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const side = (ref: string, at: string) => ({
    ref,
    sha: at,
    repo: { id: repo.id, url: api, name: repo.name },
  });
  const out: Record<string, unknown>[] = [];
  for (const pull of repo.pulls.values()) {
    if (pull.headSha !== sha || pull.issue.state !== 'open') continue;
    out.push({
      id: pull.id,
      number: pull.issue.number,
      url: `${api}/pulls/${pull.issue.number}`,
      head: side(pull.head, pull.headSha),
      base: side(pull.base, repo.branches.get(pull.base) ?? pull.baseSha),
    });
  }
  return out;
}

export function checkRunObject(state: GitHubState, repo: Repo, run: CheckRun): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  return {
    id: run.id,
    node_id: run.nodeId,
    head_sha: run.headSha,
    external_id: run.externalId,
    url: `${api}/check-runs/${run.id}`,
    html_url: `${state.webUrl}/${repo.fullName}/runs/${run.id}`,
    details_url: run.detailsUrl ?? `${state.webUrl}/${repo.fullName}/runs/${run.id}`,
    status: run.status,
    conclusion: run.conclusion,
    started_at: state.time.iso(run.startedAt),
    completed_at: run.completedAt === null ? null : state.time.iso(run.completedAt),
    output: {
      title: run.output.title,
      summary: run.output.summary,
      text: run.output.text,
      annotations_count: 0,
      annotations_url: `${api}/check-runs/${run.id}/annotations`,
    },
    name: run.name,
    check_suite: { id: run.suiteId },
    app: appObject(state, run.app),
    pull_requests: pullsOfCommit(state, repo, run.headSha),
  };
}

/** A check suite (REST `check-suite`): its status and conclusion from its newest runs. */
export function checkSuiteObject(
  state: GitHubState,
  repo: Repo,
  commit: Commit,
  suite: CheckSuite,
): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const { status, conclusion } = state.checks.suiteState(commit, suite);
  let headBranch: string | null = null;
  for (const [branch, sha] of repo.branches) if (sha === commit.sha) headBranch = branch;
  for (const pull of repo.pulls.values()) if (pull.headSha === commit.sha) headBranch = pull.head;
  return {
    id: suite.id,
    node_id: suite.nodeId,
    head_branch: headBranch,
    head_sha: commit.sha,
    status,
    conclusion,
    url: `${api}/check-suites/${suite.id}`,
    before: commit.parents[0] ?? '0'.repeat(40),
    after: commit.sha,
    pull_requests: pullsOfCommit(state, repo, commit.sha),
    app: appObject(state, suite.app),
    repository: repoObject(state, repo),
    created_at: state.time.iso(suite.createdAt),
    updated_at: state.time.iso(suite.updatedAt),
    head_commit: {
      id: commit.sha,
      tree_id: commit.tree,
      message: commit.message,
      timestamp: gitDate(commit.committer),
      author: { name: commit.author.name, email: commit.author.email },
      committer: { name: commit.committer.name, email: commit.committer.email },
    },
    latest_check_runs_count: state.checks.latestRuns(commit, suite.id).length,
    check_runs_url: `${api}/check-suites/${suite.id}/check-runs`,
    rerequestable: true,
    runs_rerequestable: true,
  };
}

export function statusObject(
  state: GitHubState,
  repo: Repo,
  commit: Commit,
  s: CommitStatus,
): Record<string, unknown> {
  return {
    url: `${state.apiUrl}/repos/${repo.fullName}/statuses/${commit.sha}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${s.creator.id}?v=4`,
    id: s.id,
    node_id: s.nodeId,
    state: s.state,
    description: s.description,
    target_url: s.targetUrl,
    context: s.context,
    created_at: state.time.iso(s.createdAt),
    updated_at: state.time.iso(s.updatedAt),
    creator: userObject(state, s.creator),
  };
}

/** A changed file as REST lists it (a pull request's files, a comparison's). */
export function changedFileObject(
  state: GitHubState,
  repo: Repo,
  file: ChangedFile,
): Record<string, unknown> {
  return {
    sha: file.blobSha,
    filename: file.path,
    status: 'modified',
    additions: file.additions,
    deletions: file.deletions,
    changes: file.additions + file.deletions,
    blob_url: `${state.webUrl}/${repo.fullName}/blob/${file.commitSha}/${file.path}`,
    raw_url: `${state.webUrl}/${repo.fullName}/raw/${file.commitSha}/${file.path}`,
    contents_url: `${state.apiUrl}/repos/${repo.fullName}/contents/${file.path}?ref=${file.commitSha}`,
    patch: file.hunk,
  };
}

/**
 * A commit as REST lists it (a pull request's commits, a comparison's): its git author and
 * committer with their dates, its tree; `author` is the account when the commit's e-mail names
 * none of the world's users.
 */
export function commitObject(
  state: GitHubState,
  repo: Repo,
  commit: Commit,
  author: User,
): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const person = (ident: GitIdent) => ({ name: ident.name, email: ident.email, date: gitDate(ident) });
  const authorUser = state.userOfIdent(commit.author) ?? author;
  const committerUser = state.userOfIdent(commit.committer);
  return {
    sha: commit.sha,
    node_id: commit.nodeId,
    commit: {
      author: person(commit.author),
      committer: person(commit.committer),
      message: commit.message,
      tree: { sha: commit.tree, url: `${api}/git/trees/${commit.tree}` },
      url: `${api}/git/commits/${commit.sha}`,
      comment_count: 0,
      verification: {
        verified: false,
        reason: 'unsigned',
        signature: null,
        payload: null,
        verified_at: null,
      },
    },
    url: `${api}/commits/${commit.sha}`,
    html_url: `${state.webUrl}/${repo.fullName}/commit/${commit.sha}`,
    comments_url: `${api}/commits/${commit.sha}/comments`,
    author: userObject(state, authorUser),
    committer: committerUser === undefined ? null : userObject(state, committerUser),
    parents: commit.parents.map((sha) => ({
      sha,
      url: `${api}/commits/${sha}`,
      html_url: `${state.webUrl}/${repo.fullName}/commit/${sha}`,
    })),
  };
}

/** A Git reference (`refs/heads/NAME`) as the refs routes answer it. */
export function refObject(
  state: GitHubState,
  repo: Repo,
  branch: string,
  sha: string,
): Record<string, unknown> {
  return anyRefObject(state, repo, `refs/heads/${branch}`, sha, 'commit');
}

/** A tag's ref: its object an annotated tag (`git/tags/SHA`) or the commit it names. */
export function tagRefObject(
  state: GitHubState,
  repo: Repo,
  name: string,
  sha: string,
): Record<string, unknown> {
  const type = state.refs.objectType(repo, sha) ?? 'commit';
  return anyRefObject(state, repo, `refs/tags/${name}`, sha, type);
}

/** A ref's node id: its repository and full name. */
const refNodeId = (repo: Repo, ref: string) =>
  `REF_${Buffer.from(`${repo.id}:${ref}`).toString('base64url')}`;

function anyRefObject(
  state: GitHubState,
  repo: Repo,
  ref: string,
  sha: string,
  type: string,
): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  return {
    ref,
    node_id: refNodeId(repo, ref),
    // A URL, so percent-encoded as GitHub writes it (`refs/heads/ga%C5%82%C4%85%C5%BA`).
    url: `${api}/git/${ref.split('/').map(encodeURIComponent).join('/')}`,
    object: { sha, type, url: `${api}/git/${type}s/${sha}` },
  };
}

/** An annotated tag as `GET /git/tags/{sha}` answers it (unsigned: the emulator signs nothing). */
export function gitTagObject(state: GitHubState, repo: Repo, tag: TagObject): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  return {
    node_id: `TAG_${Buffer.from(`${repo.id}:${tag.sha}`).toString('base64url')}`,
    tag: tag.tag,
    sha: tag.sha,
    url: `${api}/git/tags/${tag.sha}`,
    message: tag.message,
    tagger: { name: tag.tagger.name, email: tag.tagger.email, date: gitDate(tag.tagger) },
    object: { sha: tag.object, type: tag.objectType, url: `${api}/git/${tag.objectType}s/${tag.object}` },
    verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
  };
}

/** A tag as `GET /repos/{owner}/{repo}/tags` lists it: its name and the commit it leads to. */
export function tagListEntry(state: GitHubState, repo: Repo, name: string, commitSha: string) {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const path = name.split('/').map(encodeURIComponent).join('/');
  return {
    name,
    zipball_url: `${api}/zipball/refs/tags/${path}`,
    tarball_url: `${api}/tarball/refs/tags/${path}`,
    commit: { sha: commitSha, url: `${api}/commits/${commitSha}` },
    node_id: refNodeId(repo, `refs/tags/${name}`),
  };
}

/** A release as GitHub's `release` schema has it (no assets: the emulator takes no uploads). */
export function releaseObject(state: GitHubState, repo: Repo, release: Release): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const url = `${api}/releases/${release.id}`;
  const tag = release.tagName.split('/').map(encodeURIComponent).join('/');
  return {
    url,
    html_url: `${state.webUrl}/${repo.fullName}/releases/tag/${tag}`,
    assets_url: `${url}/assets`,
    upload_url: `${url}/assets{?name,label}`,
    tarball_url: `${api}/tarball/${tag}`,
    zipball_url: `${api}/zipball/${tag}`,
    id: release.id,
    node_id: release.nodeId,
    tag_name: release.tagName,
    target_commitish: release.targetCommitish,
    name: release.name,
    draft: release.draft,
    prerelease: release.prerelease,
    immutable: false,
    created_at: state.time.iso(release.createdAt),
    published_at: release.publishedAt === null ? null : state.time.iso(release.publishedAt),
    updated_at: state.time.iso(release.updatedAt),
    author: userObject(state, release.author),
    assets: [],
    body: release.body,
  };
}

/** A milestone as GitHub's `milestone` schema has it, with its issues counted. */
export function milestoneObject(state: GitHubState, repo: Repo, m: Milestone): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${repo.fullName}/milestones/${m.number}`;
  const counts = state.milestones.counts(repo, m);
  const iso = (t: number | null) => (t === null ? null : state.time.iso(t));
  return {
    url: api,
    html_url: `${state.webUrl}/${repo.fullName}/milestone/${m.number}`,
    labels_url: `${api}/labels`,
    id: m.id,
    node_id: m.nodeId,
    number: m.number,
    state: m.state,
    title: m.title,
    description: m.description,
    creator: userObject(state, m.creator),
    open_issues: counts.open,
    closed_issues: counts.closed,
    created_at: state.time.iso(m.createdAt),
    updated_at: state.time.iso(m.updatedAt),
    closed_at: iso(m.closedAt),
    due_on: iso(m.dueOn),
  };
}

/** GitHub's `organization-simple`. */
export function organizationSimple(state: GitHubState, org: User): Record<string, unknown> {
  const api = `${state.apiUrl}/orgs/${org.login}`;
  return {
    login: org.login,
    id: org.id,
    node_id: org.nodeId,
    url: api,
    repos_url: `${api}/repos`,
    events_url: `${api}/events`,
    hooks_url: `${api}/hooks`,
    issues_url: `${api}/issues`,
    members_url: `${api}/members{/member}`,
    public_members_url: `${api}/public_members{/member}`,
    avatar_url: userObject(state, org).avatar_url,
    description: null,
  };
}
