/**
 * The emulated GitHub world, composed of what it keeps (the way the analyzer is composed of its
 * accumulators): the objects themselves (users, repositories, issues, pull requests, reviews and
 * comments, kept here; their shapes in world/objects.ts), their timestamps and versions
 * (world/time.ts), refs and pushes (world/refs.ts), and check runs and statuses
 * (world/checks.ts). Search reads the objects (search.ts). Every change takes a new number from
 * one global sequence and stamps it on what changed (`version`, and the repo's `pullsVersion` /
 * `issuesVersion`), so ETags are (token, resource, version) and never a hash of a body, and
 * `updated_at` ordering has a deterministic tiebreak when two changes share a millisecond.
 */

import type { Clock } from '../clock/index.ts';
import {
  DEFAULT_USER,
  type Fixtures,
  type IssueFixture,
  type PullFixture,
  type RepoFixture,
} from './fixtures.ts';
import type { Touched } from './touched.ts';
import { isProtected, roleOf } from './world/access.ts';
import { ISSUE_BOUNDS, longerThan } from './world/bounds.ts';
import { Checks } from './world/checks.ts';
import { closingIssue } from './world/closing.ts';
import { IssueEvents } from './world/events.ts';
import { GITHUB_COMMITTER, type GitIdent, readmeTree } from './world/git-objects.ts';
import { GitStore } from './world/git-store.ts';
import { checkLabelName, type LabelInput, Labels } from './world/labels.ts';
import { type MadeMerge, type MergeChoice, makeMerge } from './world/merges.ts';
import { Milestones } from './world/milestones.ts';
import type { WorldListener, WorldNotice } from './world/notices.ts';
import {
  type Commit,
  type CommitStatus,
  GitHubStateError,
  type Issue,
  type IssueComment,
  type IssueEvent,
  type Label,
  nodeId,
  type OpenPullRequestInput,
  type PullRequest,
  type Repo,
  type Review,
  type ReviewComment,
  type ReviewState,
  type StatusState,
  type User,
  type UserType,
} from './world/objects.ts';
import { type Reaction, type ReactionContent, Reactions } from './world/reactions.ts';
import { Refs } from './world/refs.ts';
import { Releases } from './world/releases.ts';
import { FIXTURE_STEP_MS, fixtureRepoDates, WorldTime } from './world/time.ts';
import { Workflows } from './world/workflows.ts';

export * from './world/objects.ts';

/** A title GitHub takes: not blank, at most 256 characters (its words, as REST and GraphQL give them). */
function checkTitle(title: string): void {
  if (title.trim() === '') throw new GitHubStateError(422, "Title can't be blank", 'title');
  if (title.length > ISSUE_BOUNDS.maxTitleChars)
    throw new GitHubStateError(
      422,
      `title is too long (maximum is ${ISSUE_BOUNDS.maxTitleChars} characters)`,
      'title',
    );
}

/**
 * A comment body GitHub takes through its API (REST and GraphQL, a new comment or an edit): at
 * most 65,536 characters, refused in its words (world/bounds.ts).
 */
export function checkCommentBody(body: string): void {
  if (longerThan(body, ISSUE_BOUNDS.maxCommentChars))
    throw new GitHubStateError(
      422,
      `body is too long (maximum is ${ISSUE_BOUNDS.maxCommentChars} characters)`,
      'body',
    );
}

/** Labels GitHub takes onto an issue already holding `held`: names of 1 to 50 characters, 100 in all. */
function checkLabels(names: Iterable<string>, held: number): void {
  let count = held;
  for (const name of names) {
    checkLabelName(name, 'labels');
    if (++count > ISSUE_BOUNDS.maxLabels)
      throw new GitHubStateError(
        422,
        `an issue or pull request can have at most ${ISSUE_BOUNDS.maxLabels} labels`,
        'labels',
      );
  }
}

/**
 * How long GitHub's background mergeability job takes here (run time): a new pull request reads
 * `mergeable: null` until then, so a client's polling for it is exercised.
 */
export const MERGEABILITY_JOB_MS = 1_000;

/** GitHub refuses an author's approval or change request on their own pull request (a comment is fine). */
function refuseOwnVerdict(state: ReviewState): void {
  if (state === 'APPROVED') throw new GitHubStateError(422, 'Can not approve your own pull request');
  if (state === 'CHANGES_REQUESTED')
    throw new GitHubStateError(422, 'Can not request changes on your own pull request');
}

/** Colors of the labels fixtures name without declaring them (GitHub's default labels' colors). */
const LABEL_COLORS = ['d73a4a', 'a2eeef', '0075ca', '7057ff', '008672', 'e4e669', 'd876e3'];
function paletteColor(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return LABEL_COLORS[h % LABEL_COLORS.length]!;
}

/** The webhook action of each recorded issue event that has one (a merge is told as its `closed`). */
const EVENT_ACTIONS: Partial<Record<IssueEvent['event'], string>> = {
  closed: 'closed',
  reopened: 'reopened',
  labeled: 'labeled',
  unlabeled: 'unlabeled',
  assigned: 'assigned',
  unassigned: 'unassigned',
  renamed: 'edited',
  ready_for_review: 'ready_for_review',
  review_requested: 'review_requested',
  review_request_removed: 'review_request_removed',
  convert_to_draft: 'converted_to_draft',
  auto_merge_enabled: 'auto_merge_enabled',
  auto_merge_disabled: 'auto_merge_disabled',
};

export class GitHubState {
  /** Timestamps, versions and ids. */
  readonly time: WorldTime;
  /** Commits, branches and pushes. */
  readonly refs: Refs;
  /** The blobs and trees the contents and Git data APIs make and read (world/git-store.ts). */
  readonly gitStore = new GitStore();
  /** Check runs and statuses on commits. */
  readonly checks: Checks;
  /** Actions runs GitHub runs itself: re-runs, cancels, dispatches (world/workflows.ts). */
  readonly workflows: Workflows;
  /** What happens to issues and pull requests, for their events and timelines. */
  readonly events: IssueEvents;
  /** Each repository's label table. */
  readonly labelTable: Labels;
  /** Reactions on issues, pull requests and issue comments. */
  readonly reactions: Reactions;
  /** Each repository's releases. */
  readonly releases: Releases;
  /** Each repository's milestones. */
  readonly milestones: Milestones;
  readonly users = new Map<string, User>();
  /**
   * The version of the world's set of users: moves when one is made (a token's or a fixture's
   * login), so what lists them (`GET …/assignees`) gets a new ETag though no repository changed.
   */
  usersVersion = 0;
  readonly repos = new Map<string, Repo>();
  /**
   * Every issue comment by id, with its issue: `…/issues/comments/{id}` and GraphQL's comment
   * node ids find one in O(1), not by reading every comment of every issue. Kept by
   * postIssueComment and deleteIssueComment (and the fixtures' comments).
   */
  private readonly issueCommentsById = new Map<number, { issue: Issue; comment: IssueComment }>();
  readonly defaultUser: User;
  /** Global node ids (GraphQL `node(id:)`) of users, repositories, issues and pull requests. */
  readonly nodes = new Map<string, User | Repo | Issue | PullRequest>();
  /** URLs rendered into JSON; changing them invalidates every cached body. */
  apiUrl = 'https://api.github.com';
  webUrl = 'https://github.com';
  urlEpoch = 0;
  /**
   * While set, GraphQL resolvers note the pull requests, issues and branches a query looks up
   * by name (content attribution, attribution.ts). Unset (the default) it costs nothing.
   */
  touched: Touched | undefined = undefined;
  /** Told of each change a webhook event describes (world/notices.ts); unset (the default) costs nothing. */
  private listener: WorldListener | undefined = undefined;

