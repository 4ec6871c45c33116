/**
 * `timelineItems` of an issue or a pull request: the issue events the world records
 * (world/events.ts) as GitHub's event types (ClosedEvent, LabeledEvent, CrossReferencedEvent, …),
 * with the comments, and for a pull request its commits (PullRequestCommit) and submitted reviews,
 * oldest first, filtered by `itemTypes` and `since` as GitHub filters them.
 */
import type { GitHubState, Issue, IssueEvent, PullRequest } from '../state.ts';
import { CommitNode, RefNode } from './commits.ts';
import { type ConnArgs, connection } from './connection.ts';
import type { GqlContext } from './context.ts';
import { IssueCommentNode, ReviewNode } from './reviews.ts';
import { actor, LabelNode, UserNode } from './users.ts';

/** A pull request's commit in its commits and its timeline. */
export class PullCommitNode {
  readonly __typename = 'PullRequestCommit';
  constructor(
    private readonly s: GitHubState,
    private readonly pull: PullRequest,
    private readonly sha: string,
  ) {}
  get id() {
    return Buffer.from(`prc:${this.pull.id}:${this.sha}`).toString('base64');
  }
  get url() {
    return `${this.s.webUrl}/${this.pull.issue.repo.fullName}/pull/${this.pull.issue.number}/commits/${this.sha}`;
  }
  commit() {
    const repo = this.pull.issue.repo;
    return new CommitNode(this.s, repo, repo.commits.get(this.sha)!);
  }
}

/** GitHub's type of each event the world records. */
const EVENT_TYPES: Record<IssueEvent['event'], string> = {
  closed: 'ClosedEvent',
  reopened: 'ReopenedEvent',
  labeled: 'LabeledEvent',
  unlabeled: 'UnlabeledEvent',
  assigned: 'AssignedEvent',
  unassigned: 'UnassignedEvent',
  renamed: 'RenamedTitleEvent',
  merged: 'MergedEvent',
  head_ref_deleted: 'HeadRefDeletedEvent',
  head_ref_force_pushed: 'HeadRefForcePushedEvent',
  ready_for_review: 'ReadyForReviewEvent',
  review_requested: 'ReviewRequestedEvent',
  review_request_removed: 'ReviewRequestRemovedEvent',
  convert_to_draft: 'ConvertToDraftEvent',
  auto_merge_enabled: 'AutoMergeEnabledEvent',
  auto_merge_disabled: 'AutoMergeDisabledEvent',
  'cross-referenced': 'CrossReferencedEvent',
};

