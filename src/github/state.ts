/**
 * The emulated GitHub world: users, repositories, issues, pull requests, commits with check runs
 * and statuses, reviews and comments, all in Maps. Every change takes a new number from one
 * global sequence and stamps it on what changed (`version`, and the repo's `pullsVersion` /
 * `issuesVersion`), so ETags are (token, resource, version) and never a hash of a body, and
 * `updated_at` ordering has a deterministic tiebreak when two changes share a millisecond.
 *
 * Times are run-time milliseconds from the Clock; JSON renders them through `clock.toWallMs`.
 */

import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/index.ts';
import {
  type CHECK_CONCLUSIONS,
  type CHECK_STATUSES,
  DEFAULT_USER,
  type Fixtures,
  type IssueFixture,
  type PullFixture,
  type REVIEW_STATES,
  type RepoFixture,
  type STATUS_STATES,
} from './fixtures.ts';
import type { Touched } from './touched.ts';

export type CheckStatus = (typeof CHECK_STATUSES)[number];
export type CheckConclusion = (typeof CHECK_CONCLUSIONS)[number];
export type StatusState = (typeof STATUS_STATES)[number];
export type ReviewState = (typeof REVIEW_STATES)[number];
export type UserType = 'User' | 'Bot' | 'Organization';

/** A rendered JSON text, valid while `version` and the URL epoch are unchanged. */
export interface JsonCache {
  version: number;
  epoch: number;
  text: string;
}

export interface User {
  login: string;
  id: number;
  nodeId: string;
  type: UserType;
  name: string | null;
  json?: JsonCache;
}

export interface Label {
  id: number;
  nodeId: string;
  name: string;
  color: string;
}

export interface IssueComment {
  id: number;
  nodeId: string;
  user: User;
  body: string;
  createdAt: number;
  updatedAt: number;
}

export interface Review {
  id: number;
  nodeId: string;
  user: User;
  state: ReviewState;
  body: string;
  submittedAt: number;
  commitId: string;
}

export interface ReviewComment {
  id: number;
  nodeId: string;
  /** The review thread this comment starts or answers (GraphQL reviewThreads). */
  threadId: number;
  threadNodeId: string;
  reviewId: number | null;
  inReplyToId: number | null;
  user: User;
  body: string;
  path: string;
  line: number;
  commitId: string;
  createdAt: number;
  updatedAt: number;
}

export interface CheckRun {
  id: number;
  nodeId: string;
  name: string;
  headSha: string;
  status: CheckStatus;
  conclusion: CheckConclusion | null;
  startedAt: number;
  completedAt: number | null;
}

export interface CommitStatus {
  id: number;
  nodeId: string;
  context: string;
  state: StatusState;
  description: string | null;
  targetUrl: string | null;
  creator: User;
  createdAt: number;
  updatedAt: number;
}

export interface Commit {
  sha: string;
  nodeId: string;
  message: string;
  createdAt: number;
  checkRuns: CheckRun[];
  statuses: CommitStatus[];
  /** Bumped when checks or statuses change: the ETag of check-runs and combined status. */
  version: number;
}

export interface Issue {
  repo: Repo;
  number: number;
  id: number;
  nodeId: string;
  title: string;
  body: string;
  user: User;
  state: 'open' | 'closed';
  stateReason: 'completed' | 'not_planned' | 'reopened' | null;
  labels: Label[];
  assignees: User[];
  comments: IssueComment[];
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  version: number;
  commentsVersion: number;
  pull?: PullRequest;
  json?: JsonCache;
}

export interface PullRequest {
  issue: Issue;
  id: number;
  nodeId: string;
  head: string;
  base: string;
  headSha: string;
  baseSha: string;
  draft: boolean;
  merged: boolean;
  mergedAt: number | null;
  mergedBy: User | null;
  mergeCommitSha: string | null;
  /** null while GitHub is "still computing" mergeability. */
  mergeable: boolean | null;
  /** Issue closed when the PR merges. */
  linkedIssue: number | null;
  commits: string[];
  reviews: Review[];
  reviewComments: ReviewComment[];
  version: number;
  reviewsVersion: number;
  reviewCommentsVersion: number;
  json?: JsonCache;
  fullJson?: JsonCache;
}

export interface Repo {
  owner: User;
  name: string;
  fullName: string;
  id: number;
  nodeId: string;
  private: boolean;
  description: string | null;
  defaultBranch: string;
  requiredReviews: number;
  createdAt: number;
  /** The repository object's own changes (description, settings): not moved by a push. */
  updatedAt: number;
  /** Moves with every push: "any time a commit is pushed to any of the repository's branches". */
  pushedAt: number;
  /**
   * Bumped by every push (a branch created or moved): the version of everything that embeds the
   * repository object (every pull request's head.repo/base.repo, the repository itself, a
   * combined status), so their ETags change exactly when a push changes their bodies.
   */
  pushVersion: number;
  branches: Map<string, string>;
  commits: Map<string, Commit>;
  /** Issues and pull requests (every PR is an issue), by number. */
  issues: Map<number, Issue>;
  pulls: Map<number, PullRequest>;
  /** Pull requests by head branch: the duplicate check stays O(1) with thousands of PRs. */
  pullsByHead: Map<string, PullRequest[]>;
  nextNumber: number;
  version: number;
  issuesVersion: number;
  pullsVersion: number;
  json?: JsonCache;
  /** Sorted/filtered lists, valid while the matching version is unchanged. */
  listCache: Map<string, { version: number; items: unknown[] }>;
  /**
   * Rendered list bodies by route and query, valid for one version and URL epoch, with the
   * content hash their ETag is made from (hashed once per render, not per request).
   */
  bodyCache: Map<
    string,
    {
      version: number;
      epoch: number;
      result: { body: string; hash: string; page: { page: number; last: number } };
    }
  >;
}