  constructor(fixtures: Fixtures, options: { clock: Clock }) {
    this.time = new WorldTime(options.clock);
    this.refs = new Refs(this.time, this.gitStore);
    this.checks = new Checks(this.time, () => this.defaultUser);
    this.workflows = new Workflows(this.time, this.checks);
    this.events = new IssueEvents(this.time);
    this.labelTable = new Labels(this.time);
    this.reactions = new Reactions(this.time);
    this.milestones = new Milestones(this.time, (issue) => this.restamp(issue));
    this.releases = new Releases(this.time, (repo, name, sha, by) =>
      this.createTag(repo, `refs/tags/${name}`, sha, by),
    );
    for (const user of fixtures.users ?? []) this.ensureUser(user.login, user.type ?? 'User', user.name);
    for (const org of fixtures.users ?? [])
      if (org.members !== undefined)
        this.ensureUser(org.login).members = new Set(org.members.map((login) => this.ensureUser(login)));
    this.defaultUser = this.ensureUser(fixtures.default_user ?? DEFAULT_USER);
    // Fixture objects are dated before the run starts, a minute apart, in file order.
    const dates = fixtureRepoDates(fixtures.repos);
    fixtures.repos.forEach((repo, i) => {
      this.addRepoAt(repo, dates[i]!);
    });
  }

  /** Tells `listener` of every change from now on (the webhooks, webhooks.ts). */
  listen(listener: WorldListener): void {
    this.listener = listener;
    this.events.onAdd = (issue, event) => {
      const action = EVENT_ACTIONS[event.event];
      if (action === undefined) return;
      this.notify({
        kind: 'issue',
        action,
        issue,
        sender: event.actor,
        ...(event.label ? { label: event.label } : {}),
        ...(event.assignee ? { assignee: event.assignee } : {}),
        ...(event.requestedReviewer ? { requestedReviewer: event.requestedReviewer } : {}),
        ...(event.rename ? { changes: { title: { from: event.rename.from } } } : {}),
      });
    };
    /** The suites last told completed: told again only once a new run has reopened them. */
    const completedSuites = new Set<number>();
    this.checks.onRun = (run, commit, action) => {
      const repo = this.repoOfCommit(commit);
      if (repo) this.notify({ kind: 'check_run', action, repo, run, sender: this.defaultUser });
    };
    this.checks.onRunChanged = (run, commit) => {
      const suite = commit.checkSuites.find((s) => s.id === run.suiteId);
      const repo = suite === undefined ? undefined : this.repoOfCommit(commit);
      if (suite === undefined || repo === undefined) return;
      if (this.checks.suiteState(commit, suite).status !== 'completed') completedSuites.delete(suite.id);
      else if (!completedSuites.has(suite.id)) {
        completedSuites.add(suite.id);
        this.notify({ kind: 'check_suite', repo, commit, suite, sender: this.defaultUser });
      }
    };
    this.checks.onStatus = (status, commit) => {
      const repo = this.repoOfCommit(commit);
      if (repo) this.notify({ kind: 'status', repo, commit, status, sender: status.creator });
    };
  }

  /** The repository holding a commit (a check run or a status names only the commit). */
  private repoOfCommit(commit: Commit): Repo | undefined {
    for (const repo of this.repos.values()) if (repo.commits.get(commit.sha) === commit) return repo;
    return undefined;
  }

  private notify(notice: WorldNotice): void {
    this.listener?.(notice);
  }

  setUrls(apiUrl: string, webUrl: string): void {
    this.apiUrl = apiUrl.replace(/\/+$/, '');
    this.webUrl = webUrl.replace(/\/+$/, '');
    this.urlEpoch++;
  }

  ensureUser(login: string, type: UserType = login.endsWith('[bot]') ? 'Bot' : 'User', name?: string): User {
    const key = login.toLowerCase();
    const existing = this.users.get(key);
    if (existing) return existing;
    const id = this.time.id();
    const prefix = type === 'Organization' ? 'O' : type === 'Bot' ? 'BOT' : 'U';
    const user: User = { login, id, nodeId: nodeId(prefix, id), type, name: name ?? null };
    this.users.set(key, user);
    this.usersVersion = this.time.bump();
    this.nodes.set(user.nodeId, user);
    return user;
  }

  /** The world's user a git identity's no-reply address names (`[ID+]LOGIN@users.noreply.github.com`). */
  userOfIdent(ident: GitIdent): User | undefined {
    const at = ident.email.indexOf('@users.noreply.github.com');
    if (at <= 0) return undefined;
    const local = ident.email.slice(0, at);
    return this.findUser(local.slice(local.indexOf('+') + 1));
  }

  /**
   * The users of these logins, each once (a login named twice, in any case, is one assignee), the
   * first ten (GitHub's bound, world/bounds.ts): the names past them are not even looked up.
   */
  private assigneesOf(logins: readonly string[]): User[] {
    const users = new Set<User>();
    for (const login of logins) {
      if (users.size === ISSUE_BOUNDS.maxAssignees) break;
      users.add(this.ensureUser(login));
    }
    return [...users];
  }

  findUser(login: string): User | undefined {
    return this.users.get(login.toLowerCase());
  }

  /** Case-insensitive, like GitHub. */
  findRepo(owner: string, name: string): Repo | undefined {
    const key = `${owner}/${name}`;
    return this.repos.get(key) ?? this.repos.get(key.toLowerCase());
  }

