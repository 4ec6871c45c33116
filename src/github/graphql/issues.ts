/**
 * Issues, pull requests and the repository that lists them (one file: a repository resolves its
 * pull requests and a pull request its repository).
 */
import { ADDED_PER_COMMIT, changedFiles, REMOVED_PER_COMMIT } from '../changes.ts';
import {
  type GitHubState,
  type Issue,
  type PullRequest,
  type Repo,
  type Review,
  type ReviewComment,
  sortIssues,
} from '../state.ts';
import { CommitNode, RefNode } from './commits.ts';
import { type ConnArgs, connection, EMPTY_CONNECTION } from './connection.ts';
import { type GqlContext, notFound, upper } from './context.ts';
import { reactionGroups } from './reactions.ts';
import { ReleaseNode, releaseByTag, releasesConnection } from './releases.ts';
import { IssueCommentNode, ReviewNode, ReviewThreadNode } from './reviews.ts';
import { PullCommitNode, timelineItems } from './timeline.ts';
import { actor, association, LabelNode, UserNode } from './users.ts';

/** Fields Issue and PullRequest share. */
class IssueLikeNode {
  constructor(
    protected readonly s: GitHubState,
    protected readonly issue: Issue,
  ) {}
  get databaseId() {
    return this.issue.id;
  }
  get number() {
    return this.issue.number;
  }
  get title() {
    return this.issue.title;
  }
  get body() {
    return this.issue.body;
  }
  get bodyText() {
    return this.issue.body;
  }
  get closed() {
    return this.issue.state === 'closed';
  }
  get closedAt() {
    return this.issue.closedAt === null ? null : this.s.time.iso(this.issue.closedAt);
  }
  get createdAt() {
    return this.s.time.iso(this.issue.createdAt);
  }
  get updatedAt() {
    return this.s.time.iso(this.issue.updatedAt);
  }
  get author() {
    return actor(this.s, this.issue.user);
  }
  get authorAssociation() {
    return association(this.issue.user, this.issue.repo);
  }
  repository() {
    return new RepoNode(this.s, this.issue.repo);
  }
  labels(args: ConnArgs) {
    return connection(this.issue.labels, args, (l) => new LabelNode(this.s, this.issue.repo, l));
  }
  assignees(args: ConnArgs) {
    return connection(this.issue.assignees, args, (u) => new UserNode(this.s, u));
  }
  comments(args: ConnArgs) {
    return connection(this.issue.comments, args, (c) => new IssueCommentNode(this.s, this.issue, c));
  }
  timelineItems(args: Parameters<typeof timelineItems>[2], ctx: GqlContext) {
    return timelineItems(this.s, this.issue, args, ctx, (issue) => subjectNode(this.s, issue));
  }
  /** Its milestone (REST's, world/milestones.ts), or null. */
  milestone() {
    const m = this.issue.milestone;
    if (m == null) return null;
    return {
      __typename: 'Milestone',
      id: m.nodeId,
      number: m.number,
      title: m.title,
      description: m.description,
      dueOn: m.dueOn === null ? null : this.s.time.iso(m.dueOn),
    };
  }
  projectCards(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
  projectItems(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
  reactionGroups(_args: unknown, ctx: GqlContext) {
    return reactionGroups(this.s, this.issue, ctx.viewer);
  }
  readonly viewerCanUpdate = true;
}

export class IssueNode extends IssueLikeNode {
  readonly __typename = 'Issue';
  get id() {
    return this.issue.nodeId;
  }
  get state() {
    return upper(this.issue.state);
  }
  get stateReason() {
    return this.issue.stateReason ? upper(this.issue.stateReason) : null;
  }
  get url() {
    return `${this.s.webUrl}/${this.issue.repo.fullName}/issues/${this.issue.number}`;
  }
  readonly isPinned = false;
  /**
   * The pull requests that close this issue when merged (their closing keywords), oldest first;
   * open ones only unless `includeClosedPrs`; `orderByState` puts open ones first. Links made by
   * hand in the web UI are not modelled, so `userLinkedOnly` finds none.
   */
  closedByPullRequestsReferences(
    args: ConnArgs & {
      includeClosedPrs?: boolean | null;
      orderByState?: boolean | null;
      userLinkedOnly?: boolean | null;
    },
  ) {
    const pulls = args.userLinkedOnly
      ? []
      : [...this.issue.repo.pulls.values()].filter(
          (p) => p.linkedIssue === this.issue.number && (args.includeClosedPrs || p.issue.state === 'open'),
        );
    if (args.orderByState)
      pulls.sort((a, b) => Number(a.issue.state !== 'open') - Number(b.issue.state !== 'open'));
    return connection(pulls, args, (p) => new PullNode(this.s, p));
  }
}

const MERGE_STATE: Record<string, string> = {
  clean: 'CLEAN',
  dirty: 'DIRTY',
  draft: 'DRAFT',
  blocked: 'BLOCKED',
  unstable: 'UNSTABLE',
  unknown: 'UNKNOWN',
};

export class PullNode extends IssueLikeNode {
  readonly __typename = 'PullRequest';
  private readonly pull: PullRequest;
  constructor(s: GitHubState, pull: PullRequest) {
    super(s, pull.issue);
    this.pull = pull;
  }
  get id() {
    return this.pull.nodeId;
  }
  override get databaseId() {
    return this.pull.id;
  }
  get state() {
    return this.pull.merged ? 'MERGED' : upper(this.issue.state);
  }
  get url() {
    return `${this.s.webUrl}/${this.issue.repo.fullName}/pull/${this.issue.number}`;
  }
  get permalink() {
    return this.url;
  }
  get merged() {
    return this.pull.merged;
  }
  get isDraft() {
    return this.pull.draft;
  }
  readonly locked = false;
  get mergedAt() {
    return this.pull.mergedAt === null ? null : this.s.time.iso(this.pull.mergedAt);
  }
  get mergedBy() {
    return actor(this.s, this.pull.mergedBy);
  }
  /** UNKNOWN while GitHub computes it: the read starts the job, a later one gets the answer (state.ts). */
  get mergeable() {
    const mergeable = this.s.mergeability(this.pull);
    if (mergeable === null) return 'UNKNOWN';
    return mergeable ? 'MERGEABLE' : 'CONFLICTING';
  }
  get mergeStateStatus() {
    this.s.mergeability(this.pull);
    return MERGE_STATE[this.s.mergeableState(this.pull)] ?? 'UNKNOWN';
  }
  get reviewDecision() {
    return this.s.reviewDecision(this.pull);
  }
  readonly maintainerCanModify = false;
  get headRefName() {
    return this.pull.head;
  }
  get headRefOid() {
    return this.pull.headSha;
  }
  headRef() {
    return this.issue.repo.branches.has(this.pull.head)
      ? new RefNode(this.s, this.issue.repo, this.pull.head)
      : null;
  }
  get baseRefName() {
    return this.pull.base;
  }
  get baseRefOid() {
    return this.pull.baseSha;
  }
  baseRef() {
    return new RefNode(this.s, this.issue.repo, this.pull.base);
  }
  headRepository() {
    return new RepoNode(this.s, this.issue.repo);
  }
  headRepositoryOwner() {
    return new UserNode(this.s, this.issue.repo.owner);
  }
  readonly isCrossRepository = false;
  get additions() {
    return ADDED_PER_COMMIT * this.pull.commits.length;
  }
  get deletions() {
    return REMOVED_PER_COMMIT * this.pull.commits.length;
  }
  get changedFiles() {
    return this.pull.commits.length;
  }
  files(args: ConnArgs) {
    return connection(changedFiles(this.pull), args, (file) => ({
      path: file.path,
      additions: file.additions,
      deletions: file.deletions,
      changeType: 'MODIFIED',
      viewerViewedState: 'UNVIEWED',
    }));
  }
  get autoMergeRequest() {
    const auto = this.pull.autoMerge;
    if (auto === undefined) return null;
    return {
      enabledAt: this.s.time.iso(auto.enabledAt),
      enabledBy: actor(this.s, auto.enabledBy),
      authorEmail: null,
      commitHeadline: auto.title ?? null,
      commitBody: auto.message ?? null,
      mergeMethod: auto.method.toUpperCase(),
    };
  }
  readonly potentialMergeCommit = null;
  mergeCommit() {
    const commit = this.pull.mergeCommitSha
      ? this.issue.repo.commits.get(this.pull.mergeCommitSha)
      : undefined;
    return commit ? new CommitNode(this.s, this.issue.repo, commit) : null;
  }
  commits(args: ConnArgs) {
    return connection(this.pull.commits, args, (sha) => new PullCommitNode(this.s, this.pull, sha));
  }
  reviewThreads(args: ConnArgs) {
    const threads = new Map<number, ReviewComment[]>();
    for (const c of this.pull.reviewComments) {
      const list = threads.get(c.threadId);
      if (list) list.push(c);
      else threads.set(c.threadId, [c]);
    }
    return connection(
      [...threads.values()],
      args,
      (comments) => new ReviewThreadNode(this.s, this.pull, comments),
    );
  }
  reviews(args: ConnArgs & { states?: string[] | null; author?: string | null }, ctx: GqlContext) {
    // A pending review is its author's alone.
    let items = this.pull.reviews.filter((r) => r.state !== 'PENDING' || r.user === ctx?.viewer);
    if (args.states || args.author) {
      items = items.filter(
        (r) =>
          (!args.states || args.states.includes(r.state)) && (!args.author || r.user.login === args.author),
      );
    }
    return connection(items, args, (r) => new ReviewNode(this.s, this.pull, r));
  }
  private latest(opinionated: boolean): Review[] {
    const latest = new Map<number, Review>();
    for (const r of this.pull.reviews) {
      if (opinionated && r.state === 'COMMENTED') continue;
      latest.set(r.user.id, r);
    }
    return [...latest.values()];
  }
  latestReviews(args: ConnArgs) {
    return connection(this.latest(false), args, (r) => new ReviewNode(this.s, this.pull, r));
  }
  latestOpinionatedReviews(args: ConnArgs) {
    return connection(this.latest(true), args, (r) => new ReviewNode(this.s, this.pull, r));
  }
  reviewRequests(args: ConnArgs) {
    return connection(this.pull.requestedReviewers ?? [], args, (user) => ({
      __typename: 'ReviewRequest',
      id: Buffer.from(`rr:${this.pull.id}:${user.id}`).toString('base64'),
      requestedReviewer: new UserNode(this.s, user),
    }));
  }
  closingIssuesReferences(args: ConnArgs) {
    const linked =
      this.pull.linkedIssue === null ? undefined : this.issue.repo.issues.get(this.pull.linkedIssue);
    return connection(linked ? [linked] : [], args, (i) => new IssueNode(this.s, i));
  }
  statusCheckRollup() {
    const repo = this.issue.repo;
    const commit = repo.commits.get(this.pull.headSha);
    return commit ? new CommitNode(this.s, repo, commit).statusCheckRollup() : null;
  }
}

function orderItems<T extends Issue>(
  items: T[],
  orderBy: { field: string; direction: string } | null | undefined,
): T[] {
  if (!orderBy) return items;
  const field =
    orderBy.field === 'UPDATED_AT' ? 'updated' : orderBy.field === 'COMMENTS' ? 'comments' : 'created';
  return sortIssues(items, field, orderBy.direction === 'DESC');
}

export class RepoNode {
  readonly __typename = 'Repository';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
  ) {}
  get id() {
    return this.repo.nodeId;
  }
  get databaseId() {
    return this.repo.id;
  }
  get name() {
    return this.repo.name;
  }
  get nameWithOwner() {
    return this.repo.fullName;
  }
  owner() {
    return new UserNode(this.s, this.repo.owner);
  }
  get url() {
    return `${this.s.webUrl}/${this.repo.fullName}`;
  }
  get sshUrl() {
    return `git@${new URL(this.s.webUrl).host}:${this.repo.fullName}.git`;
  }
  get description() {
    return this.repo.description;
  }
  readonly homepageUrl = null;
  get isPrivate() {
    return this.repo.private;
  }
  readonly isFork = false;
  readonly isArchived = false;
  get isInOrganization() {
    return this.repo.owner.type === 'Organization';
  }
  readonly isEmpty = false;
  readonly isTemplate = false;
  readonly isMirror = false;
  readonly isSecurityPolicyEnabled = false;
  get visibility() {
    return this.repo.private ? 'PRIVATE' : 'PUBLIC';
  }
  readonly hasIssuesEnabled = true;
  readonly hasWikiEnabled = false;
  readonly hasProjectsEnabled = false;
  readonly hasDiscussionsEnabled = false;
  get mergeCommitAllowed() {
    return this.repo.settings.allowMergeCommit;
  }
  get squashMergeAllowed() {
    return this.repo.settings.allowSquashMerge;
  }
  get rebaseMergeAllowed() {
    return this.repo.settings.allowRebaseMerge;
  }
  get deleteBranchOnMerge() {
    return this.repo.settings.deleteBranchOnMerge;
  }
  get autoMergeAllowed() {
    return this.repo.settings.allowAutoMerge;
  }
  readonly viewerPermission = 'WRITE';
  readonly viewerCanAdminister = false;
  get createdAt() {
    return this.s.time.iso(this.repo.createdAt);
  }
  get updatedAt() {
    return this.s.time.iso(this.repo.updatedAt);
  }
  get pushedAt() {
    return this.s.time.iso(this.repo.pushedAt);
  }
  readonly stargazerCount = 0;
  readonly forkCount = 0;
  readonly parent = null;
  readonly licenseInfo = null;
  defaultBranchRef() {
    return new RefNode(this.s, this.repo, this.repo.defaultBranch);
  }
  ref(args: { qualifiedName: string }) {
    const name = args.qualifiedName.startsWith('refs/heads/')
      ? args.qualifiedName.slice(11)
      : args.qualifiedName;
    return this.repo.branches.has(name) ? new RefNode(this.s, this.repo, name) : null;
  }
  pullRequest(args: { number: number }) {
    this.s.touched?.pulls.push(args.number);
    const pull = this.repo.pulls.get(args.number);
    if (!pull) throw notFound(`Could not resolve to a PullRequest with the number of ${args.number}.`);
    return new PullNode(this.s, pull);
  }
  pullRequests(
    args: ConnArgs & {
      states?: string[] | null;
      labels?: string[] | null;
      headRefName?: string | null;
      baseRefName?: string | null;
      orderBy?: { field: string; direction: string } | null;
    },
  ) {
    if (args.headRefName) this.s.touched?.branches.push(args.headRefName);
    const items: PullRequest[] = [];
    for (const pull of this.repo.pulls.values()) {
      const state = pull.merged ? 'MERGED' : pull.issue.state === 'open' ? 'OPEN' : 'CLOSED';
      if (args.states && !args.states.includes(state)) continue;
      if (args.headRefName && pull.head !== args.headRefName) continue;
      if (args.baseRefName && pull.base !== args.baseRefName) continue;
      if (args.labels && !args.labels.every((l) => pull.issue.labels.some((x) => x.name === l))) continue;
      items.push(pull);
    }
    const issues = orderItems(
      items.map((p) => p.issue),
      args.orderBy,
    );
    return connection(issues, args, (issue) => new PullNode(this.s, issue.pull!));
  }
  issue(args: { number: number }) {
    this.s.touched?.issues.push(args.number);
    const issue = this.repo.issues.get(args.number);
    if (!issue || issue.pull)
      throw notFound(`Could not resolve to an Issue with the number of ${args.number}.`);
    return new IssueNode(this.s, issue);
  }
  issues(
    args: ConnArgs & {
      states?: string[] | null;
      labels?: string[] | null;
      filterBy?: { states?: string[]; labels?: string[]; assignee?: string; createdBy?: string } | null;
      orderBy?: { field: string; direction: string } | null;
    },
  ) {
    const states = args.states ?? args.filterBy?.states;
    const labels = args.labels ?? args.filterBy?.labels;
    const items: Issue[] = [];
    for (const issue of this.repo.issues.values()) {
      if (issue.pull) continue;
      if (states && !states.includes(upper(issue.state))) continue;
      if (labels && !labels.every((l) => issue.labels.some((x) => x.name === l))) continue;
      if (args.filterBy?.assignee && !issue.assignees.some((u) => u.login === args.filterBy!.assignee))
        continue;
      if (args.filterBy?.createdBy && issue.user.login !== args.filterBy.createdBy) continue;
      items.push(issue);
    }
    return connection(orderItems(items, args.orderBy), args, (i) => new IssueNode(this.s, i));
  }
  issueOrPullRequest(args: { number: number }) {
    this.s.touched?.issues.push(args.number);
    const issue = this.repo.issues.get(args.number);
    if (!issue)
      throw notFound(`Could not resolve to an issue or pull request with the number of ${args.number}.`);
    return subjectNode(this.s, issue);
  }
  labels(args: ConnArgs & { orderBy?: { field: string; direction: string } | null }) {
    const labels = [...this.s.repoLabels(this.repo).values()];
    if (args.orderBy) {
      const sign = args.orderBy.direction === 'DESC' ? -1 : 1;
      labels.sort((a, b) =>
        args.orderBy!.field === 'NAME'
          ? sign * (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1)
          : sign * (a.id - b.id),
      );
    }
    return connection(labels, args, (l) => new LabelNode(this.s, this.repo, l));
  }
  /** A label of the repository by name (case-insensitive, as on GitHub); null when there is none. */
  label(args: { name: string }) {
    const label = this.s.labelTable.find(this.repo, args.name);
    return label === undefined ? null : new LabelNode(this.s, this.repo, label);
  }
  assignableUsers(args: ConnArgs) {
    return connection(
      [...this.s.users.values()].filter((u) => u.type === 'User'),
      args,
      (u) => new UserNode(this.s, u),
    );
  }
  mentionableUsers(args: ConnArgs) {
    return this.assignableUsers(args);
  }
  milestones(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
  releases(args: ConnArgs & { orderBy?: { field: string; direction: string } | null }, ctx: GqlContext) {
    return releasesConnection(this.s, this.repo, args, ctx);
  }
  release(args: { tagName: string }, ctx: GqlContext) {
    return releaseByTag(this.s, this.repo, args.tagName, ctx);
  }
  latestRelease() {
    const latest = this.s.releases.latest(this.repo);
    return latest === undefined ? null : new ReleaseNode(this.s, this.repo, latest);
  }
  projects(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
}

/** An issue or pull request as its node. */
function subjectNode(s: GitHubState, issue: Issue): IssueNode | PullNode {
  return issue.pull ? new PullNode(s, issue.pull) : new IssueNode(s, issue);
}
