/**
 * The bodies of webhook deliveries, in the shapes GitHub's "Webhook events and payloads" documents
 * (docs/github-emulator.md, "Webhooks"): `action`, the object as the REST API shows it (shapes.ts),
 * `repository` and `sender`, and what each event adds (the label, the assignee, a push's commits).
 * Rendered when the change is whole, so a payload shows the object after it.
 */
import {
  checkRunObject,
  checkSuiteObject,
  commitObject,
  issueCommentObject,
  issueJson,
  labelObject,
  pullFullJson,
  pullSimpleJson,
  reactions,
  repoObject,
  reviewCommentObject,
  reviewObject,
  statusObject,
  userObject,
} from './shapes.ts';
import type { Commit, GitHubState, Repo } from './state.ts';
import type { GitIdent } from './world/git-objects.ts';
import type { WorldNotice } from './world/notices.ts';

/** The event name (`X-GitHub-Event`) and the action of a notice. */
export function eventOf(notice: WorldNotice): { event: string; action: string | null } {
  switch (notice.kind) {
    case 'issue':
      return { event: notice.issue.pull ? 'pull_request' : 'issues', action: notice.action };
    case 'comment':
      return { event: 'issue_comment', action: notice.action ?? 'created' };
    case 'review':
      return { event: 'pull_request_review', action: 'submitted' };
    case 'review_comment':
      return { event: 'pull_request_review_comment', action: 'created' };
    case 'synchronize':
      return { event: 'pull_request', action: 'synchronize' };
    case 'push':
      return { event: 'push', action: null };
    case 'check_run':
      return { event: 'check_run', action: notice.action };
    case 'check_suite':
      return { event: 'check_suite', action: 'completed' };
    case 'status':
      return { event: 'status', action: null };
    case 'ref':
      return { event: notice.action, action: null };
  }
}

export function repoOf(notice: WorldNotice): Repo {
  switch (notice.kind) {
    case 'issue':
    case 'comment':
      return notice.issue.repo;
    case 'review':
    case 'review_comment':
    case 'synchronize':
      return notice.pull.issue.repo;
    case 'push':
    case 'check_run':
    case 'check_suite':
    case 'status':
    case 'ref':
      return notice.repo;
  }
}

/** GitHub's cap on a push payload's `commits` ("Webhook events and payloads", push). */
export const MAX_PUSH_COMMITS = 2048;

const ZERO_SHA = '0'.repeat(40);