/**
 * Issues (or pull requests' issues) sorted by creation, last update or comment count, ties broken
 * by version (a global sequence), so the order is deterministic: REST lists, GraphQL `orderBy`
 * and search share it.
 */
export function sortIssues<T extends Issue>(
  items: T[],
  field: 'created' | 'updated' | 'comments',
  desc: boolean,
): T[] {
  const key =
    field === 'updated'
      ? (i: Issue) => i.updatedAt
      : field === 'comments'
        ? (i: Issue) => i.comments.length
        : (i: Issue) => i.createdAt;
  const sign = desc ? -1 : 1;
  return items.sort((a, b) => sign * (key(a) - key(b) || a.version - b.version));
}

/** A state change that cannot happen (unknown repo, PR already merged): 404 or 422 over HTTP. */
export class GitHubStateError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'GitHubStateError';
    this.status = status;
  }
}

/** Users are dated before the run: created a year before it, last updated a day before. */
export const USER_CREATED_AT = -365 * 86_400_000;
export const USER_UPDATED_AT = -86_400_000;

const LABEL_COLORS = ['d73a4a', 'a2eeef', '0075ca', '7057ff', '008672', 'e4e669', 'd876e3'];

function nodeId(prefix: string, id: number): string {
  return `${prefix}_${Buffer.from(`0:${id}`).toString('base64url')}`;
}

export interface OpenPullRequestInput {
  head: string;
  base?: string;
  title?: string;
  body?: string;
  user?: string;
  /** Issue the PR closes: it links them (body "Closes #n") and closes the issue on merge. */
  issue?: number;
  draft?: boolean;
  sha?: string;
}

export class GitHubState {
  readonly clock: Clock;
  private readonly rng: Rng;
  readonly users = new Map<string, User>();
  readonly repos = new Map<string, Repo>();
  readonly defaultUser: User;
  private seq = 0;
  private nextId = 1;
  /** Global node ids (GraphQL `node(id:)`) of users, repositories, issues and pull requests. */
  readonly nodes = new Map<string, User | Repo | Issue | PullRequest>();
  /** Bumped when a repository is added: the version of `GET /user/repos`. */
  reposVersion = 0;
  /** URLs rendered into JSON; changing them invalidates every cached body. */
  apiUrl = 'https://api.github.com';
  webUrl = 'https://github.com';
  urlEpoch = 0;
  /**
   * While set, GraphQL resolvers note the pull requests, issues and branches a query looks up
   * by name (content attribution, attribution.ts). Unset (the default) it costs nothing.
   */
  touched: Touched | undefined = undefined;

  constructor(fixtures: Fixtures, options: { clock: Clock; rng: Rng }) {
    this.clock = options.clock;
    this.rng = options.rng;
    for (const user of fixtures.users ?? []) this.ensureUser(user.login, user.type ?? 'User', user.name);
    this.defaultUser = this.ensureUser(fixtures.default_user ?? DEFAULT_USER);
    // Fixture objects are dated before the run starts, a minute apart, in file order.
    let t = -(fixtures.repos.length + 1) * 3_600_000;
    for (const repo of fixtures.repos) {
      this.addRepoAt(repo, t);
      t += 3_600_000;
    }
  }

  /** A new version number: larger than every earlier one. */
  bump(): number {
    return ++this.seq;
  }

  get version(): number {
    return this.seq;
  }

  setUrls(apiUrl: string, webUrl: string): void {
    this.apiUrl = apiUrl.replace(/\/+$/, '');
    this.webUrl = webUrl.replace(/\/+$/, '');
    this.urlEpoch++;
  }

  /** `2026-01-01T00:00:00Z`, GitHub's format (no milliseconds). */
  iso(t: number): string {
    const s = new Date(this.clock.toWallMs(t)).toISOString();
    return `${s.slice(0, 19)}Z`;
  }

  private id(): number {
    return this.nextId++;
  }

  newSha(): string {
    let out = '';
    for (let i = 0; i < 5; i++) {
      out += Math.floor(this.rng.next() * 0x100000000)
        .toString(16)
        .padStart(8, '0');
    }
    return out;
  }

  ensureUser(login: string, type: UserType = login.endsWith('[bot]') ? 'Bot' : 'User', name?: string): User {
    const key = login.toLowerCase();
    const existing = this.users.get(key);
    if (existing) return existing;
    const id = this.id();
    const prefix = type === 'Organization' ? 'O' : type === 'Bot' ? 'BOT' : 'U';
    const user: User = { login, id, nodeId: nodeId(prefix, id), type, name: name ?? null };
    this.users.set(key, user);
    this.nodes.set(user.nodeId, user);
    return user;
  }

