/**
 * GraphQL over the emulator state, with the real `graphql` package: parse and validate (cached
 * per query text), GitHub's cost rule computed on the AST before execution, then a synchronous
 * execution whose resolvers read the same state REST does.
 *
 * Cost (docs.github.com, "Rate limits and node limits for the GraphQL API"): add up the requests
 * needed to fill each connection, assuming each reaches its `first`/`last`, nested connections
 * multiplied by their parents' sizes; divide by 100, round, minimum 1 (a query that selects only
 * `rateLimit` costs 1 too: the field adds nothing, the call has its minimum). Every connection
 * needs `first` or `last` (at most 100), and a query may touch at most 500,000 nodes.
 */
import {
  buildSchema,
  type DocumentNode,
  executeSync,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLNamedType,
  type GraphQLSchema,
  getNamedType,
  isInterfaceType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  OverlappingFieldsCanBeMergedRule,
  type SelectionSetNode,
  specifiedRules,
  validate,
  valueFromASTUntyped,
} from 'graphql';
import { parseBounded } from './graphql-limits.ts';
import { CONTENT_CREATING_MUTATIONS, mutationRoot } from './graphql-mutations.ts';
import { SDL } from './graphql-schema.ts';
import type {
  CheckRun,
  Commit,
  CommitStatus,
  GitHubState,
  Issue,
  IssueComment,
  Label,
  PullRequest,
  Repo,
  Review,
  ReviewComment,
  User,
} from './state.ts';

export const GRAPHQL_DOCS = 'https://docs.github.com/graphql';
const MAX_NODES = 500_000;

/**
 * graphql-js's rules minus OverlappingFieldsCanBeMerged: GitHub's server accepts
 * `...on Issue{state} ...on PullRequest{state}` (two different enums under one name), and
 * `gh issue view` sends exactly that.
 */
const VALIDATION_RULES = specifiedRules.filter((rule) => rule !== OverlappingFieldsCanBeMergedRule);

export interface RateLimitInfo {
  limit: number;
  cost: number;
  remaining: number;
  used: number;
  resetAt: string;
  nodeCount: number;
}

export interface GqlContext {
  state: GitHubState;
  viewer: User;
  rate: RateLimitInfo;
  /** The repository a mutation changed (owner/name), for the trace's `repo`. */
  touched?: string;
}

interface ConnArgs {
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
}

export function cursor(index: number): string {
  return Buffer.from(`cursor:${index + 1}`).toString('base64');
}

function fromCursor(text: string | null | undefined): number | undefined {
  if (!text) return undefined;
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  if (!decoded.startsWith('cursor:')) return undefined;
  const n = Number(decoded.slice(7));
  return Number.isInteger(n) ? n - 1 : undefined;
}

function connection<T>(
  items: readonly T[],
  args: ConnArgs,
  wrap: (item: T) => unknown,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  let start = 0;
  let end = items.length;
  const after = fromCursor(args.after);
  const before = fromCursor(args.before);
  if (after !== undefined) start = Math.max(start, after + 1);
  if (before !== undefined) end = Math.min(end, before);
  if (args.first != null) end = Math.min(end, start + args.first);
  if (args.last != null) start = Math.max(start, end - args.last);
  if (end < start) end = start;
  const slice = items.slice(start, end);
  return {
    totalCount: items.length,
    nodes: () => slice.map(wrap),
    edges: () => slice.map((item, i) => ({ cursor: cursor(start + i), node: wrap(item) })),
    pageInfo: {
      hasNextPage: end < items.length,
      hasPreviousPage: start > 0,
      startCursor: slice.length > 0 ? cursor(start) : null,
      endCursor: slice.length > 0 ? cursor(end - 1) : null,
    },
    ...extra,
  };
}

const EMPTY_CONNECTION = (args: ConnArgs) => connection([], args, (x) => x);

export function notFound(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { type: 'NOT_FOUND' } });
}

const upper = (s: string) => s.toUpperCase();