/** The payload of a notice (an object; the delivery serializes it once for every hook). */
export function payloadOf(state: GitHubState, notice: WorldNotice): Record<string, unknown> {
  const repo = repoOf(notice);
  const common = { repository: repoObject(state, repo), sender: userObject(state, notice.sender) };
  switch (notice.kind) {
    case 'issue': {
      const issue = notice.issue;
      const extra: Record<string, unknown> = {};
      if (notice.label) {
        const label = repo.labels.get(notice.label.name.toLowerCase());
        extra.label = label
          ? labelObject(state, repo, label)
          : { name: notice.label.name, color: notice.label.color };
      }
      if (notice.assignee) extra.assignee = userObject(state, notice.assignee);
      if (notice.requestedReviewer) extra.requested_reviewer = userObject(state, notice.requestedReviewer);
      if (notice.changes) extra.changes = notice.changes;
      // GitHub's auto_merge_disabled payload says why; here it is only ever turned off by a user.
      if (notice.action === 'auto_merge_disabled') extra.reason = 'disabled by a user';
      if (issue.pull)
        return {
          action: notice.action,
          number: issue.number,
          pull_request: JSON.parse(pullFullJson(state, issue.pull)),
          ...extra,
          ...common,
        };
      return { action: notice.action, issue: JSON.parse(issueJson(state, issue)), ...extra, ...common };
    }
    case 'comment': {
      const comment = issueCommentObject(state, notice.issue, notice.comment);
      // The webhook's comment carries what the REST list leaves out by default.
      comment.reactions = reactions(`${comment.url}/reactions`);
      comment.performed_via_github_app = null;
      return {
        action: notice.action ?? 'created',
        issue: JSON.parse(issueJson(state, notice.issue)),
        comment,
        ...(notice.changes ? { changes: notice.changes } : {}),
        ...common,
      };
    }
    case 'review': {
      const review = reviewObject(state, notice.pull, notice.review);
      // Webhook reviews name their state in lower case (`approved`), REST in upper case.
      review.state = String(review.state).toLowerCase();
      return {
        action: 'submitted',
        review,
        pull_request: JSON.parse(pullSimpleJson(state, notice.pull)),
        ...common,
      };
    }
    case 'review_comment': {
      const comment = reviewCommentObject(state, notice.pull, notice.comment);
      // The webhook's comment carries what the REST answer leaves out by default: its reactions,
      // and a multi-line comment's start (null for the one-line comments the emulator makes).
      comment.reactions = reactions(`${comment.url}/reactions`);
      comment.start_line = null;
      comment.original_start_line = null;
      comment.start_side = null;
      return {
        action: 'created',
        comment,
        pull_request: JSON.parse(pullSimpleJson(state, notice.pull)),
        ...common,
      };
    }
    case 'synchronize':
      return {
        action: 'synchronize',
        number: notice.pull.issue.number,
        before: notice.before,
        after: notice.after,
        pull_request: JSON.parse(pullFullJson(state, notice.pull)),
        ...common,
      };
    case 'check_run':
      return { action: notice.action, check_run: checkRunObject(state, repo, notice.run), ...common };
    case 'check_suite': {
      const { repository: _, ...suite } = checkSuiteObject(state, repo, notice.commit, notice.suite);
      return { action: 'completed', check_suite: suite, ...common };
    }
    case 'status': {
      const { commit, status } = notice;
      const shown = statusObject(state, repo, commit, status);
      const branches = [...repo.branches]
        .filter(([, sha]) => sha === commit.sha)
        .map(([name]) => ({
          name,
          commit: { sha: commit.sha, url: `${state.apiUrl}/repos/${repo.fullName}/commits/${commit.sha}` },
          protected: false,
        }));
      return {
        id: status.id,
        sha: commit.sha,
        name: repo.fullName,
        target_url: shown.target_url,
        avatar_url: shown.avatar_url,
        context: status.context,
        description: status.description,
        state: status.state,
        commit: commitObject(state, repo, commit, status.creator),
        branches,
        created_at: shown.created_at,
        updated_at: shown.updated_at,
        repository: common.repository,
        // Its creator as the payload is rendered: the admin API names it after the status is made.
        sender: userObject(state, status.creator),
      };
    }
    case 'ref':
      // `ref` is the short name (`feature`, `v1.0`); a deploy key's push would say `deploy_key`.
      return notice.action === 'create'
        ? {
            ref: notice.ref,
            ref_type: notice.refType,
            master_branch: repo.defaultBranch,
            description: repo.description,
            pusher_type: 'user',
            ...common,
          }
        : { ref: notice.ref, ref_type: notice.refType, pusher_type: 'user', ...common };
    case 'push': {
      const before = notice.before ?? ZERO_SHA;
      const after = notice.after;
      const pushed =
        notice.before === null
          ? [after]
          : state.refs.compare(repo, notice.before, after.sha).ahead.slice(-MAX_PUSH_COMMITS);
      const commits = pushed.map((c) => pushCommit(state, repo, c));
      return {
        ref: `refs/heads/${notice.branch}`,
        before,
        after: after.sha,
        created: notice.before === null,
        deleted: false,
        forced: notice.forced,
        base_ref: null,
        compare: `${state.webUrl}/${repo.fullName}/compare/${before.slice(0, 12)}...${after.sha.slice(0, 12)}`,
        commits,
        head_commit: pushCommit(state, repo, after),
        pusher: { name: notice.sender.login, email: null },
        ...common,
      };
    }
  }
}

function pushCommit(state: GitHubState, repo: Repo, commit: Commit): Record<string, unknown> {
  const person = (ident: GitIdent) => {
    const user = state.userOfIdent(ident);
    return { name: ident.name, email: ident.email, ...(user ? { username: user.login } : {}) };
  };
  return {
    id: commit.sha,
    tree_id: commit.tree,
    distinct: true,
    message: commit.message,
    timestamp: new Date(commit.author.seconds * 1000).toISOString().replace('.000Z', 'Z'),
    url: `${state.webUrl}/${repo.fullName}/commit/${commit.sha}`,
    author: person(commit.author),
    committer: person(commit.committer),
    added: [],
    removed: [],
    modified: [],
  };
}