  /** The users of these logins, each once (a login named twice, in any case, is one assignee). */
  private assigneesOf(logins: readonly string[]): User[] {
    return [...new Set(logins.map((login) => this.ensureUser(login)))];
  }

  findUser(login: string): User | undefined {
    return this.users.get(login.toLowerCase());
  }

  /** Case-insensitive, like GitHub. */
  findRepo(owner: string, name: string): Repo | undefined {
    const key = `${owner}/${name}`;
    return this.repos.get(key) ?? this.repos.get(key.toLowerCase());
  }

  repo(fullName: string): Repo {
    const slash = fullName.indexOf('/');
    const repo = slash > 0 ? this.findRepo(fullName.slice(0, slash), fullName.slice(slash + 1)) : undefined;
    if (!repo) throw new GitHubStateError(404, `no repository '${fullName}'`);
    return repo;
  }

  issue(repo: Repo, number: number): Issue {
    const issue = repo.issues.get(number);
    if (!issue) throw new GitHubStateError(404, `no issue or pull request #${number} in ${repo.fullName}`);
    return issue;
  }

  pull(repo: Repo, number: number): PullRequest {
    const pull = repo.pulls.get(number);
    if (!pull) throw new GitHubStateError(404, `no pull request #${number} in ${repo.fullName}`);
    return pull;
  }

  /** Adds a repository (from a fixture entry) dated now. */
  addRepo(fixture: RepoFixture): Repo {
    return this.addRepoAt(fixture, this.clock.now());
  }

  private addRepoAt(fixture: RepoFixture, at: number): Repo {
    const fullName = `${fixture.owner}/${fixture.name}`;
    if (this.repos.has(fullName.toLowerCase()))
      throw new GitHubStateError(422, `repository ${fullName} exists`);
    const owner = this.ensureUser(fixture.owner, this.findUser(fixture.owner)?.type ?? 'Organization');
    const id = this.id();
    const v = this.bump();
    const repo: Repo = {
      owner,
      name: fixture.name,
      fullName,
      id,
      nodeId: nodeId('R', id),
      private: fixture.private ?? false,
      description: fixture.description ?? null,
      defaultBranch: fixture.default_branch ?? 'main',
      requiredReviews: fixture.required_reviews ?? 1,
      createdAt: at,
      updatedAt: at,
      pushedAt: at,
      pushVersion: v,
      branches: new Map(),
      commits: new Map(),
      issues: new Map(),
      pulls: new Map(),
      pullsByHead: new Map(),
      nextNumber: 1,
      version: v,
      issuesVersion: v,
      pullsVersion: v,
      listCache: new Map(),
      bodyCache: new Map(),
    };
    this.repos.set(fullName.toLowerCase(), repo);
    this.nodes.set(repo.nodeId, repo);
    this.reposVersion = v;
    this.addCommit(repo, this.newSha(), 'Initial commit', at);
    repo.branches.set(repo.defaultBranch, [...repo.commits.keys()][0]!);
    for (const branch of fixture.branches ?? []) {
      const sha = branch.sha ?? this.newSha();
      if (!repo.commits.has(sha)) this.addCommit(repo, sha, `Work on ${branch.name}`, at);
      repo.branches.set(branch.name, sha);
    }
    // Explicit numbers first, then the rest in order (issues before pulls), as checkFixtures assumes.
    const taken = new Set<number>();
    for (const item of [...(fixture.issues ?? []), ...(fixture.pulls ?? [])]) {
      if (item.number !== undefined) taken.add(item.number);
    }
    const nextFree = () => {
      while (taken.has(repo.nextNumber)) repo.nextNumber++;
      taken.add(repo.nextNumber);
      return repo.nextNumber;
    };
    let t = at + 60_000;
    for (const issue of fixture.issues ?? []) {
      this.addFixtureIssue(repo, issue, issue.number ?? nextFree(), t);
      t += 60_000;
    }
    for (const pull of fixture.pulls ?? []) {
      this.addFixturePull(repo, pull, pull.number ?? nextFree(), t);
      t += 60_000;
    }
    let highest = 0;
    for (const n of taken) if (n > highest) highest = n;
    repo.nextNumber = highest + 1;
    return repo;
  }

  private addCommit(repo: Repo, sha: string, message: string, at: number): Commit {
    const commit: Commit = {
      sha,
      nodeId: nodeId('C', this.id()),
      message,
      createdAt: at,
      checkRuns: [],
      statuses: [],
      version: this.bump(),
    };
    repo.commits.set(sha, commit);
    return commit;
  }

  private labels(names: readonly string[] | undefined): Label[] {
    return (names ?? []).map((name) => {
      const id = this.id();
      let h = 0;
      for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      return { id, nodeId: nodeId('LA', id), name, color: LABEL_COLORS[h % LABEL_COLORS.length]! };
    });
  }