export class UserNode {
  readonly __typename: string;
  readonly id: string;
  readonly databaseId: number;
  readonly login: string;
  readonly name: string | null;
  readonly email = '';
  readonly url: string;
  readonly resourcePath: string;
  constructor(state: GitHubState, user: User) {
    this.__typename = user.type;
    this.id = user.nodeId;
    this.databaseId = user.id;
    this.login = user.login;
    this.name = user.name;
    this.url = `${state.webUrl}/${user.login}`;
    this.resourcePath = `/${user.login}`;
  }
  avatarUrl(): string {
    return `https://avatars.githubusercontent.com/u/${this.databaseId}?v=4`;
  }
}

function actor(state: GitHubState, user: User | null | undefined): UserNode | null {
  return user ? new UserNode(state, user) : null;
}

function association(user: User, repo: Repo): string {
  return user === repo.owner ? 'OWNER' : 'CONTRIBUTOR';
}

export class LabelNode {
  readonly __typename = 'Label';
  readonly id: string;
  readonly name: string;
  readonly color: string;
  readonly description = null;
  readonly url: string;
  constructor(state: GitHubState, repo: Repo, label: Label) {
    this.id = label.nodeId;
    this.name = label.name;
    this.color = label.color;
    this.url = `${state.webUrl}/${repo.fullName}/labels/${encodeURIComponent(label.name)}`;
  }
}

class RefNode {
  readonly __typename = 'Ref';
  readonly id: string;
  readonly prefix = 'refs/heads/';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    readonly name: string,
  ) {
    this.id = Buffer.from(`ref:${repo.id}:${name}`).toString('base64');
  }
  target(): CommitNode | null {
    const commit = this.s.commit(this.repo, this.name);
    return commit ? new CommitNode(this.s, this.repo, commit) : null;
  }
}

class CheckRunNode {
  readonly __typename = 'CheckRun';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly run: CheckRun,
  ) {}
  get id() {
    return this.run.nodeId;
  }
  get databaseId() {
    return this.run.id;
  }
  get name() {
    return this.run.name;
  }
  get status() {
    return upper(this.run.status);
  }
  get conclusion() {
    return this.run.conclusion ? upper(this.run.conclusion) : null;
  }
  get startedAt() {
    return this.s.iso(this.run.startedAt);
  }
  get completedAt() {
    return this.run.completedAt === null ? null : this.s.iso(this.run.completedAt);
  }
  get detailsUrl() {
    return `${this.s.webUrl}/${this.repo.fullName}/actions/runs/${this.run.id}`;
  }
  get url() {
    return `${this.s.webUrl}/${this.repo.fullName}/runs/${this.run.id}`;
  }
  get permalink() {
    return this.url;
  }
  readonly title = null;
  readonly summary = null;
  readonly text = null;
  isRequired(): boolean {
    return false;
  }
  checkSuite() {
    const run = this.run;
    return {
      id: Buffer.from(`suite:${run.id}`).toString('base64'),
      databaseId: run.id,
      status: upper(run.status),
      conclusion: run.conclusion ? upper(run.conclusion) : null,
      app: { id: 'A_github_actions', name: 'GitHub Actions', slug: 'github-actions', logoUrl: () => '' },
      workflowRun: {
        id: Buffer.from(`run:${run.id}`).toString('base64'),
        databaseId: run.id,
        runNumber: run.id,
        event: 'pull_request',
        url: this.detailsUrl,
        workflow: { id: 'W_ci', name: 'CI' },
      },
    };
  }
}

class StatusContextNode {
  readonly __typename = 'StatusContext';
  constructor(
    private readonly s: GitHubState,
    private readonly status: CommitStatus,
  ) {}
  get id() {
    return this.status.nodeId;
  }
  get context() {
    return this.status.context;
  }
  get state() {
    return upper(this.status.state);
  }
  get description() {
    return this.status.description;
  }
  get targetUrl() {
    return this.status.targetUrl;
  }
  avatarUrl(): string {
    return `https://avatars.githubusercontent.com/u/${this.status.creator.id}?v=4`;
  }
  get createdAt() {
    return this.s.iso(this.status.createdAt);
  }
  isRequired(): boolean {
    return false;
  }
  get creator() {
    return new UserNode(this.s, this.status.creator);
  }
}

