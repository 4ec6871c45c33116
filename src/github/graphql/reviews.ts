/** Issue comments, pull request reviews, review comments and review threads. */
import type {
  GitHubState,
  Issue,
  IssueComment,
  PullRequest,
  Repo,
  Review,
  ReviewComment,
  User,
} from '../state.ts';
import { CommitNode } from './commits.ts';
import { type ConnArgs, connection } from './connection.ts';
import type { GqlContext } from './context.ts';
import { reactionGroups } from './reactions.ts';
import { actor, association } from './users.ts';

type AuthoredItem = { nodeId: string; id: number; user: User; body: string };

/** What comments and reviews share: node and database ids, the author and their association, the body. */
abstract class AuthoredNode<T extends AuthoredItem = AuthoredItem> {
  constructor(
    protected readonly s: GitHubState,
    private readonly repo: Repo,
    protected readonly item: T,
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
    return this.s.time.iso(this.comment.createdAt);
  }
  get updatedAt() {
    return this.s.time.iso(this.comment.updatedAt);
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
  reactionGroups(_args: unknown, ctx: GqlContext) {
    return reactionGroups(this.s, this.comment, ctx.viewer);
  }
}

/** What a review and a review comment share: their pull request, a URL into it, the commit they are on. */
abstract class PullItemNode<T extends AuthoredItem & { commitId: string }> extends AuthoredNode<T> {
  constructor(
    s: GitHubState,
    protected readonly pull: PullRequest,
    item: T,
  ) {
    super(s, pull.issue.repo, item);
  }
  protected pullUrl(anchor: string): string {
    return `${this.s.webUrl}/${this.pull.issue.repo.fullName}/pull/${this.pull.issue.number}#${anchor}`;
  }
  commit() {
    const repo = this.pull.issue.repo;
    const commit = repo.commits.get(this.item.commitId);
    return commit ? new CommitNode(this.s, repo, commit) : null;
  }
}

class ReviewCommentNode extends PullItemNode<ReviewComment> {
  readonly __typename = 'PullRequestReviewComment';
  get bodyText() {
    return this.item.body;
  }
  get createdAt() {
    return this.s.time.iso(this.item.createdAt);
  }
  get updatedAt() {
    return this.s.time.iso(this.item.updatedAt);
  }
  get url() {
    return this.pullUrl(`discussion_r${this.item.id}`);
  }
  get path() {
    return this.item.path;
  }
  get line() {
    return this.item.line;
  }
  get originalLine() {
    return this.item.line;
  }
  get diffHunk() {
    return `@@ -${this.item.line},3 +${this.item.line},4 @@`;
  }
  readonly outdated = false;
  readonly isMinimized = false;
  replyTo() {
    const parent = this.pull.reviewComments.find((c) => c.id === this.item.inReplyToId);
    return parent ? new ReviewCommentNode(this.s, this.pull, parent) : null;
  }
  pullRequestReview() {
    const review = this.pull.reviews.find((r) => r.id === this.item.reviewId);
    return review ? new ReviewNode(this.s, this.pull, review) : null;
  }
}

export class ReviewNode extends PullItemNode<Review> {
  readonly __typename = 'PullRequestReview';
  get state() {
    return this.item.state;
  }
  get submittedAt() {
    return this.item.submittedAt === null ? null : this.s.time.iso(this.item.submittedAt);
  }
  get createdAt() {
    return this.s.time.iso(this.item.createdAt);
  }
  get updatedAt() {
    return this.s.time.iso(this.item.submittedAt ?? this.item.createdAt);
  }
  get url() {
    return this.pullUrl(`pullrequestreview-${this.item.id}`);
  }
  readonly includesCreatedEdit = false;
  readonly reactionGroups = [];
  comments(args: ConnArgs) {
    const items = this.pull.reviewComments.filter((c) => c.reviewId === this.item.id);
    return connection(items, args, (c) => new ReviewCommentNode(this.s, this.pull, c));
  }
}

export class ReviewThreadNode {
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