  private newIssue(repo: Repo, number: number, at: number, fields: IssueFixture | PullFixture): Issue {
    const id = this.id();
    const v = this.bump();
    const issue: Issue = {
      repo,
      number,
      id,
      nodeId: nodeId('I', id),
      title: fields.title,
      body: fields.body ?? '',
      user: fields.user ? this.ensureUser(fields.user) : this.defaultUser,
      state: 'open',
      stateReason: null,
      labels: this.labels(fields.labels),
      assignees: this.assigneesOf(('assignees' in fields ? fields.assignees : undefined) ?? []),
      comments: [],
      createdAt: at,
      updatedAt: at,
      closedAt: null,
      version: v,
      commentsVersion: v,
    };
    for (const c of fields.comments ?? []) {
      const cid = this.id();
      issue.comments.push({
        id: cid,
        nodeId: nodeId('IC', cid),
        user: c.user ? this.ensureUser(c.user) : this.defaultUser,
        body: c.body,
        createdAt: at,
        updatedAt: at,
      });
    }
    repo.issues.set(number, issue);
    repo.issuesVersion = v;
    this.nodes.set(issue.nodeId, issue);
    return issue;
  }

  private addFixtureIssue(repo: Repo, fixture: IssueFixture, number: number, at: number): Issue {
    const issue = this.newIssue(repo, number, at, fixture);
    if (fixture.state === 'closed') {
      issue.state = 'closed';
      issue.stateReason = 'completed';
      issue.closedAt = at;
    }
    return issue;
  }

  private addFixturePull(repo: Repo, fixture: PullFixture, number: number, at: number): PullRequest {
    const pull = this.createPull(repo, number, at, {
      head: fixture.head,
      base: fixture.base,
      title: fixture.title,
      body: fixture.body,
      user: fixture.user,
      issue: fixture.issue,
      draft: fixture.draft,
      sha: fixture.head_sha,
      labels: fixture.labels,
      comments: fixture.comments,
    });
    if (fixture.mergeable !== undefined) pull.mergeable = fixture.mergeable;
    const commit = repo.commits.get(pull.headSha)!;
    for (const check of fixture.checks ?? [])
      this.putCheckRun(commit, check.name, check.status, check.conclusion, at);
    for (const status of fixture.statuses ?? []) {
      this.putStatus(commit, status.context, status.state, status.description, status.target_url, at);
    }
    for (const review of fixture.reviews ?? [])
      this.putReview(pull, review.user, review.state, review.body ?? '', at);
    for (const c of fixture.review_comments ?? [])
      this.putReviewComment(pull, null, c.user, c.body, c.path, c.line, at);
    if (fixture.state === 'merged') this.closePull(pull, true, undefined, at);
    else if (fixture.state === 'closed') this.closePull(pull, false, undefined, at);
    return pull;
  }

  private createPull(
    repo: Repo,
    number: number,
    at: number,
    input: OpenPullRequestInput & Pick<PullFixture, 'labels' | 'comments'>,
  ): PullRequest {
    const base = input.base ?? repo.defaultBranch;
    const baseSha = repo.branches.get(base);
    if (baseSha === undefined)
      throw new GitHubStateError(422, `base branch '${base}' does not exist in ${repo.fullName}`);
    if (input.head === base) throw new GitHubStateError(422, `head and base are both '${base}'`);
    for (const other of repo.pullsByHead.get(input.head) ?? []) {
      if (other.base === base && other.issue.state === 'open') {
        throw new GitHubStateError(
          422,
          `A pull request already exists for ${repo.owner.login}:${input.head}.`,
        );
      }
    }
    let linked: Issue | undefined;
    if (input.issue !== undefined) {
      linked = repo.issues.get(input.issue);
      if (!linked || linked.pull)
        throw new GitHubStateError(422, `no issue #${input.issue} in ${repo.fullName}`);
    }
    let headSha = repo.branches.get(input.head);
    let pushed = false;
    if ((input.sha !== undefined && input.sha !== headSha) || headSha === undefined) {
      headSha = input.sha ?? this.newSha();
      repo.branches.set(input.head, headSha);
      pushed = true;
    }
    if (!repo.commits.has(headSha)) this.addCommit(repo, headSha, `Work on ${input.head}`, at);
    const issue = this.newIssue(repo, number, at, {
      title: input.title ?? (linked ? `Fix #${linked.number}: ${linked.title}` : `Update ${input.head}`),
      body: input.body ?? (linked ? `Closes #${linked.number}` : ''),
      head: input.head,
      user: input.user,
      labels: input.labels,
      comments: input.comments,
    });
    const id = this.id();
    const pull: PullRequest = {
      issue,
      id,
      nodeId: nodeId('PR', id),
      head: input.head,
      base,
      headSha,
      baseSha,
      draft: input.draft ?? false,
      merged: false,
      mergedAt: null,
      mergedBy: null,
      mergeCommitSha: null,
      mergeable: true,
      linkedIssue: linked?.number ?? null,
      commits: [headSha],
      reviews: [],
      reviewComments: [],
      version: issue.version,
      reviewsVersion: issue.version,
      reviewCommentsVersion: issue.version,
    };
    issue.pull = pull;
    repo.pulls.set(number, pull);
    const sameHead = repo.pullsByHead.get(pull.head);
    if (sameHead) sameHead.push(pull);
    else repo.pullsByHead.set(pull.head, [pull]);
    this.nodes.delete(issue.nodeId);
    this.nodes.set(pull.nodeId, pull);
    repo.pullsVersion = issue.version;
    // The branch was pushed before the pull request was opened on it.
    if (pushed) this.pushed(repo, at);
    return pull;
  }

