/**
 * An issue's events and timeline in GitHub's REST shapes (`issue-event-for-issue`,
 * `timeline-issue-events`): the issue events the world records (world/events.ts), and on the
 * timeline also its comments (`commented`), a pull request's commits (`committed`) and submitted
 * reviews (`reviewed`), and the pull requests naming it (`cross-referenced`), in the order they
 * happened.
 */
import { commitObject, issueCommentObject, issueJson, reviewObject, userObject } from './shapes.ts';
import type { GitHubState, Issue, IssueEvent } from './state.ts';
import { gitDate } from './world/git-objects.ts';

/** One timeline entry: its time and order, and how it renders. */
export interface TimelineEntry {
  at: number;
  /** Ties broken by id, then by kind, so the order is deterministic. */
  id: number;
  render: () => Record<string, unknown>;
}

/** An issue event as `GET …/issues/{n}/events` lists it. */
export function issueEventObject(state: GitHubState, issue: Issue, e: IssueEvent): Record<string, unknown> {
  const api = `${state.apiUrl}/repos/${issue.repo.fullName}`;
  const out: Record<string, unknown> = {
    id: e.id,
    node_id: e.nodeId,
    url: `${api}/issues/events/${e.id}`,
    actor: userObject(state, e.actor),
    event: e.event,
    commit_id: e.commitId,
    commit_url: e.commitId === null ? null : `${api}/commits/${e.commitId}`,
    created_at: state.time.iso(e.createdAt),
    performed_via_github_app: null,
  };
  if (e.label !== undefined) out.label = e.label;
  if (e.assignee !== undefined) {
    out.assignee = userObject(state, e.assignee);
    out.assigner = userObject(state, e.actor);
  }
  if (e.requestedReviewer !== undefined) {
    out.requested_reviewer = userObject(state, e.requestedReviewer);
    out.review_requester = userObject(state, e.actor);
  }
  if (e.rename !== undefined) out.rename = e.rename;
  if (e.stateReason !== undefined) out.state_reason = e.stateReason;
  return out;
}

/** The events `GET …/issues/{n}/events` lists: everything but timeline-only entries. */
export function listedEvents(issue: Issue): IssueEvent[] {
  return issue.events.filter((e) => e.event !== 'cross-referenced');
}

/** Every entry of an issue's timeline, oldest first. */
export function timelineEntries(state: GitHubState, issue: Issue): TimelineEntry[] {
  const repo = issue.repo;
  const api = `${state.apiUrl}/repos/${repo.fullName}`;
  const entries: TimelineEntry[] = [];
  for (const e of issue.events) {
    if (e.event === 'cross-referenced' && e.source !== undefined) {
      const source = e.source;
      entries.push({
        at: e.createdAt,
        id: e.id,
        render: () => ({
          event: 'cross-referenced',
          actor: userObject(state, e.actor),
          created_at: state.time.iso(e.createdAt),
          updated_at: state.time.iso(e.createdAt),
          source: { type: 'issue', issue: JSON.parse(issueJson(state, source)) },
        }),
      });
    } else entries.push({ at: e.createdAt, id: e.id, render: () => issueEventObject(state, issue, e) });
  }
  for (const c of issue.comments) {
    entries.push({
      at: c.createdAt,
      id: c.id,
      render: () => ({
        ...issueCommentObject(state, issue, c),
        event: 'commented',
        actor: userObject(state, c.user),
      }),
    });
  }
  const pull = issue.pull;
  if (pull !== undefined) {
    for (const sha of pull.commits) {
      const commit = repo.commits.get(sha);
      if (commit === undefined) continue;
      entries.push({
        at: commit.createdAt,
        id: 0,
        render: () => {
          const full = commitObject(state, repo, commit, issue.user);
          const inner = full.commit as Record<string, unknown>;
          return {
            event: 'committed',
            sha,
            node_id: commit.nodeId,
            url: `${api}/git/commits/${sha}`,
            html_url: `${state.webUrl}/${repo.fullName}/commit/${sha}`,
            author: { ...(inner.author as object), date: gitDate(commit.author) },
            committer: { ...(inner.committer as object), date: gitDate(commit.committer) },
            message: commit.message,
            tree: inner.tree,
            parents: full.parents,
            verification: inner.verification,
          };
        },
      });
    }
    for (const review of pull.reviews) {
      if (review.submittedAt === null) continue;
      entries.push({
        at: review.submittedAt,
        id: review.id,
        // The timeline says a review's state in lower case (`approved`), the reviews list in upper.
        render: () => ({
          ...reviewObject(state, pull, review),
          state: review.state.toLowerCase(),
          event: 'reviewed',
        }),
      });
    }
  }
  return entries.sort((a, b) => a.at - b.at || a.id - b.id);
}