const CHECK_RUN_STATES = (run: CheckRun) =>
  run.status === 'completed' ? upper(run.conclusion ?? 'neutral') : upper(run.status);

class RollupNode {
  readonly __typename = 'StatusCheckRollup';
  readonly id: string;
  readonly state: string;
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly commit: Commit,
    state: string,
  ) {
    this.id = Buffer.from(`rollup:${commit.sha}`).toString('base64');
    this.state = state;
  }
  contexts(args: ConnArgs) {
    const statuses = this.s.latestStatuses(this.commit);
    const items: (CheckRun | CommitStatus)[] = [...this.commit.checkRuns, ...statuses];
    const count = <T>(values: T[], key: (v: T) => string) => {
      const m = new Map<string, number>();
      for (const v of values) m.set(key(v), (m.get(key(v)) ?? 0) + 1);
      return [...m].map(([state, n]) => ({ state, count: n }));
    };
    return connection(
      items,
      args,
      (item) =>
        'context' in item
          ? new StatusContextNode(this.s, item)
          : new CheckRunNode(this.s, this.repo, item as CheckRun),
      {
        checkRunCount: this.commit.checkRuns.length,
        statusContextCount: statuses.length,
        checkRunCountsByState: count(this.commit.checkRuns, CHECK_RUN_STATES),
        statusContextCountsByState: count(statuses, (st) => upper(st.state)),
      },
    );
  }
}

class CommitNode {
  readonly __typename = 'Commit';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly commit: Commit,
  ) {}
  get id() {
    return this.commit.nodeId;
  }
  get oid() {
    return this.commit.sha;
  }
  get abbreviatedOid() {
    return this.commit.sha.slice(0, 7);
  }
  get message() {
    return this.commit.message;
  }
  get messageHeadline() {
    return this.commit.message.split('\n')[0];
  }
  readonly messageBody = '';
  get committedDate() {
    return this.s.iso(this.commit.createdAt);
  }
  get authoredDate() {
    return this.committedDate;
  }
  get url() {
    return `${this.s.webUrl}/${this.repo.fullName}/commit/${this.commit.sha}`;
  }
  author() {
    const user = this.s.defaultUser;
    return { name: user.login, email: '', date: this.committedDate, user: new UserNode(this.s, user) };
  }
  committer() {
    return this.author();
  }
  authors(args: ConnArgs) {
    return connection([this.author()], args, (a) => a);
  }
  statusCheckRollup(): RollupNode | null {
    const state = this.s.rollupState(this.commit);
    return state === null ? null : new RollupNode(this.s, this.repo, this.commit, state);
  }
  status() {
    const statuses = this.s.latestStatuses(this.commit);
    if (statuses.length === 0) return null;
    return {
      id: Buffer.from(`status:${this.commit.sha}`).toString('base64'),
      state: upper(this.s.combinedStatus(this.commit)),
      contexts: statuses.map((s) => new StatusContextNode(this.s, s)),
    };
  }
  checkSuites(args: ConnArgs) {
    return connection(this.commit.checkRuns, args, (run) =>
      new CheckRunNode(this.s, this.repo, run).checkSuite(),
    );
  }
}

/** What comments and reviews share: node and database ids, the author and their association, the body. */
abstract class AuthoredNode {
  constructor(
    protected readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly item: { nodeId: string; id: number; user: User; body: string },
  ) {}
  get id() {
    return this.item.nodeId;
  }
  get databaseId() {
    return this.item.id;
  }
  get author() {
    return actor(this.s, this.item.user);
  }
  get authorAssociation() {
    return association(this.item.user, this.repo);
  }
  get body() {
    return this.item.body;
  }
}

export class IssueCommentNode extends AuthoredNode {
  readonly __typename = 'IssueComment';
  constructor(
    s: GitHubState,
    private readonly issue: Issue,
    private readonly comment: IssueComment,
  ) {
    super(s, issue.repo, comment);
  }
  get bodyText() {
    return this.comment.body;
  }
  get createdAt() {
    return this.s.iso(this.comment.createdAt);
  }
  get updatedAt() {
    return this.s.iso(this.comment.updatedAt);
  }
  get url() {
    const kind = this.issue.pull ? 'pull' : 'issues';
    return `${this.s.webUrl}/${this.issue.repo.fullName}/${kind}/${this.issue.number}#issuecomment-${this.comment.id}`;
  }
  readonly isMinimized = false;
  readonly minimizedReason = null;
  readonly includesCreatedEdit = false;
  viewerDidAuthor(_args: unknown, ctx: GqlContext): boolean {
    return ctx.viewer === this.comment.user;
  }
  readonly reactionGroups = [];
}