  /**
   * A push to the repository (a branch created or moved): `pushed_at` moves, and with it every
   * representation that embeds the repository object. `updated_at` does not (GitHub answers
   * repositories whose `updated_at` is earlier than their `pushed_at`).
   */
  private pushed(repo: Repo, at: number): void {
    repo.pushedAt = at;
    const v = this.bump();
    repo.pushVersion = v;
    repo.pullsVersion = v;
    this.reposVersion = v;
  }

  /** Creates a branch or moves it to a new commit (a push without a pull request). */
  pushBranch(repo: Repo, input: { branch: string; sha?: string; message?: string }): Commit {
    const at = this.clock.now();
    const sha = input.sha ?? this.newSha();
    const commit =
      repo.commits.get(sha) ?? this.addCommit(repo, sha, input.message ?? `Update ${input.branch}`, at);
    repo.branches.set(input.branch, sha);
    this.pushed(repo, at);
    return commit;
  }

  /**
   * Deletes a branch (`DELETE /repos/{owner}/{repo}/git/refs/heads/{branch}`). GitHub closes the
   * open pull requests whose head it was; the default branch cannot be deleted.
   */
  deleteBranch(repo: Repo, branch: string): void {
    if (!repo.branches.has(branch)) throw new GitHubStateError(422, 'Reference does not exist');
    if (branch === repo.defaultBranch) throw new GitHubStateError(422, 'Cannot delete the default branch');
    repo.branches.delete(branch);
    const at = this.clock.now();
    for (const pull of repo.pullsByHead.get(branch) ?? [])
      if (pull.issue.state === 'open') this.closePull(pull, false, undefined, at);
  }

  /** Marks an issue (and its PR) changed now: new version, new updated_at. */
  touchIssue(issue: Issue, at = this.clock.now()): number {
    const v = this.bump();
    issue.version = v;
    issue.updatedAt = at;
    issue.repo.issuesVersion = v;
    if (issue.pull) {
      issue.pull.version = v;
      issue.repo.pullsVersion = v;
    }
    return v;
  }

  // ----- mutations (the admin API and REST writes call these) -----

  createIssue(
    repo: Repo,
    input: { title: string; body?: string; user?: string; labels?: string[]; assignees?: string[] },
  ): Issue {
    const number = repo.nextNumber++;
    return this.newIssue(repo, number, this.clock.now(), input);
  }

  openPullRequest(repo: Repo, input: OpenPullRequestInput): PullRequest {
    const number = repo.nextNumber;
    const pull = this.createPull(repo, number, this.clock.now(), input);
    repo.nextNumber++;
    return pull;
  }

  pushCommit(pull: PullRequest, input: { sha?: string; message?: string } = {}): Commit {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    const repo = pull.issue.repo;
    const at = this.clock.now();
    const sha = input.sha ?? this.newSha();
    const commit =
      repo.commits.get(sha) ?? this.addCommit(repo, sha, input.message ?? `Update ${pull.head}`, at);
    repo.branches.set(pull.head, sha);
    pull.headSha = sha;
    pull.commits.push(sha);
    pull.mergeable = true;
    this.touchIssue(pull.issue, at);
    this.pushed(repo, at);
    return commit;
  }

  commit(repo: Repo, ref: string): Commit | undefined {
    const sha = repo.branches.get(ref) ?? ref;
    return repo.commits.get(sha);
  }

  /** Creates the named check run on a commit, or updates the latest one with that name. */
  setCheckRun(
    commit: Commit,
    input: { name: string; status?: CheckStatus; conclusion?: CheckConclusion | null },
  ): CheckRun {
    return this.putCheckRun(commit, input.name, input.status, input.conclusion, this.clock.now());
  }

  private putCheckRun(
    commit: Commit,
    name: string,
    status: CheckStatus | undefined,
    conclusion: CheckConclusion | null | undefined,
    at: number,
  ): CheckRun {
    const resolvedStatus: CheckStatus = conclusion ? 'completed' : (status ?? 'queued');
    if (resolvedStatus === 'completed' && !conclusion) {
      throw new GitHubStateError(422, `check run '${name}': a completed check needs a conclusion`);
    }
    let run = commit.checkRuns.find((r) => r.name === name);
    if (!run) {
      const id = this.id();
      run = {
        id,
        nodeId: nodeId('CR', id),
        name,
        headSha: commit.sha,
        status: resolvedStatus,
        conclusion: null,
        startedAt: at,
        completedAt: null,
      };
      commit.checkRuns.push(run);
    }
    run.status = resolvedStatus;
    run.conclusion = conclusion ?? null;
    run.completedAt = resolvedStatus === 'completed' ? at : null;
    // Check runs do not touch the PR's updated_at on GitHub: only the commit's own ETag moves.
    commit.version = this.bump();
    return run;
  }

  setStatus(
    commit: Commit,
    input: { context: string; state: StatusState; description?: string; targetUrl?: string; user?: string },
  ): CommitStatus {
    const at = this.clock.now();
    const status = this.putStatus(commit, input.context, input.state, input.description, input.targetUrl, at);
    if (input.user) status.creator = this.ensureUser(input.user);
    return status;
  }