/** One issue event as its GraphQL type; fields a type lacks are never selected (the schema says). */
class EventNode {
  readonly __typename: string;
  constructor(
    private readonly s: GitHubState,
    private readonly issue: Issue,
    private readonly e: IssueEvent,
    private readonly subject: SubjectOf,
  ) {
    this.__typename = EVENT_TYPES[e.event];
  }
  get id() {
    return this.e.nodeId;
  }
  get actor() {
    return actor(this.s, this.e.actor);
  }
  /** Who enabled or disabled auto-merge: the event's actor. */
  get enabler() {
    return new UserNode(this.s, this.e.actor);
  }
  get disabler() {
    return this.enabler;
  }
  get createdAt() {
    return this.s.time.iso(this.e.createdAt);
  }
  get referencedAt() {
    return this.createdAt;
  }
  get url() {
    const kind = this.issue.pull ? 'pull' : 'issues';
    return `${this.s.webUrl}/${this.issue.repo.fullName}/${kind}/${this.issue.number}#event-${this.e.id}`;
  }
  get resourcePath() {
    return new URL(this.url).pathname;
  }
  closable() {
    return this.subject(this.issue);
  }
  labelable() {
    return this.subject(this.issue);
  }
  pullRequest() {
    return this.subject(this.issue);
  }
  target() {
    return this.subject(this.issue);
  }
  source() {
    return this.e.source === undefined ? null : this.subject(this.e.source);
  }
  get stateReason() {
    return this.e.stateReason ? this.e.stateReason.toUpperCase() : null;
  }
  closer() {
    const sha = this.e.commitId;
    const commit = sha === null ? undefined : this.issue.repo.commits.get(sha);
    return commit === undefined ? null : new CommitNode(this.s, this.issue.repo, commit);
  }
  commit() {
    return this.closer();
  }
  label() {
    const label = this.e.label;
    if (label === undefined) return null;
    // The repository's label of that name; a deleted one keeps the name and colour the event saw.
    const known = this.s.labelTable.find(this.issue.repo, label.name);
    return new LabelNode(
      this.s,
      this.issue.repo,
      known ?? { id: 0, nodeId: `LA_${label.name}`, description: null, ...label },
    );
  }
  assignee() {
    return this.e.assignee === undefined ? null : new UserNode(this.s, this.e.assignee);
  }
  requestedReviewer() {
    return this.e.requestedReviewer === undefined ? null : new UserNode(this.s, this.e.requestedReviewer);
  }
  get previousTitle() {
    return this.e.rename?.from ?? '';
  }
  get currentTitle() {
    return this.e.rename?.to ?? '';
  }
  get headRefName() {
    return this.issue.pull?.head ?? '';
  }
  get mergeRefName() {
    return this.issue.pull?.base ?? '';
  }
  mergeRef() {
    const pull = this.issue.pull;
    return pull === undefined ? null : new RefNode(this.s, this.issue.repo, pull.base);
  }
  readonly isCrossRepository = false;
  get willCloseTarget() {
    return this.e.source?.pull?.linkedIssue === this.issue.number;
  }
}

/**
 * An issue or pull request as its node (IssueNode or PullNode), given by issues.ts, which holds
 * those nodes and imports this file.
 */
export type SubjectOf = (issue: Issue) => object;

/** GitHub's item type names (`LABELED_EVENT`) of each GraphQL type. */
function itemType(typename: string): string {
  return typename.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

interface TimelineArgs extends ConnArgs {
  since?: string | null;
  skip?: number | null;
  itemTypes?: string[] | null;
}

/** The `timelineItems` connection of an issue or pull request. */
export function timelineItems(
  s: GitHubState,
  issue: Issue,
  args: TimelineArgs,
  ctx: GqlContext | undefined,
  subject: SubjectOf,
) {
  type Item = { at: number; id: number; node: () => { __typename: string } };
  const items: Item[] = [];
  for (const e of issue.events)
    items.push({ at: e.createdAt, id: e.id, node: () => new EventNode(s, issue, e, subject) });
  for (const c of issue.comments)
    items.push({ at: c.createdAt, id: c.id, node: () => new IssueCommentNode(s, issue, c) });
  const pull = issue.pull;
  if (pull !== undefined) {
    for (const sha of pull.commits) {
      const commit = issue.repo.commits.get(sha);
      if (commit !== undefined)
        items.push({ at: commit.createdAt, id: 0, node: () => new PullCommitNode(s, pull, sha) });
    }
    for (const review of pull.reviews) {
      // A pending review is its author's alone.
      if (review.submittedAt === null && review.user !== ctx?.viewer) continue;
      items.push({
        at: review.submittedAt ?? review.createdAt,
        id: review.id,
        node: () => new ReviewNode(s, pull, review),
      });
    }
  }
  items.sort((a, b) => a.at - b.at || a.id - b.id);
  const sinceMs = args.since ? Date.parse(args.since) : Number.NaN;
  const wanted = args.itemTypes?.length ? new Set(args.itemTypes) : undefined;
  let filtered = items.filter(
    (item) =>
      (Number.isNaN(sinceMs) || s.time.clock.toWallMs(item.at) >= sinceMs) &&
      (wanted === undefined || wanted.has(itemType(item.node().__typename))),
  );
  if (args.skip != null && args.skip > 0) filtered = filtered.slice(args.skip);
  return connection(filtered, args, (item) => item.node(), {
    filteredCount: filtered.length,
    pageCount: filtered.length,
    updatedAt: s.time.iso(issue.updatedAt),
  });
}