class ReviewCommentNode extends AuthoredNode {
  readonly __typename = 'PullRequestReviewComment';
  constructor(
    s: GitHubState,
    private readonly pull: PullRequest,
    private readonly comment: ReviewComment,
  ) {
    super(s, pull.issue.repo, comment);
  }
  get bodyText() {
    return this.comment.body;
  }
  get createdAt() {
    return this.s.iso(this.comment.createdAt);
  }
  get updatedAt() {
    return this.s.iso(this.comment.updatedAt);
  }
  get url() {
    return `${this.s.webUrl}/${this.pull.issue.repo.fullName}/pull/${this.pull.issue.number}#discussion_r${this.comment.id}`;
  }
  get path() {
    return this.comment.path;
  }
  get line() {
    return this.comment.line;
  }
  get originalLine() {
    return this.comment.line;
  }
  get diffHunk() {
    return `@@ -${this.comment.line},3 +${this.comment.line},4 @@`;
  }
  readonly outdated = false;
  readonly isMinimized = false;
  replyTo() {
    const parent = this.pull.reviewComments.find((c) => c.id === this.comment.inReplyToId);
    return parent ? new ReviewCommentNode(this.s, this.pull, parent) : null;
  }
  pullRequestReview() {
    const review = this.pull.reviews.find((r) => r.id === this.comment.reviewId);
    return review ? new ReviewNode(this.s, this.pull, review) : null;
  }
  commit() {
    const repo = this.pull.issue.repo;
    const commit = repo.commits.get(this.comment.commitId);
    return commit ? new CommitNode(this.s, repo, commit) : null;
  }
}

export class ReviewNode extends AuthoredNode {
  readonly __typename = 'PullRequestReview';
  constructor(
    s: GitHubState,
    private readonly pull: PullRequest,
    private readonly review: Review,
  ) {
    super(s, pull.issue.repo, review);
  }
  get state() {
    return this.review.state;
  }
  get submittedAt() {
    return this.s.iso(this.review.submittedAt);
  }
  get createdAt() {
    return this.submittedAt;
  }
  get updatedAt() {
    return this.submittedAt;
  }
  get url() {
    return `${this.s.webUrl}/${this.pull.issue.repo.fullName}/pull/${this.pull.issue.number}#pullrequestreview-${this.review.id}`;
  }
  commit() {
    const repo = this.pull.issue.repo;
    const commit = repo.commits.get(this.review.commitId);
    return commit ? new CommitNode(this.s, repo, commit) : null;
  }
  readonly includesCreatedEdit = false;
  readonly reactionGroups = [];
  comments(args: ConnArgs) {
    const items = this.pull.reviewComments.filter((c) => c.reviewId === this.review.id);
    return connection(items, args, (c) => new ReviewCommentNode(this.s, this.pull, c));
  }
}