  private putStatus(
    commit: Commit,
    context: string,
    state: StatusState,
    description: string | undefined,
    targetUrl: string | undefined,
    at: number,
  ): CommitStatus {
    const id = this.id();
    const status: CommitStatus = {
      id,
      nodeId: nodeId('SC', id),
      context,
      state,
      description: description ?? null,
      targetUrl: targetUrl ?? null,
      creator: this.defaultUser,
      createdAt: at,
      updatedAt: at,
    };
    // Statuses are append-only on GitHub; the newest per context counts.
    commit.statuses.unshift(status);
    commit.version = this.bump();
    return status;
  }

  submitReview(pull: PullRequest, input: { user?: string; state: ReviewState; body?: string }): Review {
    return this.putReview(pull, input.user, input.state, input.body ?? '', this.clock.now());
  }

  private putReview(
    pull: PullRequest,
    login: string | undefined,
    state: ReviewState,
    body: string,
    at: number,
  ): Review {
    const id = this.id();
    const review: Review = {
      id,
      nodeId: nodeId('PRR', id),
      user: login ? this.ensureUser(login) : this.reviewer(),
      state,
      body,
      submittedAt: at,
      commitId: pull.headSha,
    };
    pull.reviews.push(review);
    pull.reviewsVersion = this.touchIssue(pull.issue, at);
    return review;
  }

  private reviewer(): User {
    return this.ensureUser('reviewer-1');
  }

  /** K review comments from one reviewer, as one COMMENTED review (what a review burst looks like). */
  postReviewComments(
    pull: PullRequest,
    input: { count?: number; user?: string; body?: string; path?: string; line?: number },
  ): ReviewComment[] {
    const count = input.count ?? 1;
    if (!Number.isInteger(count) || count < 1)
      throw new GitHubStateError(422, 'count must be a positive integer');
    const at = this.clock.now();
    const review = this.putReview(pull, input.user, 'COMMENTED', '', at);
    const out: ReviewComment[] = [];
    for (let i = 0; i < count; i++) {
      const body = input.body ?? `Review comment ${pull.reviewComments.length + 1}: please look at this.`;
      out.push(this.putReviewComment(pull, review, input.user, body, input.path, input.line ?? i + 1, at));
    }
    return out;
  }

  /** One review comment, as the REST create endpoint does (it wraps it in a COMMENTED review). */
  createReviewComment(
    pull: PullRequest,
    input: { user: string; body: string; path: string; line?: number; inReplyTo?: number; commitId?: string },
  ): ReviewComment {
    const at = this.clock.now();
    if (input.inReplyTo !== undefined) {
      const parent = pull.reviewComments.find((c) => c.id === input.inReplyTo);
      if (!parent) throw new GitHubStateError(404, `no review comment ${input.inReplyTo}`);
      const comment = this.putReviewComment(pull, null, input.user, input.body, parent.path, parent.line, at);
      comment.inReplyToId = parent.id;
      comment.threadId = parent.threadId;
      comment.threadNodeId = parent.threadNodeId;
      return comment;
    }
    const review = this.putReview(pull, input.user, 'COMMENTED', '', at);
    const comment = this.putReviewComment(pull, review, input.user, input.body, input.path, input.line, at);
    if (input.commitId) comment.commitId = input.commitId;
    return comment;
  }

  private putReviewComment(
    pull: PullRequest,
    review: Review | null,
    login: string | undefined,
    body: string,
    path: string | undefined,
    line: number | undefined,
    at: number,
  ): ReviewComment {
    const id = this.id();
    const comment: ReviewComment = {
      id,
      nodeId: nodeId('PRRC', id),
      threadId: id,
      threadNodeId: nodeId('PRRT', id),
      reviewId: review?.id ?? null,
      inReplyToId: null,
      user: login ? this.ensureUser(login) : (review?.user ?? this.reviewer()),
      body,
      path: path ?? 'src/index.ts',
      line: line ?? 1,
      commitId: pull.headSha,
      createdAt: at,
      updatedAt: at,
    };
    pull.reviewComments.push(comment);
    pull.reviewCommentsVersion = this.touchIssue(pull.issue, at);
    return comment;
  }

  postIssueComment(issue: Issue, input: { body: string; user?: string }): IssueComment {
    const at = this.clock.now();
    const id = this.id();
    const comment: IssueComment = {
      id,
      nodeId: nodeId('IC', id),
      user: input.user ? this.ensureUser(input.user) : this.defaultUser,
      body: input.body,
      createdAt: at,
      updatedAt: at,
    };
    issue.comments.push(comment);
    issue.commentsVersion = this.touchIssue(issue, at);
    return comment;
  }

  mergePullRequest(pull: PullRequest, input: { user?: string } = {}): PullRequest {
    if (pull.merged) throw new GitHubStateError(405, `pull request #${pull.issue.number} is already merged`);
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(405, `pull request #${pull.issue.number} is closed`);
    this.closePull(pull, true, input.user, this.clock.now());
    return pull;
  }