  /**
   * An account's repositories as `viewer` may list them (a private one only to a viewer with a role
   * on it: its owner, a collaborator, a member of its organization), ordered by `key` (ties by
   * id), descending when asked: what REST's `/users/{u}/repos` and GraphQL's `repositories` list.
   */
  reposOwnedBy(
    owner: User,
    viewer: User | undefined,
    key: (repo: Repo) => number | string,
    descending: boolean,
  ): Repo[] {
    const repos = [...this.repos.values()].filter(
      (r) => r.owner === owner && (!r.private || (viewer !== undefined && roleOf(viewer, r) !== null)),
    );
    return repos.sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      const order = x < y ? -1 : x > y ? 1 : a.id - b.id;
      return descending ? -order : order;
    });
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

  /** A repository's own fields changed (REST `PATCH /repos/…`): `updated_at` moves, not `pushed_at`. */
  updateRepo(
    repo: Repo,
    input: { settings?: Repo['settings']; description?: string | null; topics?: string[] },
  ): Repo {
    if (input.settings !== undefined) repo.settings = input.settings;
    if (input.description !== undefined) repo.description = input.description;
    if (input.topics !== undefined) repo.topics = input.topics;
    repo.updatedAt = this.time.now();
    // Everything that embeds the repository object (pull requests, a combined status) changes
    // with it, as with a push (pushVersion), though nothing was pushed.
    repo.version = repo.pushVersion = repo.pullsVersion = this.time.bump();
    this.refs.reposVersion = repo.version;
    return repo;
  }

  /** Adds a repository (from a fixture entry) dated now. */
  addRepo(fixture: RepoFixture): Repo {
    return this.addRepoAt(fixture, this.time.now());
  }

  private addRepoAt(fixture: RepoFixture, at: number): Repo {
    const fullName = `${fixture.owner}/${fixture.name}`;
    if (this.repos.has(fullName.toLowerCase()))
      throw new GitHubStateError(422, `repository ${fullName} exists`);
    const owner = this.ensureUser(fixture.owner, this.findUser(fixture.owner)?.type ?? 'Organization');
    const id = this.time.id();
    const v = this.time.bump();
    const readme = `# ${fixture.name}\n${fixture.description ? `\n${fixture.description}\n` : ''}`;
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
      settings: {
        allowMergeCommit: fixture.allow_merge_commit ?? true,
        allowSquashMerge: fixture.allow_squash_merge ?? true,
        allowRebaseMerge: fixture.allow_rebase_merge ?? true,
        deleteBranchOnMerge: fixture.delete_branch_on_merge ?? false,
        // GitHub's default is off; on here, as on the team repositories whose control planes use it
        // (docs/github-emulator.md, "Auto-merge").
        allowAutoMerge: fixture.allow_auto_merge ?? true,
      },
      topics: [],
      readme,
      initialTree: readmeTree(readme).treeSha,
      createdAt: at,
      updatedAt: at,
      pushedAt: at,
      pushVersion: v,
      branches: new Map(),
      tags: new Map(),
      tagObjects: new Map(),
      releases: new Map(),
      releasesVersion: v,
      milestones: new Map(),
      nextMilestone: 1,
      milestonesVersion: v,
      commits: new Map(),
      issues: new Map(),
      pulls: new Map(),
      pullsByHead: new Map(),
      nextNumber: 1,
      version: v,
      issuesVersion: v,
      pullsVersion: v,
      labels: new Map(),
      labelsVersion: v,
      collaborators: new Map(),
      contributors: new Set(),
      pullAuthors: new Set(),
      listCache: new Map(),
      bodyCache: new Map(),
    };
    for (const label of fixture.labels ?? []) this.labelTable.create(repo, label, paletteColor(label.name));
    for (const c of fixture.collaborators ?? [])
      repo.collaborators.set(this.ensureUser(c.login), c.role_name ?? 'write');
    this.repos.set(fullName.toLowerCase(), repo);
    this.nodes.set(repo.nodeId, repo);
    this.refs.reposVersion = v;
    // The repository's first commit, as GitHub makes one with a README: by its owner.
    const author = this.refs.ident(owner, at);
    const initial = this.refs.makeCommit(repo, {
      message: 'Initial commit',
      at,
      parents: [],
      author,
      committer: { ...GITHUB_COMMITTER, seconds: author.seconds },
    });
    repo.branches.set(repo.defaultBranch, initial.sha);
    for (const branch of fixture.branches ?? []) {
      const message = `Work on ${branch.name}`;
      const commit =
        branch.sha === undefined
          ? this.refs.makeCommit(repo, {
              message,
              at,
              parents: [initial.sha],
              author: this.refs.ident(this.defaultUser, at),
            })
          : this.refs.namedCommit(repo, branch.sha, message, at, [initial.sha], this.defaultUser);
      repo.branches.set(branch.name, commit.sha);
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
    let t = at + FIXTURE_STEP_MS;
    for (const issue of fixture.issues ?? []) {
      this.addFixtureIssue(repo, issue, issue.number ?? nextFree(), t);
      t += FIXTURE_STEP_MS;
    }
    for (const pull of fixture.pulls ?? []) {
      this.addFixturePull(repo, pull, pull.number ?? nextFree(), t);
      t += FIXTURE_STEP_MS;
    }
    let highest = 0;
    for (const n of taken) if (n > highest) highest = n;
    repo.nextNumber = highest + 1;
    return repo;
  }

  private newIssue(repo: Repo, number: number, at: number, fields: IssueFixture | PullFixture): Issue {
    const id = this.time.id();
    const v = this.time.bump();
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
      // Labels a fixture names without declaring them join the repository's table.
      labels: this.labelTable.ensure(
        repo,
        [...new Map((fields.labels ?? []).map((n) => [n.toLowerCase(), n])).values()],
        paletteColor,
      ),
      assignees: this.assigneesOf(('assignees' in fields ? fields.assignees : undefined) ?? []),
      comments: [],
      createdAt: at,
      updatedAt: at,
      closedAt: null,
      version: v,
      commentsVersion: v,
      events: [],
    };
    for (const c of fields.comments ?? []) {
      const cid = this.time.id();
      const comment: IssueComment = {
        id: cid,
        nodeId: nodeId('IC', cid),
        user: c.user ? this.ensureUser(c.user) : this.defaultUser,
        body: c.body,
        createdAt: at,
        updatedAt: at,
      };
      issue.comments.push(comment);
      this.issueCommentsById.set(cid, { issue, comment });
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
    // A fixture pull request has been open a while: GitHub has computed its mergeability.
    this.fixMergeable(
      pull,
      fixture.mergeable === undefined ? this.computeMergeable(pull) : fixture.mergeable,
    );
    const commit = repo.commits.get(pull.headSha)!;
    for (const check of fixture.checks ?? []) this.checks.setCheckRun(commit, check, at);
    for (const status of fixture.statuses ?? []) {
      this.checks.setStatus(
        commit,
        {
          context: status.context,
          state: status.state,
          description: status.description,
          targetUrl: status.target_url,
        },
        at,
      );
    }
    for (const review of fixture.reviews ?? [])
      this.putReview(pull, review.user, review.state, review.body ?? '', at);
    for (const c of fixture.review_comments ?? [])
      this.putReviewComment(pull, null, c.user, c.body, c.path, c.line, at);
    const merged =
      fixture.state === 'merged'
        ? makeMerge(
            this.refs,
            pull,
            { method: 'merge', title: undefined, message: undefined },
            this.defaultUser,
            at,
          )
        : undefined;
    if (merged !== undefined || fixture.state === 'closed')
      this.closePull(pull, merged, this.defaultUser, at);
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
    } else if (base === repo.defaultBranch && input.body !== undefined) {
      linked = closingIssue(repo, input.body);
    }
    const branchSha = repo.branches.get(input.head);
    const pushed = (input.sha !== undefined && input.sha !== branchSha) || branchSha === undefined;
    // A head commit the repository has: GitHub refuses a pull request that would hold none (a
    // branch made at the base's commit, or one already merged into it).
    let headSha = branchSha;
    let commits: string[];
    const message = `Work on ${input.head}`;
    const parents = [branchSha ?? baseSha];
    const author = input.user ? this.ensureUser(input.user) : this.defaultUser;
    if (!pushed) {
      commits = this.refs.compare(repo, baseSha, branchSha!).ahead.map((c) => c.sha);
    } else if (input.sha !== undefined && repo.commits.has(input.sha)) {
      headSha = input.sha;
      commits = this.refs.compare(repo, baseSha, headSha).ahead.map((c) => c.sha);
    } else {
      // A commit pushed with the pull request: it is new, so the pull request holds it.
      const commit =
        input.sha === undefined
          ? this.refs.makeCommit(repo, { message, at, parents, author: this.refs.ident(author, at) })
          : this.refs.namedCommit(repo, input.sha, message, at, parents, author);
      headSha = commit.sha;
      commits = this.refs.compare(repo, baseSha, headSha).ahead.map((c) => c.sha);
    }
    if (commits.length === 0) throw new GitHubStateError(422, `No commits between ${base} and ${input.head}`);
    if (pushed) repo.branches.set(input.head, headSha!);
    const issue = this.newIssue(repo, number, at, {
      title: input.title ?? (linked ? `Fix #${linked.number}: ${linked.title}` : `Update ${input.head}`),
      body: input.body ?? (linked ? `Closes #${linked.number}` : ''),
      head: input.head,
      user: input.user,
      labels: input.labels,
      comments: input.comments,
    });
    const id = this.time.id();
    const pull: PullRequest = {
      issue,
      id,
      nodeId: nodeId('PR', id),
      head: input.head,
      base,
      headSha: headSha!,
      baseSha,
      draft: input.draft ?? false,
      merged: false,
      mergedAt: null,
      mergedBy: null,
      mergeCommitSha: null,
      // New: GitHub starts computing whether it merges cleanly when someone asks (mergeability).
      mergeable: null,
      mergeableOf: null,
      mergeableJob: null,
      linkedIssue: linked?.number ?? null,
      commits,
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
    // The issue it closes shows it in its timeline ("cross-referenced"), as GitHub does.
    if (linked !== undefined) {
      this.events.add(linked, 'cross-referenced', issue.user, at, { source: issue });
      this.touchIssue(linked, at);
    }
    // The branch was pushed before the pull request was opened on it.
    if (pushed) this.refs.pushed(repo, at);
    this.noteAuthor(repo, repo.pullAuthors, issue.user);
    return pull;
  }

  /**
   * A user joins one of the sets `author_association` is computed from (a pull request's authors,
   * the contributors): the first time, every representation showing their association in the
   * repository changes, so everything in it takes a new version (`updated_at` kept).
   */
  private noteAuthor(repo: Repo, set: Set<User>, user: User): void {
    if (set.has(user)) return;
    set.add(user);
    // Its comments show the association too (`author_association` of each).
    for (const issue of repo.issues.values()) {
      const v = this.restamp(issue);
      issue.commentsVersion = v;
      if (issue.pull) issue.pull.reviewsVersion = issue.pull.reviewCommentsVersion = v;
    }
  }

  /**
   * Deletes a branch (`DELETE /repos/{owner}/{repo}/git/refs/heads/{branch}`). GitHub closes the
   * open pull requests whose head it was; the default branch cannot be deleted.
   */
  deleteBranch(repo: Repo, branch: string, by: User = this.defaultUser): void {
    if (!repo.branches.has(branch)) throw new GitHubStateError(422, 'Reference does not exist');
    if (branch === repo.defaultBranch) throw new GitHubStateError(422, 'Cannot delete the default branch');
    repo.branches.delete(branch);
    this.notify({ kind: 'ref', action: 'delete', repo, refType: 'branch', ref: branch, sender: by });
    const at = this.time.now();
    for (const pull of repo.pullsByHead.get(branch) ?? []) {
      this.events.add(pull.issue, 'head_ref_deleted', by, at);
      if (pull.issue.state === 'open') this.closePull(pull, undefined, by, at);
      else this.touchIssue(pull.issue, at);
    }
  }

  /**
   * `POST /git/refs` (or GraphQL's createRef) of a branch: made where `sha` is, told as GitHub
   * tells it, a `create` and a `push` that created the branch.
   */
  createBranch(repo: Repo, ref: string, sha: string, by: User = this.defaultUser): string {
    const branch = this.refs.createRef(repo, ref, sha);
    const after = this.listener === undefined ? undefined : repo.commits.get(sha);
    if (after !== undefined) {
      this.notify({ kind: 'ref', action: 'create', repo, refType: 'branch', ref: branch, sender: by });
      this.notify({ kind: 'push', repo, branch, before: null, after, forced: false, sender: by });
    }
    return branch;
  }

  /** `POST /git/refs` of a tag (world/refs.ts's rules), told as a `create`. */
  createTag(repo: Repo, ref: string, sha: string, by: User = this.defaultUser): string {
    const name = this.refs.createTagRef(repo, ref, sha);
    this.notify({ kind: 'ref', action: 'create', repo, refType: 'tag', ref: name, sender: by });
    return name;
  }

  /** A tag set, moved or deleted (`sha` null) by the refs routes or a push; a new or deleted one told. */
  setTag(repo: Repo, name: string, sha: string | null, by: User = this.defaultUser): void {
    const existed = repo.tags.has(name);
    this.refs.setTag(repo, name, sha);
    if (existed === (sha !== null)) return;
    const action = sha === null ? 'delete' : 'create';
    this.notify({ kind: 'ref', action, repo, refType: 'tag', ref: name, sender: by });
  }

  /** Marks an issue (and its PR) changed now: new version, new updated_at. */
  touchIssue(issue: Issue, at = this.time.now()): number {
    issue.updatedAt = at;
    return this.restamp(issue);
  }

  // ----- mutations (the admin API and REST writes call these) -----

  createIssue(
    repo: Repo,
    input: { title: string; body?: string; user?: string; labels?: string[]; assignees?: string[] },
  ): Issue {
    checkTitle(input.title);
    checkLabels(new Set(input.labels ?? []), 0);
    const number = repo.nextNumber++;
    const issue = this.newIssue(repo, number, this.time.now(), input);
    if (this.listener !== undefined) {
      // GitHub follows `opened` with a `labeled` per label and an `assigned` per assignee given.
      const sender = issue.user;
      this.notify({ kind: 'issue', action: 'opened', issue, sender });
      for (const label of issue.labels)
        this.notify({ kind: 'issue', action: 'labeled', issue, sender, label });
      for (const assignee of issue.assignees)
        this.notify({ kind: 'issue', action: 'assigned', issue, sender, assignee });
    }
    return issue;
  }

  openPullRequest(repo: Repo, input: OpenPullRequestInput): PullRequest {
    if (input.title !== undefined) checkTitle(input.title);
    const number = repo.nextNumber;
    const pull = this.createPull(repo, number, this.time.now(), input);
    repo.nextNumber++;
    this.notify({ kind: 'issue', action: 'opened', issue: pull.issue, sender: pull.issue.user });
    return pull;
  }

  pushCommit(pull: PullRequest, input: { sha?: string; message?: string } = {}): Commit {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    const repo = pull.issue.repo;
    const at = this.time.now();
    const message = input.message ?? `Update ${pull.head}`;
    const author = pull.issue.user;
    const commit =
      input.sha === undefined
        ? this.refs.makeCommit(repo, {
            message,
            at,
            parents: [pull.headSha],
            author: this.refs.ident(author, at),
          })
        : this.refs.namedCommit(repo, input.sha, message, at, [pull.headSha], author);
    const sha = commit.sha;
    const before = pull.headSha;
    repo.branches.set(pull.head, sha);
    pull.headSha = sha;
    pull.commits.push(sha);
    this.touchIssue(pull.issue, at);
    this.refs.pushed(repo, at);
    if (this.listener !== undefined) {
      const sender = pull.issue.user;
      this.notify({ kind: 'push', repo, branch: pull.head, before, after: commit, forced: false, sender });
      this.notify({ kind: 'synchronize', pull, before, after: sha, sender });
    }
    this.scheduleAutoMerge(pull);
    return commit;
  }

  /** The admin API's push of a branch: a new commit on it (or the one named), as `branchPushed`. */
  pushBranch(repo: Repo, input: { branch: string; sha?: string; message?: string }): Commit {
    const commit = this.refs.pushedTip(repo, input, this.defaultUser);
    this.branchPushed(repo, input.branch, commit.sha);
    return commit;
  }

  /**
   * A branch created or moved by a push (git's, or the admin API's): `pushed_at` moves, and each
   * open pull request whose head it is takes the new head and the commits it now holds.
   */
  branchPushed(
    repo: Repo,
    branch: string,
    sha: string,
    at = this.time.now(),
    by: User = this.defaultUser,
  ): void {
    const before = repo.branches.get(branch) ?? null;
    repo.branches.set(branch, sha);
    const synchronized: { pull: PullRequest; before: string }[] = [];
    for (const pull of repo.pullsByHead.get(branch) ?? []) {
      if (pull.issue.state !== 'open' || pull.headSha === sha) continue;
      // A push that drops commits the head had (`git push --force`) shows in the timeline.
      if (!this.refs.reaches(repo, sha, pull.headSha))
        this.events.add(pull.issue, 'head_ref_force_pushed', by, at);
      const baseTip = repo.branches.get(pull.base);
      synchronized.push({ pull, before: pull.headSha });
      pull.headSha = sha;
      pull.commits =
        baseTip === undefined ? [sha] : this.refs.compare(repo, baseTip, sha).ahead.map((c) => c.sha);
      this.touchIssue(pull.issue, at);
    }
    this.refs.pushed(repo, at);
    const after = this.listener === undefined || before === sha ? undefined : repo.commits.get(sha);
    if (after !== undefined) {
      const forced = before !== null && !this.refs.reaches(repo, sha, before);
      if (before === null)
        this.notify({ kind: 'ref', action: 'create', repo, refType: 'branch', ref: branch, sender: by });
      this.notify({ kind: 'push', repo, branch, before, after, forced, sender: by });
      for (const s of synchronized)
        this.notify({ kind: 'synchronize', pull: s.pull, before: s.before, after: sha, sender: by });
    }
    for (const s of synchronized) this.scheduleAutoMerge(s.pull);
    // A base that moved may now merge what waited on it (or conflict with it).
    this.scheduleAutoMergesInto(repo, branch);
  }

  /** A status on a commit, created by `user` when named (the admin API's). */
  setStatus(
    commit: Commit,
    input: { context: string; state: StatusState; description?: string; targetUrl?: string; user?: string },
  ): CommitStatus {
    const status = this.checks.setStatus(commit, input);
    if (input.user) status.creator = this.ensureUser(input.user);
    return status;
  }

  submitReview(pull: PullRequest, input: { user?: string; state: ReviewState; body?: string }): Review {
    return this.putReview(pull, input.user, input.state, input.body ?? '', this.time.now());
  }

  private putReview(
    pull: PullRequest,
    login: string | undefined,
    state: ReviewState,
    body: string,
    at: number,
  ): Review {
    const id = this.time.id();
    const user = login ? this.ensureUser(login) : this.reviewer();
    if (state === 'PENDING' && this.pendingReview(pull, user) !== undefined)
      throw new GitHubStateError(422, 'User can only have one pending review per pull request');
    const review: Review = {
      id,
      nodeId: nodeId('PRR', id),
      user,
      state,
      body,
      submittedAt: state === 'PENDING' ? null : at,
      createdAt: at,
      commitId: pull.headSha,
    };
    pull.reviews.push(review);
    if (state !== 'PENDING') this.reviewGiven(pull, user);
    pull.reviewsVersion = this.touchIssue(pull.issue, at);
    if (state !== 'PENDING') this.notify({ kind: 'review', pull, review, sender: user });
    if (state !== 'PENDING') this.scheduleAutoMerge(pull);
    return review;
  }

  /**
   * Merges the base branch into a pull request's head (`PUT …/pulls/{n}/update-branch`, the "Update
   * branch" button): a merge commit on the head, `Merge branch 'BASE' into HEAD`, its parents the
   * head and the base's tip, pushed as a push is (the pull request synchronized). GitHub's 422s:
   * the head moved from `expectedHead`, nothing new on the base, a conflict.
   */
  updatePullBranch(pull: PullRequest, expectedHead: string | undefined, by: User = this.defaultUser): string {
    const repo = pull.issue.repo;
    if (pull.issue.state !== 'open') throw new GitHubStateError(422, 'Pull request is not open.');
    if (expectedHead !== undefined && expectedHead !== pull.headSha)
      throw new GitHubStateError(422, "expected head sha didn't match current head ref.");
    const baseTip = repo.branches.get(pull.base);
    if (baseTip === undefined || this.refs.reaches(repo, pull.headSha, baseTip))
      throw new GitHubStateError(422, 'There are no new commits on the base branch.');
    const tree = this.refs.mergeTrees(repo, pull.headSha, baseTip);
    if (tree === undefined) throw new GitHubStateError(422, 'merge conflict between base and head');
    const at = this.time.now();
    const author = this.refs.ident(by, at);
    const sha = this.refs.makeCommit(repo, {
      message: `Merge branch '${pull.base}' into ${pull.head}`,
      at,
      parents: [pull.headSha, baseTip],
      author,
      committer: { ...GITHUB_COMMITTER, seconds: author.seconds },
      tree,
    }).sha;
    this.branchPushed(repo, pull.head, sha, at, by);
    return sha;
  }

  /** A review given takes its reviewer off the requested ones, as on GitHub (no event). */
  private reviewGiven(pull: PullRequest, user: User): void {
    const requested = pull.requestedReviewers;
    if (requested?.includes(user)) pull.requestedReviewers = requested.filter((u) => u !== user);
  }

  /**
   * Asks `users` for a review of the pull request (`POST …/requested_reviewers`): each one not
   * asked yet is added, with a `review_requested` event; none is its author (422, as GitHub).
   */
  requestReviewers(pull: PullRequest, users: readonly User[], by: User = this.defaultUser): void {
    if (users.includes(pull.issue.user))
      throw new GitHubStateError(422, 'Review cannot be requested from pull request author.');
    // Sets, not array scans: a request names any number of users (its body's 5 MiB), and a scan of
    // those asked for each one named was quadratic (docs/limits.md).
    const requested = pull.requestedReviewers ?? [];
    const asked = new Set(requested);
    const fresh = [...new Set(users)].filter((u) => !asked.has(u));
    if (fresh.length === 0) return;
    pull.requestedReviewers = [...requested, ...fresh];
    const at = this.time.now();
    for (const user of fresh)
      this.events.add(pull.issue, 'review_requested', by, at, { requestedReviewer: user });
    pull.reviewsVersion = this.touchIssue(pull.issue, at);
  }

  /** Takes `users` off the requested reviewers, a `review_request_removed` event each. */
  removeRequestedReviewers(pull: PullRequest, users: readonly User[], by: User = this.defaultUser): void {
    const requested = pull.requestedReviewers ?? [];
    const named = new Set(users);
    const gone = requested.filter((u) => named.has(u));
    if (gone.length === 0) return;
    pull.requestedReviewers = requested.filter((u) => !named.has(u));
    const at = this.time.now();
    for (const user of gone)
      this.events.add(pull.issue, 'review_request_removed', by, at, { requestedReviewer: user });
    pull.reviewsVersion = this.touchIssue(pull.issue, at);
  }

  /** A user's pending review of the pull request (at most one, as on GitHub). */
  pendingReview(pull: PullRequest, user: User): Review | undefined {
    return pull.reviews.find((r) => r.state === 'PENDING' && r.user === user);
  }

  /** Submits a pending review (`POST …/reviews/{id}/events`): its verdict, its time. */
  submitPendingReview(
    pull: PullRequest,
    review: Review,
    input: { state: ReviewState; body?: string },
  ): Review {
    if (review.state !== 'PENDING')
      throw new GitHubStateError(422, 'Can not submit a non-pending pull request review');
    if (review.user === pull.issue.user) refuseOwnVerdict(input.state);
    const at = this.time.now();
    review.state = input.state;
    if (input.body !== undefined) review.body = input.body;
    review.submittedAt = at;
    this.reviewGiven(pull, review.user);
    pull.reviewsVersion = this.touchIssue(pull.issue, at);
    this.notify({ kind: 'review', pull, review, sender: review.user });
    this.scheduleAutoMerge(pull);
    return review;
  }

  /** Deletes a pending review and its comments (GitHub deletes only a pending one). */
  deletePendingReview(pull: PullRequest, review: Review): Review {
    if (review.state !== 'PENDING')
      throw new GitHubStateError(422, 'Can not delete a non-pending pull request review');
    pull.reviews = pull.reviews.filter((r) => r !== review);
    pull.reviewComments = pull.reviewComments.filter((c) => c.reviewId !== review.id);
    const v = this.touchIssue(pull.issue);
    pull.reviewsVersion = v;
    pull.reviewCommentsVersion = v;
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
    const at = this.time.now();
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
    const at = this.time.now();
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
    const id = this.time.id();
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
    this.notify({ kind: 'review_comment', pull, comment, sender: comment.user });
    return comment;
  }

  postIssueComment(issue: Issue, input: { body: string; user?: string }): IssueComment {
    const at = this.time.now();
    const id = this.time.id();
    const comment: IssueComment = {
      id,
      nodeId: nodeId('IC', id),
      user: input.user ? this.ensureUser(input.user) : this.defaultUser,
      body: input.body,
      createdAt: at,
      updatedAt: at,
    };
    issue.comments.push(comment);
    this.issueCommentsById.set(id, { issue, comment });
    issue.commentsVersion = this.touchIssue(issue, at);
    this.notify({ kind: 'comment', issue, comment, sender: comment.user });
    return comment;
  }

  /**
   * Edits an issue comment's body (`PATCH …/issues/comments/{id}`), as a bot keeps one status
   * comment up to date: its `updated_at` moves, the issue's does not.
   */
  editIssueComment(
    issue: Issue,
    comment: IssueComment,
    body: string,
    by: User = this.defaultUser,
  ): IssueComment {
    const from = comment.body;
    comment.body = body;
    comment.updatedAt = this.time.now();
    issue.commentsVersion = this.restamp(issue);
    this.notify({
      kind: 'comment',
      action: 'edited',
      issue,
      comment,
      sender: by,
      changes: { body: { from } },
    });
    return comment;
  }

  /** Deletes an issue comment (`DELETE …/issues/comments/{id}`). */
  deleteIssueComment(issue: Issue, comment: IssueComment, by: User = this.defaultUser): void {
    issue.comments = issue.comments.filter((c) => c !== comment);
    this.issueCommentsById.delete(comment.id);
    issue.commentsVersion = this.restamp(issue);
    this.notify({ kind: 'comment', action: 'deleted', issue, comment, sender: by });
  }

  /**
   * Merges the pull request as GitHub does by method (world/merges.ts): a merge commit, one
   * squashed commit, or its commits rebased onto the base; `title` and `message` are the commit's
   * (REST `commit_title`/`commit_message`, GraphQL `commitHeadline`/`commitBody`). A repository
   * with `delete_branch_on_merge` then deletes the head branch.
   */
  mergePullRequest(pull: PullRequest, input: { user?: string } & Partial<MergeChoice> = {}): PullRequest {
    if (pull.merged) throw new GitHubStateError(405, `pull request #${pull.issue.number} is already merged`);
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(405, `pull request #${pull.issue.number} is closed`);
    const by = input.user ? this.ensureUser(input.user) : this.defaultUser;
    const at = this.time.now();
    const made = makeMerge(
      this.refs,
      pull,
      { method: input.method ?? 'merge', title: input.title, message: input.message },
      by,
      at,
    );
    if (made === undefined)
      throw new GitHubStateError(
        405,
        input.method === 'rebase' ? "This branch can't be rebased" : 'Pull Request has merge conflicts',
      );
    this.closePull(pull, made, by, at);
    const repo = pull.issue.repo;
    // "Automatically delete head branches": not the default branch, nor one another open pull request is based on.
    if (
      repo.settings.deleteBranchOnMerge &&
      pull.head !== repo.defaultBranch &&
      repo.branches.has(pull.head) &&
      ![...repo.pulls.values()].some((p) => p.issue.state === 'open' && p.base === pull.head)
    )
      this.deleteBranch(repo, pull.head, by);
    return pull;
  }

  /**
   * Sets a pull request to merge itself once nothing stops the merge (GraphQL
   * `enablePullRequestAutoMerge`, what `gh pr merge --auto` sends), with the method and the commit's
   * title and message it will merge with. GitHub's refusals, in its words: the repository does not
   * allow it, the method is not allowed, the pull request is closed, or it could be merged now (its
   * merge state `clean` or `unstable`: `gh pr merge --auto` merges at once then). Enabling it again
   * replaces the choice. Merged by `tryAutoMerge` after the changes that can unblock it.
   */
  enableAutoMerge(pull: PullRequest, input: { user?: string } & Partial<MergeChoice>): PullRequest {
    const repo = pull.issue.repo;
    if (!repo.settings.allowAutoMerge)
      throw new GitHubStateError(422, 'Auto merge is not allowed for this repository');
    const method = input.method ?? 'merge';
    const methodRefusal = this.mergeMethodRefusal(repo, method);
    if (methodRefusal !== undefined) throw new GitHubStateError(422, methodRefusal);
    if (pull.issue.state !== 'open') throw new GitHubStateError(422, 'Pull request is closed');
    // Mergeability as a merge would judge it, computed on the spot when unknown (mergeRefusal's).
    if (this.mergeRefusal(pull) === undefined) {
      const status = this.mergeableState(pull) === 'unstable' ? 'unstable' : 'clean';
      throw new GitHubStateError(422, `Pull request Pull request is in ${status} status`);
    }
    const by = input.user ? this.ensureUser(input.user) : this.defaultUser;
    const at = this.time.now();
    pull.autoMerge = { enabledBy: by, enabledAt: at, method, title: input.title, message: input.message };
    this.events.add(pull.issue, 'auto_merge_enabled', by, at);
    this.touchIssue(pull.issue, at);
    return pull;
  }

  /** Turns a pull request's auto-merge off (GraphQL `disablePullRequestAutoMerge`); nothing when it is off. */
  disableAutoMerge(pull: PullRequest, user?: string): PullRequest {
    if (pull.autoMerge === undefined) return pull;
    const by = user ? this.ensureUser(user) : this.defaultUser;
    const at = this.time.now();
    delete pull.autoMerge;
    this.events.add(pull.issue, 'auto_merge_disabled', by, at);
    this.touchIssue(pull.issue, at);
    return pull;
  }

  /**
   * Merges a pull request set to auto-merge if nothing stops it now (after a review, a push, its
   * leaving draft), as whoever enabled it, as GitHub does. In a served repository whose merge
   * needs git, the merge is computed first, off the event loop (world/refs.ts `prepareMerge`), and
   * tried again once it is; in process it merges at once, on the run's clock.
   */
  tryAutoMerge(pull: PullRequest, round = 0): void {
    const auto = pull.autoMerge;
    if (auto === undefined || pull.issue.state !== 'open') return;
    const repo = pull.issue.repo;
    const baseTip = repo.branches.get(pull.base);
    if (baseTip === undefined) return;
    const tips = this.mergeKey(pull);
    const ahead = this.refs.prepareMerge(repo, baseTip, pull.headSha);
    if (ahead !== undefined) {
      // Tried again once computed: the round counts only while the tips stay the same (a merge
      // evicted meanwhile is computed again, at most 3 times); tips that moved start again.
      if (round < 3)
        void ahead.then(
          () => this.tryAutoMerge(pull, this.mergeKey(pull) === tips ? round + 1 : 0),
          () => undefined,
        );
      return;
    }
    if (this.mergeRefusal(pull) !== undefined) return;
    try {
      this.mergePullRequest(pull, {
        user: auto.enabledBy.login,
        method: auto.method,
        title: auto.title,
        message: auto.message,
      });
    } catch (error) {
      // A merge that cannot be made (a conflict found only now) leaves auto-merge on, as GitHub does.
      if (!(error instanceof GitHubStateError)) throw error;
    }
  }

  /**
   * Tries a pull request's auto-merge once the change that may have unblocked it has been told (a
   * microtask later: its webhooks rendered with the pull request still open, as GitHub merges
   * after the change, not within it).
   */
  private scheduleAutoMerge(pull: PullRequest): void {
    if (pull.autoMerge !== undefined) queueMicrotask(() => this.tryAutoMerge(pull));
  }

  /** Every open pull request set to auto-merge into `branch`: its base moved. */
  private scheduleAutoMergesInto(repo: Repo, branch: string): void {
    for (const pull of repo.pulls.values())
      if (pull.autoMerge !== undefined && pull.base === branch && pull.issue.state === 'open')
        this.scheduleAutoMerge(pull);
  }

  /** Which merge methods the repository allows (REST 405 in GitHub's words otherwise). */
  mergeMethodRefusal(repo: Repo, method: MergeChoice['method']): string | undefined {
    if (method === 'merge' && !repo.settings.allowMergeCommit)
      return 'Merge commits are not allowed on this repository.';
    if (method === 'squash' && !repo.settings.allowSquashMerge)
      return 'Squash merges are not allowed on this repository.';
    if (method === 'rebase' && !repo.settings.allowRebaseMerge)
      return 'Rebase merges are not allowed on this repository.';
    return undefined;
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
    // A merge computes mergeability on the spot when it is not known yet.
    const mergeable =
      this.knownMergeable(pull) ??
      (pull.mergeableOf === null && pull.mergeable === false ? false : this.computeMergeable(pull));
    if (mergeable === false) return { status: 405, message: 'Pull Request has merge conflicts' };
    // Reviews hold back a merge only into a protected branch (world/access.ts `isProtected`).
    if (!isProtected(pull.issue.repo, pull.base)) return undefined;
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

  closePullRequest(pull: PullRequest, by: User = this.defaultUser): PullRequest {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    this.closePull(pull, undefined, by, this.time.now());
    return pull;
  }

  /** Closes a pull request, merged (`merge`: the base's new tip and the merge's commit) or not. */
  private closePull(pull: PullRequest, merge: MadeMerge | undefined, by: User, at: number): void {
    const issue = pull.issue;
    const repo = issue.repo;
    issue.state = 'closed';
    issue.stateReason = merge ? 'completed' : null;
    issue.closedAt = at;
    delete pull.autoMerge;
    if (merge) {
      pull.merged = true;
      pull.mergedAt = at;
      pull.mergedBy = by;
      pull.mergeCommitSha = merge.commit;
      repo.branches.set(pull.base, merge.tip);
      this.noteAuthor(repo, repo.contributors, issue.user);
      this.events.add(issue, 'merged', by, at, { commitId: merge.commit });
      if (pull.linkedIssue !== null) {
        const linked = repo.issues.get(pull.linkedIssue);
        if (linked && linked.state === 'open') this.closeIssue(linked, at, by, merge.commit);
      }
    }
    this.events.add(issue, 'closed', by, at);
    this.touchIssue(issue, at);
    if (merge) this.refs.pushed(repo, at);
    if (merge) this.scheduleAutoMergesInto(repo, pull.base);
  }

  /** A pull request's body changed: it closes the issue its closing keywords name now, if any. */
  private relink(pull: PullRequest, by: User, at: number): void {
    const repo = pull.issue.repo;
    const linked = pull.base === repo.defaultBranch ? closingIssue(repo, pull.issue.body) : undefined;
    const before = pull.linkedIssue;
    pull.linkedIssue = linked?.number ?? null;
    if (linked !== undefined && linked.number !== before) {
      this.events.add(linked, 'cross-referenced', by, at, { source: pull.issue });
      this.touchIssue(linked, at);
    }
  }

  /** Closes an issue (completed unless said otherwise); `commit` when a merged pull request closed it. */
  closeIssue(
    issue: Issue,
    at = this.time.now(),
    by: User = this.defaultUser,
    commit: string | null = null,
    reason: 'completed' | 'not_planned' = 'completed',
  ): Issue {
    issue.state = 'closed';
    issue.stateReason = reason;
    issue.closedAt = at;
    this.events.add(issue, 'closed', by, at, { commitId: commit, stateReason: reason });
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
    by: User = this.defaultUser,
  ): Issue {
    const pull = issue.pull;
    const at = this.time.now();
    if (input.title !== undefined) {
      checkTitle(input.title);
      if (input.title !== issue.title)
        this.events.add(issue, 'renamed', by, at, { rename: { from: issue.title, to: input.title } });
      issue.title = input.title;
    }
    if (input.body !== undefined) {
      if (input.body !== issue.body)
        this.notify({
          kind: 'issue',
          action: 'edited',
          issue,
          sender: by,
          changes: { body: { from: issue.body } },
        });
      issue.body = input.body;
      if (pull && !pull.merged) this.relink(pull, by, at);
    }
    if (input.base !== undefined && pull) {
      if (!issue.repo.branches.has(input.base))
        throw new GitHubStateError(422, `no branch ${input.base} in ${issue.repo.fullName}`);
      pull.base = input.base;
    }
    if (input.state === 'closed' && issue.state === 'open') {
      if (pull) this.closePull(pull, undefined, by, at);
      else this.closeIssue(issue, at, by, null, input.stateReason ?? 'completed');
      return issue;
    }
    if (input.state === 'open' && issue.state === 'closed') {
      if (pull?.merged)
        throw new GitHubStateError(422, `pull request #${issue.number} is merged and cannot be reopened`);
      issue.state = 'open';
      issue.stateReason = 'reopened';
      issue.closedAt = null;
      this.events.add(issue, 'reopened', by, at);
    }
    this.touchIssue(issue, at);
    return issue;
  }

  /** Replaces the assignees of an issue or pull request. */
  setAssignees(issue: Issue, logins: readonly string[], by: User = this.defaultUser): Issue {
    const before = issue.assignees;
    issue.assignees = this.assigneesOf(logins);
    const at = this.time.now();
    for (const user of before)
      if (!issue.assignees.includes(user)) this.events.add(issue, 'unassigned', by, at, { assignee: user });
    for (const user of issue.assignees)
      if (!before.includes(user)) this.events.add(issue, 'assigned', by, at, { assignee: user });
    this.touchIssue(issue, at);
    return issue;
  }

  /** The repository's labels (declared, created, or first named on an issue) by lower-cased name. */
  repoLabels(repo: Repo): ReadonlyMap<string, Label> {
    return repo.labels;
  }

  /** Adds labels (the repository's of that name in any case, else new ones) to an issue or PR. */
  addLabels(issue: Issue, names: readonly string[], by: User = this.defaultUser): Issue {
    const has = new Set(issue.labels.map((l) => l.name.toLowerCase()));
    const fresh = [...new Map(names.map((n) => [n.toLowerCase(), n])).values()].filter(
      (n) => !has.has(n.toLowerCase()),
    );
    checkLabels(fresh, issue.labels.length);
    if (fresh.length === 0) return issue;
    const at = this.time.now();
    for (const label of this.labelTable.ensure(issue.repo, fresh)) {
      issue.labels.push(label);
      this.events.add(issue, 'labeled', by, at, { label: { name: label.name, color: label.color } });
    }
    this.touchIssue(issue, at);
    return issue;
  }

  removeLabels(issue: Issue, names: readonly string[], by: User = this.defaultUser): Issue {
    const at = this.time.now();
    const named = new Set(names.map((n) => n.toLowerCase()));
    const removed = issue.labels.filter((l) => named.has(l.name.toLowerCase()));
    if (removed.length === 0) return issue;
    issue.labels = issue.labels.filter((l) => !removed.includes(l));
    for (const label of removed)
      this.events.add(issue, 'unlabeled', by, at, { label: { name: label.name, color: label.color } });
    this.touchIssue(issue, at);
    return issue;
  }

  /** Replaces the labels of an issue or pull request (REST `PUT …/labels`, `PATCH` with `labels`). */
  setLabels(issue: Issue, names: readonly string[], by: User = this.defaultUser): Issue {
    const wanted = new Map(names.map((n) => [n.toLowerCase(), n]));
    checkLabels(wanted.values(), 0);
    this.removeLabels(
      issue,
      issue.labels.map((l) => l.name).filter((n) => !wanted.has(n.toLowerCase())),
      by,
    );
    return this.addLabels(issue, [...wanted.values()], by);
  }

  /** A label made in the repository's table (REST `POST …/labels`). */
  createLabel(repo: Repo, input: LabelInput): Label {
    return this.labelTable.create(repo, input);
  }

  /** A label renamed or recoloured: every issue carrying it shows the change (new version, same `updated_at`). */
  updateLabel(repo: Repo, label: Label, input: Partial<LabelInput>): Label {
    for (const issue of this.labelTable.update(repo, label, input)) this.restamp(issue);
    return label;
  }

  /** A label deleted from the repository, and so from every issue carrying it. */
  deleteLabel(repo: Repo, label: Label): void {
    for (const issue of this.labelTable.delete(repo, label)) this.restamp(issue);
  }

  /**
   * An issue's (and its PR's) representation changed though the issue did not (a label renamed,
   * its author's association moved): a new version for its ETags and caches, `updated_at` kept.
   */
  restamp(issue: Issue): number {
    const v = this.time.bump();
    issue.version = v;
    issue.repo.issuesVersion = v;
    // Its milestone's counts may have changed: every issue embedding it, and its list, too.
    if (issue.milestone != null) issue.milestone.version = issue.repo.milestonesVersion = v;
    if (issue.pull) {
      issue.pull.version = v;
      issue.repo.pullsVersion = v;
    }
    return v;
  }

  /**
   * `user`'s `content` reaction on an issue (or pull request), or on one of its comments: the one
   * already there when they gave it before. What shows it (the issue's rollup, its comments) is
   * rendered again; nothing's `updated_at` moves, as on GitHub.
   */
  react(
    on: { issue: Issue; comment?: IssueComment },
    user: User,
    content: ReactionContent,
  ): { reaction: Reaction; created: boolean } {
    const made = this.reactions.add(on.comment ?? on.issue, user, content);
    if (made.created) on.issue.commentsVersion = this.restamp(on.issue);
    return made;
  }

  /** Deletes `user`'s `content` reaction (GraphQL `removeReaction`); the one deleted, if any. */
  unreactAs(
    on: { issue: Issue; comment?: IssueComment },
    user: User,
    content: ReactionContent,
  ): Reaction | undefined {
    const gone = this.reactions.remove(on.comment ?? on.issue, user, content);
    if (gone !== undefined) on.issue.commentsVersion = this.restamp(on.issue);
    return gone;
  }

  /** Deletes the reaction `id` from an issue or comment (404 when it has none of that id). */
  unreact(on: { issue: Issue; comment?: IssueComment }, id: number): void {
    this.reactions.delete(on.comment ?? on.issue, id);
    on.issue.commentsVersion = this.restamp(on.issue);
  }

  /** An issue comment by its node id (`IC_…`, as `nodeId` makes them), with its issue. */
  findIssueCommentByNodeId(id: string): { issue: Issue; comment: IssueComment } | undefined {
    if (!id.startsWith('IC_') || id.length > 64) return undefined;
    const decoded = /^0:(\d{1,15})$/.exec(Buffer.from(id.slice(3), 'base64url').toString('latin1'));
    if (decoded === null) return undefined;
    const found = this.issueCommentsById.get(Number(decoded[1]));
    return found?.comment.nodeId === id ? found : undefined;
  }

  /** A repository's issue comment by id, with its issue (the index: O(1) however many there are). */
  findIssueComment(repo: Repo, id: number): { issue: Issue; comment: IssueComment } | undefined {
    const found = this.issueCommentsById.get(id);
    return found?.issue.repo === repo ? found : undefined;
  }

  /** A draft pull request becomes ready for review. */
  /** An open pull request made a draft again (GraphQL `convertPullRequestToDraft`, `gh pr ready --undo`). */
  convertToDraft(pull: PullRequest, by: User = this.defaultUser): PullRequest {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    if (!pull.draft) {
      pull.draft = true;
      const at = this.time.now();
      this.events.add(pull.issue, 'convert_to_draft', by, at);
      this.touchIssue(pull.issue, at);
    }
    return pull;
  }

  markReadyForReview(pull: PullRequest, by: User = this.defaultUser): PullRequest {
    if (pull.issue.state !== 'open')
      throw new GitHubStateError(422, `pull request #${pull.issue.number} is closed`);
    if (pull.draft) {
      pull.draft = false;
      const at = this.time.now();
      this.events.add(pull.issue, 'ready_for_review', by, at);
      this.touchIssue(pull.issue, at);
      this.scheduleAutoMerge(pull);
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
    if (input.user === pull.issue.user.login) refuseOwnVerdict(input.state);
    const at = this.time.now();
    const review = this.putReview(pull, input.user, input.state, input.body ?? '', at);
    for (const c of input.comments ?? [])
      this.putReviewComment(pull, review, input.user, c.body, c.path, c.line, at);
    return review;
  }

  /** The admin API's: mergeability as given (null: still computing, until the next job). */
  setMergeable(pull: PullRequest, mergeable: boolean | null): PullRequest {
    this.fixMergeable(pull, mergeable);
    this.touchIssue(pull.issue);
    return pull;
  }

  private fixMergeable(pull: PullRequest, mergeable: boolean | null): void {
    pull.mergeable = mergeable;
    pull.mergeableOf = mergeable === null ? null : this.mergeKey(pull);
    pull.mergeableJob = null;
  }

  /** The tips mergeability is computed for: the head's and the base's. */
  private mergeKey(pull: PullRequest): string {
    return `${pull.headSha}:${pull.issue.repo.branches.get(pull.base) ?? ''}`;
  }

  /** Whether the pull request merges cleanly now: git's merge of the two tips has no conflict. */
  computeMergeable(pull: PullRequest): boolean {
    const baseTip = pull.issue.repo.branches.get(pull.base);
    if (baseTip === undefined) return false;
    return this.refs.mergeTrees(pull.issue.repo, baseTip, pull.headSha) !== undefined;
  }

  /** Mergeability as known now, without starting anything: null while unknown or closed. */
  knownMergeable(pull: PullRequest): boolean | null {
    if (pull.issue.state !== 'open') return null;
    return pull.mergeableOf === this.mergeKey(pull) ? pull.mergeable : null;
  }

  /**
   * Mergeability as a reader sees it (REST `mergeable`, GraphQL `mergeable`), as GitHub computes
   * it: "If the value is null, then GitHub has started a background job to compute the
   * mergeability. After giving the job time to complete, resubmit the request." A new pull
   * request, or one whose head or base moved, is null; the first read starts the job, which ends
   * MERGEABILITY_JOB_MS of run time later (in a served repository, not before git's part of it,
   * run meanwhile off the event loop, is done); a read after that gets the value (the pull request's
   * version moves then, so its ETag does). Deterministic on the run's clock.
   */
  mergeability(pull: PullRequest): boolean | null {
    if (pull.issue.state !== 'open') return null;
    const key = this.mergeKey(pull);
    if (pull.mergeableOf === key) return pull.mergeable;
    const now = this.time.now();
    const baseTip = pull.issue.repo.branches.get(pull.base);
    if (pull.mergeableJob === null || pull.mergeableJob.of !== key) {
      pull.mergeableJob = { of: key, endsAt: now + MERGEABILITY_JOB_MS };
      // In a served repository the job's merge runs meanwhile, off the event loop (refs.ts
      // `prepareMerge`, docs/limits.md "Servers"): trees read from git, git's own merge.
      if (baseTip !== undefined) void this.refs.prepareMerge(pull.issue.repo, baseTip, pull.headSha);
      return null;
    }
    if (now < pull.mergeableJob.endsAt) return null;
    // The job lasts until that merge is done, as GitHub's does while it computes.
    if (baseTip !== undefined && this.refs.mergeRunning(pull.issue.repo, baseTip, pull.headSha)) return null;
    this.fixMergeable(pull, this.computeMergeable(pull));
    pull.version = this.time.bump();
    pull.issue.repo.pullsVersion = pull.version;
    return pull.mergeable;
  }

  // ----- derived values (REST and GraphQL read the same ones) -----

  /** APPROVED / CHANGES_REQUESTED / REVIEW_REQUIRED / null, from each reviewer's latest verdict. */
  reviewDecision(pull: PullRequest): 'APPROVED' | 'CHANGES_REQUESTED' | 'REVIEW_REQUIRED' | null {
    const latest = new Map<number, ReviewState>();
    for (const review of pull.reviews) {
      if (review.state === 'COMMENTED' || review.state === 'PENDING') continue;
      latest.set(review.user.id, review.state);
    }
    let approvals = 0;
    for (const state of latest.values()) {
      if (state === 'CHANGES_REQUESTED') return 'CHANGES_REQUESTED';
      if (state === 'APPROVED') approvals++;
    }
    // A branch no rule protects requires no review: a pull request into another branch (a
    // stacked one) is not REVIEW_REQUIRED.
    const required = isProtected(pull.issue.repo, pull.base) ? pull.issue.repo.requiredReviews : 0;
    if (required === 0) return approvals > 0 ? 'APPROVED' : null;
    return approvals >= required ? 'APPROVED' : 'REVIEW_REQUIRED';
  }

  /** REST mergeable_state: dirty, draft, blocked (review), unstable (checks), unknown, clean. */
  mergeableState(pull: PullRequest): string {
    if (pull.issue.state !== 'open') return 'unknown';
    const mergeable = this.knownMergeable(pull);
    if (mergeable === null) return 'unknown';
    if (!mergeable) return 'dirty';
    if (pull.draft) return 'draft';
    const decision = isProtected(pull.issue.repo, pull.base) ? this.reviewDecision(pull) : null;
    if (decision === 'CHANGES_REQUESTED' || decision === 'REVIEW_REQUIRED') return 'blocked';
    const commit = pull.issue.repo.commits.get(pull.headSha);
    const rollup = commit ? this.checks.rollupState(commit) : null;
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