class ReviewThreadNode {
  readonly __typename = 'PullRequestReviewThread';
  constructor(
    private readonly s: GitHubState,
    private readonly pull: PullRequest,
    private readonly comments_: ReviewComment[],
  ) {}
  get id() {
    return this.comments_[0]!.threadNodeId;
  }
  readonly isResolved = false;
  readonly isOutdated = false;
  readonly isCollapsed = false;
  get path() {
    return this.comments_[0]!.path;
  }
  get line() {
    return this.comments_[0]!.line;
  }
  get originalLine() {
    return this.comments_[0]!.line;
  }
  readonly startLine = null;
  readonly diffSide = 'RIGHT';
  readonly subjectType = 'LINE';
  readonly resolvedBy = null;
  readonly viewerCanResolve = true;
  comments(args: ConnArgs) {
    return connection(this.comments_, args, (c) => new ReviewCommentNode(this.s, this.pull, c));
  }
}

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
    return this.issue.closedAt === null ? null : this.s.iso(this.issue.closedAt);
  }
  get createdAt() {
    return this.s.iso(this.issue.createdAt);
  }
  get updatedAt() {
    return this.s.iso(this.issue.updatedAt);
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
  readonly milestone = null;
  projectCards(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
  projectItems(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
  readonly reactionGroups = [];
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
    return this.pull.mergedAt === null ? null : this.s.iso(this.pull.mergedAt);
  }
  get mergedBy() {
    return actor(this.s, this.pull.mergedBy);
  }
  get mergeable() {
    if (this.issue.state !== 'open' || this.pull.mergeable === null) return 'UNKNOWN';
    return this.pull.mergeable ? 'MERGEABLE' : 'CONFLICTING';
  }
  get mergeStateStatus() {
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
    return 10 * this.pull.commits.length;
  }
  get deletions() {
    return 2 * this.pull.commits.length;
  }
  get changedFiles() {
    return this.pull.commits.length;
  }
  readonly autoMergeRequest = null;
  readonly potentialMergeCommit = null;
  mergeCommit() {
    const commit = this.pull.mergeCommitSha
      ? this.issue.repo.commits.get(this.pull.mergeCommitSha)
      : undefined;
    return commit ? new CommitNode(this.s, this.issue.repo, commit) : null;
  }
  commits(args: ConnArgs) {
    const repo = this.issue.repo;
    return connection(this.pull.commits, args, (sha) => {
      const commit = repo.commits.get(sha)!;
      return {
        id: Buffer.from(`prc:${this.pull.id}:${sha}`).toString('base64'),
        url: `${this.url}/commits/${sha}`,
        commit: new CommitNode(this.s, repo, commit),
      };
    });
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
  reviews(args: ConnArgs & { states?: string[] | null; author?: string | null }) {
    let items = this.pull.reviews;
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
    return EMPTY_CONNECTION(args);
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
  const key =
    orderBy.field === 'UPDATED_AT'
      ? (i: Issue) => i.updatedAt
      : orderBy.field === 'COMMENTS'
        ? (i: Issue) => i.comments.length
        : (i: Issue) => i.createdAt;
  const sign = orderBy.direction === 'DESC' ? -1 : 1;
  return items.sort((a, b) => sign * (key(a) - key(b) || a.version - b.version));
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
  readonly mergeCommitAllowed = true;
  readonly squashMergeAllowed = true;
  readonly rebaseMergeAllowed = true;
  readonly deleteBranchOnMerge = false;
  readonly viewerPermission = 'WRITE';
  readonly viewerCanAdminister = false;
  get createdAt() {
    return this.s.iso(this.repo.createdAt);
  }
  get updatedAt() {
    return this.s.iso(this.repo.updatedAt);
  }
  get pushedAt() {
    return this.s.iso(this.repo.pushedAt);
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
    return issue.pull ? new PullNode(this.s, issue.pull) : new IssueNode(this.s, issue);
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
  projects(args: ConnArgs) {
    return EMPTY_CONNECTION(args);
  }
}

function nodeById(state: GitHubState, id: string): unknown {
  const entity = state.nodes.get(id);
  if (entity === undefined) return null;
  if ('login' in entity) return new UserNode(state, entity);
  if ('fullName' in entity) return new RepoNode(state, entity);
  if ('issue' in entity) return new PullNode(state, entity);
  return new IssueNode(state, entity);
}

const root = {
  node(args: { id: string }, ctx: GqlContext) {
    const node = nodeById(ctx.state, args.id);
    if (node === null) throw notFound(`Could not resolve to a node with the global id of '${args.id}'`);
    return node;
  },
  nodes(args: { ids: string[] }, ctx: GqlContext) {
    return args.ids.map((id) => nodeById(ctx.state, id));
  },
  repository(args: { owner: string; name: string }, ctx: GqlContext) {
    const repo = ctx.state.findRepo(args.owner, args.name);
    if (!repo)
      throw notFound(`Could not resolve to a Repository with the name '${args.owner}/${args.name}'.`);
    return new RepoNode(ctx.state, repo);
  },
  rateLimit(_args: unknown, ctx: GqlContext) {
    return ctx.rate;
  },
  viewer(_args: unknown, ctx: GqlContext) {
    return new UserNode(ctx.state, ctx.viewer);
  },
  user(args: { login: string }, ctx: GqlContext) {
    const user = ctx.state.findUser(args.login);
    if (!user || user.type === 'Organization')
      throw notFound(`Could not resolve to a User with the login of '${args.login}'.`);
    return new UserNode(ctx.state, user);
  },
  repositoryOwner(args: { login: string }, ctx: GqlContext) {
    const user = ctx.state.findUser(args.login);
    return user && user.type !== 'Bot' ? new UserNode(ctx.state, user) : null;
  },
  ...mutationRoot,
};

/** A request that parsed, validated and was costed: ready to charge and execute. */
export interface PreparedQuery {
  ok: true;
  document: DocumentNode;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
  /** What the trace records as `op`: operationName, else the executed operation's own name. */
  opName: string | undefined;
  /** Primary-limit points: at least 1. */
  cost: number;
  nodeCount: number;
  mutation: boolean;
  /** A mutation that creates content (addComment, addPullRequestReview): content-creation limits apply. */
  contentCreating: boolean;
  /** owner/name when the query addresses exactly one repository. */
  repo?: string;
}

/** A request answered without execution: bad JSON (400) or a query GitHub would refuse (200). */
export interface RejectedQuery {
  ok: false;
  status: number;
  body: string;
  error: string;
  /** operationName, else the document's first named operation, when there is one to name. */
  opName?: string;
}

interface CachedDocument {
  document?: DocumentNode;
  errors?: readonly GraphQLError[];
  /** The first named operation, so even a query that failed validation can be grouped by name. */
  firstOperationName?: string;
}

function errorsBody(errors: readonly Record<string, unknown>[]): string {
  return JSON.stringify({ errors });
}

/** GitHub's error format: `type` beside the message, not inside extensions. */
function formatError(error: GraphQLError): Record<string, unknown> {
  const type = error.extensions?.type;
  return {
    ...(typeof type === 'string' ? { type } : {}),
    ...(error.path ? { path: error.path } : {}),
    ...(error.locations ? { locations: error.locations } : {}),
    message: error.message,
  };
}

export class GraphQLEngine {
  readonly schema: GraphQLSchema;
  private readonly documents = new Map<string, CachedDocument>();
  private readonly maxDocuments = 1_000;

  constructor() {
    this.schema = buildSchema(SDL);
  }

  /** Parses the JSON body and the query (both cached by text), validates and costs it. */
  prepare(bodyText: string | undefined): PreparedQuery | RejectedQuery {
    let body: unknown;
    try {
      body = JSON.parse(bodyText ?? '');
    } catch {
      return {
        ok: false,
        status: 400,
        body: JSON.stringify({ message: 'Problems parsing JSON', documentation_url: GRAPHQL_DOCS }),
        error: 'Problems parsing JSON',
      };
    }
    const b = body as { query?: unknown; variables?: unknown; operationName?: unknown } | null;
    if (!b || typeof b !== 'object' || typeof b.query !== 'string') {
      const message = 'A query attribute must be specified and must be a string.';
      return {
        ok: false,
        status: 400,
        body: JSON.stringify({ message, documentation_url: GRAPHQL_DOCS }),
        error: message,
      };
    }
    const variables =
      b.variables && typeof b.variables === 'object' && !Array.isArray(b.variables)
        ? (b.variables as Record<string, unknown>)
        : undefined;
    const operationName =
      typeof b.operationName === 'string' && b.operationName !== '' ? b.operationName : undefined;
    const parsed = this.document(b.query);
    const opName = operationName ?? parsed.firstOperationName;
    if (parsed.errors) {
      return {
        ok: false,
        status: 200,
        body: errorsBody(parsed.errors.map(formatError)),
        error: parsed.errors[0]!.message,
        opName,
      };
    }
    const document = parsed.document!;
    const operation = findOperation(document, operationName);
    if (!operation) {
      const message = operationName
        ? `Unknown operation named "${operationName}".`
        : 'Must provide operation name if query contains multiple operations.';
      return { ok: false, status: 200, body: errorsBody([{ message }]), error: message, opName };
    }
    const analysis = analyze(this.schema, document, operation, variables ?? {});
    if (analysis.error) {
      return {
        ok: false,
        status: 200,
        body: errorsBody([analysis.error]),
        error: analysis.error.message,
        opName,
      };
    }
    // "The minimum point value of a call to the GraphQL API is 1", a rateLimit-only call too.
    const cost = Math.max(1, Math.round(analysis.requests / 100));
    return {
      ok: true,
      document,
      variables,
      operationName,
      opName: operationName ?? operation.name?.value ?? anonymousOpName(operation),
      cost,
      nodeCount: analysis.nodes,
      mutation: operation.operation === 'mutation',
      contentCreating: analysis.contentCreating,
      repo: analysis.repo,
    };
  }

  private document(query: string): CachedDocument {
    const hit = this.documents.get(query);
    if (hit) return hit;
    let entry: CachedDocument;
    try {
      const document = parseBounded(query);
      const errors = validate(this.schema, document, VALIDATION_RULES);
      entry = errors.length > 0 ? { errors } : { document };
      for (const def of document.definitions) {
        if (def.kind === Kind.OPERATION_DEFINITION && def.name) {
          entry.firstOperationName = def.name.value;
          break;
        }
      }
    } catch (error) {
      entry = { errors: [error instanceof GraphQLError ? error : new GraphQLError(String(error))] };
    }
    if (this.documents.size >= this.maxDocuments) this.documents.delete(this.documents.keys().next().value!);
    this.documents.set(query, entry);
    return entry;
  }

  /**
   * Executes a prepared query; `rate` is what the rateLimit field reports (after the charge).
   * `touched` is the repository a mutation changed (owner/name), when there was one.
   */
  execute(
    prepared: PreparedQuery,
    state: GitHubState,
    viewer: User,
    rate: RateLimitInfo,
  ): { body: string; touched?: string } {
    const context: GqlContext = { state, viewer, rate };
    const result = executeSync({
      schema: this.schema,
      document: prepared.document,
      rootValue: root,
      contextValue: context,
      variableValues: prepared.variables,
      operationName: prepared.operationName,
    });
    const body =
      result.errors && result.errors.length > 0
        ? JSON.stringify({ data: result.data ?? null, errors: result.errors.map(formatError) })
        : JSON.stringify({ data: result.data });
    return context.touched === undefined ? { body } : { body, touched: context.touched };
  }
}

/**
 * A name for an anonymous operation (`gh api graphql` sends them): its operation type and the
 * path of single fields it descends, at most three deep (`query repository.pullRequest.reviewThreads`),
 * so `analyze` groups such calls by what they ask for instead of lumping them together.
 */
function anonymousOpName(operation: OperationDefinitionNode): string {
  const path: string[] = [];
  let selections = operation.selectionSet.selections;
  // A mutation is named by the mutation field itself (`mutation addComment`).
  const depth = operation.operation === 'mutation' ? 1 : 3;
  while (path.length < depth) {
    const fields = selections.filter(
      (sel): sel is FieldNode =>
        sel.kind === Kind.FIELD && sel.name.value !== '__typename' && sel.name.value !== 'rateLimit',
    );
    if (fields.length !== 1) break;
    const field = fields[0]!;
    path.push(field.name.value);
    if (!field.selectionSet) break;
    selections = field.selectionSet.selections;
  }
  return path.length > 0 ? `${operation.operation} ${path.join('.')}` : operation.operation;
}

function findOperation(
  document: DocumentNode,
  name: string | undefined,
): OperationDefinitionNode | undefined {
  let found: OperationDefinitionNode | undefined;
  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue;
    if (name === undefined) {
      if (found) return undefined;
      found = def;
    } else if (def.name?.value === name) return def;
  }
  return found;
}

interface Analysis {
  requests: number;
  nodes: number;
  contentCreating: boolean;
  repo?: string;
  error?: { type: string; message: string; path?: string[] };
}

function analyze(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): Analysis {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions)
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  // Defaults of declared variables apply when the request leaves them out.
  const vars: Record<string, unknown> = {};
  for (const def of operation.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    if (name in variables) vars[name] = variables[name];
    else if (def.defaultValue) vars[name] = valueFromASTUntyped(def.defaultValue, {});
  }
  const out: Analysis = { requests: 0, nodes: 0, contentCreating: false };
  let repos: Set<string> | undefined;
  const rootType = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
  if (!rootType) return out;

  if (operation.operation === 'mutation') {
    for (const sel of operation.selectionSet.selections)
      if (sel.kind === Kind.FIELD && CONTENT_CREATING_MUTATIONS.has(sel.name.value))
        out.contentCreating = true;
  }

  const walk = (
    set: SelectionSetNode,
    parent: GraphQLNamedType | undefined | null,
    mult: number,
    path: string[],
  ) => {
    for (const sel of set.selections) {
      if (out.error) return;
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        const type = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        walk(sel.selectionSet, type, mult, path);
        continue;
      }
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        const frag = fragments.get(sel.name.value);
        if (frag) walk(frag.selectionSet, schema.getType(frag.typeCondition.name.value), mult, path);
        continue;
      }
      const name = sel.name.value;
      if (name.startsWith('__') || !parent || !(isObjectType(parent) || isInterfaceType(parent))) continue;
      const field = parent.getFields()[name];
      if (!field) continue;
      const type = getNamedType(field.type);
      const here = [...path, sel.alias?.value ?? name];
      let childMult = mult;
      let first: unknown;
      let last: unknown;
      let owner: unknown;
      let repoName: unknown;
      for (const arg of sel.arguments ?? []) {
        const value = valueFromASTUntyped(arg.value, vars);
        if (arg.name.value === 'first') first = value;
        else if (arg.name.value === 'last') last = value;
        else if (arg.name.value === 'owner') owner = value;
        else if (arg.name.value === 'name') repoName = value;
      }
      if (name === 'repository' && typeof owner === 'string' && typeof repoName === 'string') {
        repos ??= new Set();
        repos.add(`${owner}/${repoName}`);
      }
      if (type.name.endsWith('Connection')) {
        let size = typeof first === 'number' ? first : typeof last === 'number' ? last : undefined;
        // Asking only for totalCount/pageInfo needs no bounds (gh does this); it fetches no nodes.
        if (size === undefined && sel.selectionSet && !selectsItems(sel.selectionSet)) size = 0;
        if (size === undefined) {
          out.error = {
            type: 'MISSING_PAGINATION_BOUNDARIES',
            path: here,
            message: `You must provide a \`first\` or \`last\` value to properly paginate the \`${name}\` connection.`,
          };
          return;
        }
        if (size > 100 || size < 0) {
          out.error = {
            type: 'EXCESSIVE_PAGINATION',
            path: here,
            message: `Requesting ${size} records on the \`${name}\` connection exceeds the \`${typeof first === 'number' ? 'first' : 'last'}\` limit of 100 records.`,
          };
          return;
        }
        out.requests += mult;
        childMult = mult * size;
        out.nodes += childMult;
        if (out.nodes > MAX_NODES) {
          out.error = {
            type: 'MAX_NODE_LIMIT_EXCEEDED',
            message: `This query requests up to ${out.nodes} possible nodes which exceeds the maximum limit of ${MAX_NODES}.`,
          };
          return;
        }
      }
      if (sel.selectionSet) walk(sel.selectionSet, type, childMult, here);
    }
  };
  const selectsItems = (set: SelectionSetNode): boolean =>
    set.selections.some((sel) => {
      if (sel.kind === Kind.FIELD) return sel.name.value === 'nodes' || sel.name.value === 'edges';
      if (sel.kind === Kind.INLINE_FRAGMENT) return selectsItems(sel.selectionSet);
      const frag = fragments.get(sel.name.value);
      return frag !== undefined && selectsItems(frag.selectionSet);
    });
  walk(operation.selectionSet, rootType, 1, []);
  if (repos && repos.size === 1) out.repo = [...repos][0];
  return out;
}