  /**
   * Why GitHub would refuse a user's merge of this pull request now (REST 405/409, GraphQL
   * UNPROCESSABLE), in GitHub's words; undefined when it may merge. `expectedHeadSha` is the
   * REST `sha` / GraphQL `expectedHeadOid` the client sent. The admin API merges regardless
   * (the world acts as an administrator).
   */
  mergeRefusal(
    pull: PullRequest,
    expectedHeadSha?: string,
  ): { status: 405 | 409; message: string } | undefined {
    if (pull.issue.state !== 'open') return { status: 405, message: 'Pull Request is not mergeable' };
    if (expectedHeadSha !== undefined && expectedHeadSha !== pull.headSha)
      return { status: 409, message: 'Head branch was modified. Review and try the merge again.' };
    if (pull.draft) return { status: 405, message: 'Pull Request is still a draft' };
    if (pull.mergeable === false) return { status: 405, message: 'Pull Request has merge conflicts' };
    const decision = this.reviewDecision(pull);
    if (decision === 'CHANGES_REQUESTED')
      return { status: 405, message: 'Changes requested by a reviewer with write access.' };
    if (decision === 'REVIEW_REQUIRED') {
      const n = pull.issue.repo.requiredReviews;
      return {
        status: 405,
        message: `At least ${n} approving review${n === 1 ? ' is' : 's are'} required by reviewers with write access.`,
      };
    }
    return undefined;
  }

  closePullRequest(pull: PullRequest): PullRequest {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    this.closePull(pull, false, undefined, this.clock.now());
    return pull;
  }

  private closePull(pull: PullRequest, merge: boolean, login: string | undefined, at: number): void {
    const issue = pull.issue;
    const repo = issue.repo;
    issue.state = 'closed';
    issue.stateReason = merge ? 'completed' : null;
    issue.closedAt = at;
    if (merge) {
      pull.merged = true;
      pull.mergedAt = at;
      pull.mergedBy = login ? this.ensureUser(login) : this.defaultUser;
      const sha = this.newSha();
      this.addCommit(repo, sha, `Merge pull request #${issue.number} from ${pull.head}`, at);
      pull.mergeCommitSha = sha;
      repo.branches.set(pull.base, sha);
      if (pull.linkedIssue !== null) {
        const linked = repo.issues.get(pull.linkedIssue);
        if (linked && linked.state === 'open') this.closeIssue(linked, at);
      }
    }
    this.touchIssue(issue, at);
    if (merge) this.pushed(repo, at);
  }

  closeIssue(issue: Issue, at = this.clock.now()): Issue {
    issue.state = 'closed';
    issue.stateReason = 'completed';
    issue.closedAt = at;
    this.touchIssue(issue, at);
    return issue;
  }

  /**
   * Edits an issue or pull request (REST PATCH, GraphQL updateIssue/updatePullRequest): title,
   * body, base branch (PRs), and state (closing a PR this way does not merge it; reopening a
   * merged PR is refused, as on GitHub).
   */
  editIssue(
    issue: Issue,
    input: {
      title?: string;
      body?: string;
      state?: 'open' | 'closed';
      base?: string;
      /** Why it was closed (REST `state_reason`, GraphQL `stateReason`); issues only. */
      stateReason?: 'completed' | 'not_planned';
    },
  ): Issue {
    const pull = issue.pull;
    const at = this.clock.now();
    if (input.title !== undefined) {
      if (input.title.trim() === '') throw new GitHubStateError(422, 'title cannot be blank');
      issue.title = input.title;
    }
    if (input.body !== undefined) issue.body = input.body;
    if (input.base !== undefined && pull) {
      if (!issue.repo.branches.has(input.base))
        throw new GitHubStateError(422, `no branch ${input.base} in ${issue.repo.fullName}`);
      pull.base = input.base;
    }
    if (input.state === 'closed' && issue.state === 'open') {
      if (pull) this.closePull(pull, false, undefined, at);
      else {
        this.closeIssue(issue, at);
        if (input.stateReason !== undefined) issue.stateReason = input.stateReason;
      }
      return issue;
    }
    if (input.state === 'open' && issue.state === 'closed') {
      if (pull?.merged)
        throw new GitHubStateError(422, `pull request #${issue.number} is merged and cannot be reopened`);
      issue.state = 'open';
      issue.stateReason = 'reopened';
      issue.closedAt = null;
    }
    this.touchIssue(issue, at);
    return issue;
  }

  /** Replaces the assignees of an issue or pull request. */
  setAssignees(issue: Issue, logins: readonly string[]): Issue {
    issue.assignees = this.assigneesOf(logins);
    this.touchIssue(issue);
    return issue;
  }

  /** The repository's labels by name (every label used on an issue or PR of the repo). */
  repoLabels(repo: Repo): Map<string, Label> {
    const out = new Map<string, Label>();
    for (const issue of repo.issues.values())
      for (const label of issue.labels) if (!out.has(label.name)) out.set(label.name, label);
    return out;
  }

  /** Adds labels (existing ones of the repo by name, else new ones) to an issue or PR. */
  addLabels(issue: Issue, names: readonly string[]): Issue {
    const known = this.repoLabels(issue.repo);
    const fresh = names.filter((n, i) => names.indexOf(n) === i && !issue.labels.some((l) => l.name === n));
    if (fresh.length === 0) return issue;
    const missing = fresh.filter((n) => !known.has(n));
    const made = this.labels(missing);
    for (const name of fresh) issue.labels.push(known.get(name) ?? made[missing.indexOf(name)]!);
    this.touchIssue(issue);
    return issue;
  }

  removeLabels(issue: Issue, names: readonly string[]): Issue {
    const before = issue.labels.length;
    issue.labels = issue.labels.filter((l) => !names.includes(l.name));
    if (issue.labels.length !== before) this.touchIssue(issue);
    return issue;
  }

