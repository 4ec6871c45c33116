/**
 * Issue events: what happened to an issue or pull request (closed, reopened, labeled, assigned,
 * renamed, a review requested or its request removed, merged, its head branch pushed over or deleted, a pull request naming it), each with
 * who did it and when, kept on the issue in order. `GET …/issues/{n}/events` lists them, and the
 * timeline (`GET …/issues/{n}/timeline`, GraphQL `timelineItems`) merges them with the comments,
 * reviews and commits the world already keeps (shapes-timeline.ts).
 */
import { type Issue, type IssueEvent, nodeId, type User } from './objects.ts';
import type { WorldTime } from './time.ts';

export class IssueEvents {
  /** Told of each event as it is recorded (the world's notices, world/notices.ts); unset costs nothing. */
  onAdd: ((issue: Issue, event: IssueEvent) => void) | undefined = undefined;

  constructor(private readonly time: WorldTime) {}

  /** Records an event on the issue (its version moves with the change that made it). */
  add(
    issue: Issue,
    event: IssueEvent['event'],
    actor: User,
    at: number,
    detail: Partial<
      Pick<
        IssueEvent,
        'commitId' | 'label' | 'assignee' | 'requestedReviewer' | 'rename' | 'stateReason' | 'source'
      >
    > = {},
  ): IssueEvent {
    const id = this.time.id();
    const record: IssueEvent = {
      id,
      nodeId: nodeId(EVENT_NODE_PREFIX[event], id),
      event,
      actor,
      createdAt: at,
      commitId: detail.commitId ?? null,
      ...detail,
    };
    issue.events.push(record);
    this.onAdd?.(issue, record);
    return record;
  }
}

/** GraphQL type prefixes of the events' node ids (`CE_…` a ClosedEvent, as GitHub's). */
const EVENT_NODE_PREFIX: Record<IssueEvent['event'], string> = {
  closed: 'CE',
  reopened: 'REE',
  labeled: 'LE',
  unlabeled: 'UNLE',
  assigned: 'AE',
  unassigned: 'UAE',
  renamed: 'RTE',
  merged: 'ME',
  head_ref_deleted: 'HRDE',
  head_ref_force_pushed: 'HRFPE',
  ready_for_review: 'RFRE',
  review_requested: 'RRE',
  review_request_removed: 'RRRE',
  convert_to_draft: 'CTDE',
  auto_merge_enabled: 'AMEE',
  auto_merge_disabled: 'AMDE',
  'cross-referenced': 'CRE',
};