  /** A draft pull request becomes ready for review. */
  markReadyForReview(pull: PullRequest): PullRequest {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    if (pull.draft) {
      pull.draft = false;
      this.touchIssue(pull.issue);
    }
    return pull;
  }

  /**
   * A submitted review with its inline comments, as one state change (GraphQL
   * addPullRequestReview, REST POST .../reviews). GitHub refuses an approval or a change request
   * on one's own pull request.
   */
  submitReviewWithComments(
    pull: PullRequest,
    input: {
      user: string;
      state: ReviewState;
      body?: string;
      comments?: { path: string; line: number; body: string }[];
    },
  ): Review {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    if (input.user === pull.issue.user.login && input.state !== 'COMMENTED') {
      throw new GitHubStateError(
        422,
        input.state === 'APPROVED'
          ? 'Can not approve your own pull request'
          : 'Can not request changes on your own pull request',
      );
    }
    const at = this.clock.now();
    const review = this.putReview(pull, input.user, input.state, input.body ?? '', at);
    for (const c of input.comments ?? [])
      this.putReviewComment(pull, review, input.user, c.body, c.path, c.line, at);
    return review;
  }

  setMergeable(pull: PullRequest, mergeable: boolean | null): PullRequest {
    pull.mergeable = mergeable;
    this.touchIssue(pull.issue);
    return pull;
  }

  // ----- derived values (REST and GraphQL read the same ones) -----

  /** APPROVED / CHANGES_REQUESTED / REVIEW_REQUIRED / null, from each reviewer's latest verdict. */
  reviewDecision(pull: PullRequest): 'APPROVED' | 'CHANGES_REQUESTED' | 'REVIEW_REQUIRED' | null {
    const latest = new Map<number, ReviewState>();
    for (const review of pull.reviews) {
      if (review.state === 'COMMENTED') continue;
      latest.set(review.user.id, review.state);
    }
    let approvals = 0;
    for (const state of latest.values()) {
      if (state === 'CHANGES_REQUESTED') return 'CHANGES_REQUESTED';
      if (state === 'APPROVED') approvals++;
    }
    const required = pull.issue.repo.requiredReviews;
    if (required === 0) return approvals > 0 ? 'APPROVED' : null;
    return approvals >= required ? 'APPROVED' : 'REVIEW_REQUIRED';
  }

  /** The newest status per context, newest first. */
  latestStatuses(commit: Commit): CommitStatus[] {
    const seen = new Set<string>();
    const out: CommitStatus[] = [];
    for (const status of commit.statuses) {
      if (seen.has(status.context)) continue;
      seen.add(status.context);
      out.push(status);
    }
    return out;
  }

  /** Combined commit status: failure > pending > success; pending when there are none. */
  combinedStatus(commit: Commit): StatusState {
    const statuses = this.latestStatuses(commit);
    if (statuses.length === 0) return 'pending';
    let pending = false;
    for (const s of statuses) {
      if (s.state === 'error' || s.state === 'failure') return 'failure';
      if (s.state === 'pending') pending = true;
    }
    return pending ? 'pending' : 'success';
  }

  /** GraphQL statusCheckRollup.state over check runs and statuses; null when there are none. */
  rollupState(commit: Commit): 'SUCCESS' | 'FAILURE' | 'PENDING' | 'ERROR' | null {
    const statuses = this.latestStatuses(commit);
    if (commit.checkRuns.length === 0 && statuses.length === 0) return null;
    let pending = false;
    let error = false;
    for (const run of commit.checkRuns) {
      if (run.status !== 'completed') pending = true;
      else if (
        run.conclusion === 'failure' ||
        run.conclusion === 'timed_out' ||
        run.conclusion === 'cancelled' ||
        run.conclusion === 'action_required' ||
        run.conclusion === 'stale'
      ) {
        return 'FAILURE';
      }
    }
    for (const s of statuses) {
      if (s.state === 'failure') return 'FAILURE';
      if (s.state === 'error') error = true;
      if (s.state === 'pending') pending = true;
    }
    if (error) return 'ERROR';
    return pending ? 'PENDING' : 'SUCCESS';
  }

  /** REST mergeable_state: dirty, draft, blocked (review), unstable (checks), unknown, clean. */
  mergeableState(pull: PullRequest): string {
    if (pull.issue.state !== 'open') return 'unknown';
    if (pull.mergeable === null) return 'unknown';
    if (!pull.mergeable) return 'dirty';
    if (pull.draft) return 'draft';
    const decision = this.reviewDecision(pull);
    if (decision === 'CHANGES_REQUESTED' || decision === 'REVIEW_REQUIRED') return 'blocked';
    const commit = pull.issue.repo.commits.get(pull.headSha);
    const rollup = commit ? this.rollupState(commit) : null;
    if (rollup === 'FAILURE' || rollup === 'ERROR') return 'unstable';
    if (rollup === 'PENDING') return 'unstable';
    return 'clean';
  }

  counts(): { repos: number; issues: number; pulls: number } {
    let issues = 0;
    let pulls = 0;
    for (const repo of this.repos.values()) {
      pulls += repo.pulls.size;
      issues += repo.issues.size - repo.pulls.size;
    }
    return { repos: this.repos.size, issues, pulls };
  }
}
