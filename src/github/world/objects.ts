/**
 * The objects of the emulated GitHub world (users, repositories, issues, pull requests, commits
 * with their check runs and statuses, reviews and comments) as plain records, and the few rules
 * every part of the world shares about them: how issues sort, how a refused change is said, how
 * a global node id is made. The parts that change them are beside this file (state.ts composes
 * them): timestamps and versions (time.ts), refs and pushes (refs.ts), checks and statuses
 * (checks.ts).
 */
import type {
  CHECK_CONCLUSIONS,
  CHECK_STATUSES,
  REVIEW_STATES,
  ROLE_NAMES,
  STATUS_STATES,
} from '../fixtures.ts';
import type { GitIdent } from './git-objects.ts';

export type CheckStatus = (typeof CHECK_STATUSES)[number];
export type CheckConclusion = (typeof CHECK_CONCLUSIONS)[number];
export type StatusState = (typeof STATUS_STATES)[number];
/** A review's state: a submitted one's verdict, or PENDING (started, not submitted: seen by its author only). */
export type ReviewState = (typeof REVIEW_STATES)[number] | 'PENDING';
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
  /** An organization's members (fixtures' `users[].members`): MEMBER on its repositories. */
  members?: Set<User>;
  json?: JsonCache;
}

/** A collaborator's role on a repository, GitHub's five base roles. */
export type RoleName = (typeof ROLE_NAMES)[number];

export interface Label {
  id: number;
  nodeId: string;
  name: string;
  color: string;
  description: string | null;
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
  /** Null while PENDING. */
  submittedAt: number | null;
  /** When it was started (a pending review's only time). */
  createdAt: number;
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
  /** The suite it belongs to: one per commit and app (world/checks.ts). */
  suiteId: number;
  app: CheckApp;
  detailsUrl: string | null;
  externalId: string;
  output: { title: string | null; summary: string | null; text: string | null };
  /**
   * Actions (world/workflows.ts): a re-run's check run is attempt `attempt` of the workflow run
   * whose first check run is `attemptOf`; a dispatched run was started by `workflow_dispatch`
   * on `branch`. Absent on every other check run (attempt 1 of its own run).
   */
  attemptOf?: number;
  attempt?: number;
  dispatchedOn?: string;
}

/** The GitHub App a check run was made by: GitHub Actions, or the app of a `kind: enterprise` token. */
export type CheckApp = 'github-actions' | 'fleetbench-ci';

/** A commit's check runs from one app (GitHub makes one per commit and app). */
export interface CheckSuite {
  id: number;
  nodeId: string;
  headSha: string;
  app: CheckApp;
  createdAt: number;
  updatedAt: number;
}

/**
 * What happened to an issue or pull request, as GitHub's issue events and timeline list it:
 * state changes, labels, assignees, renames, merges, head-branch pushes and deletions, and
 * cross-references from pull requests that close it.
 */
export interface IssueEvent {
  id: number;
  nodeId: string;
  event:
    | 'closed'
    | 'reopened'
    | 'labeled'
    | 'unlabeled'
    | 'assigned'
    | 'unassigned'
    | 'renamed'
    | 'merged'
    | 'head_ref_deleted'
    | 'head_ref_force_pushed'
    | 'ready_for_review'
    | 'review_requested'
    | 'review_request_removed'
    | 'convert_to_draft'
    | 'auto_merge_enabled'
    | 'auto_merge_disabled'
    | 'cross-referenced';
  actor: User;
  createdAt: number;
  commitId: string | null;
  label?: { name: string; color: string };
  assignee?: User;
  /** review_requested, review_request_removed: whose review (the actor asked for it). */
  requestedReviewer?: User;
  rename?: { from: string; to: string };
  /** closed: why (`completed`, `not_planned`); merged PRs' `closed` has none. */
  stateReason?: string | null;
  /** cross-referenced: the issue or pull request that names this one. */
  source?: Issue;
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

/**
 * Where a commit's bytes are: `made` by the emulator (git's SHA of its fields, written into a
 * served repository from them), `pushed` by git (in the repository already), or `named` by SHA
 * alone in fixtures or the admin API (no object has that SHA: never in a served repository).
 */
export type CommitOrigin = 'made' | 'pushed' | 'named';

/**
 * An annotated tag (git's `tag` object): made through `POST /git/tags`, or brought by a push.
 * A lightweight tag is a ref alone (Repo.tags names a commit).
 */
export interface TagObject {
  sha: string;
  tag: string;
  message: string;
  tagger: GitIdent;
  objectType: 'commit' | 'tree' | 'blob' | 'tag';
  object: string;
  /** Made by the API (written into a served repository by the emulator) or pushed (git has it). */
  origin: 'made' | 'pushed';
}

/** A milestone (REST "Milestones", world/milestones.ts). */
export interface Milestone {
  id: number;
  nodeId: string;
  /** From 1 in its repository. */
  number: number;
  title: string;
  description: string | null;
  state: 'open' | 'closed';
  /** Run time; null when none. */
  dueOn: number | null;
  creator: User;
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  /** Moves with the milestone and with every change of an issue in it (its counts). */
  version: number;
  counts?: { version: number; open: number; closed: number };
}

/** A release (REST "Releases", world/releases.ts): a tag's name, notes and state. */
export interface Release {
  id: number;
  nodeId: string;
  tagName: string;
  /** Where its tag is made when it does not exist: a branch or a commit SHA. */
  targetCommitish: string;
  name: string | null;
  body: string | null;
  draft: boolean;
  prerelease: boolean;
  author: User;
  createdAt: number;
  /** Null while a draft. */
  publishedAt: number | null;
  updatedAt: number;
  version: number;
}

export interface Commit {
  sha: string;
  nodeId: string;
  /** Without git's trailing newline. */
  message: string;
  /** Run time it entered the world. */
  createdAt: number;
  /** The commits it was made on (none for a repository's first, two for a merge): history for compare. */
  parents: string[];
  tree: string;
  author: GitIdent;
  committer: GitIdent;
  origin: CommitOrigin;
  checkRuns: CheckRun[];
  checkSuites: CheckSuite[];
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
  /** Issue events, oldest first (world/events.ts). */
  events: IssueEvent[];
  /** Its milestone (world/milestones.ts); absent or null when none. */
  milestone?: Milestone | null;
  pull?: PullRequest;
  json?: JsonCache;
}

/** A pull request's auto-merge: who enabled it, when, and the merge it will make. */
export interface AutoMerge {
  enabledBy: User;
  enabledAt: number;
  method: 'merge' | 'squash' | 'rebase';
  /** The merge commit's title and message, when the one who enabled it gave them. */
  title: string | undefined;
  message: string | undefined;
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
  /**
   * Whether it merges cleanly, as computed for the head and base tips `mergeableOf` names; after
   * either moves it is unknown ("still computing") until GitHub's background job has run again
   * (state.ts `mergeability`).
   */
  mergeable: boolean | null;
  /** `HEAD_SHA:BASE_SHA` the value was computed for; null when never. */
  mergeableOf: string | null;
  /** The running mergeability job: for which tips, and when it ends (run time). */
  mergeableJob: { of: string; endsAt: number } | null;
  /** Issue closed when the PR merges. */
  linkedIssue: number | null;
  commits: string[];
  reviews: Review[];
  /** Users asked for a review who have not given one since (`requested_reviewers`); absent is none. */
  requestedReviewers?: User[];
  /** Auto-merge, when enabled: merged as soon as nothing stops the merge (state.ts `enableAutoMerge`); absent is off. */
  autoMerge?: AutoMerge;
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
  /** The merge methods the repository allows, and whether a merge deletes its head branch. */
  settings: {
    allowMergeCommit: boolean;
    allowSquashMerge: boolean;
    allowRebaseMerge: boolean;
    deleteBranchOnMerge: boolean;
    /** Whether a pull request may be set to merge itself once its requirements are met. */
    allowAutoMerge: boolean;
  };
  /** Its topics (`PUT …/topics`), lower case, in the order they were given. */
  topics: string[];
  /** The README of its first commit, and that commit's tree (world/git-objects.ts). */
  readme: string;
  initialTree: string;
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
  /** The repository's labels by lower-cased name (GitHub's names are case-insensitive). */
  labels: Map<string, Label>;
  /** Moves with every change of the label table (its list's version). */
  labelsVersion: number;
  /** Its direct collaborators and their roles (fixtures' `collaborators`); the owner is admin besides. */
  collaborators: Map<User, RoleName>;
  /** Users with a merged pull request here ("previously committed"): CONTRIBUTOR. */
  contributors: Set<User>;
  /** Users who opened a pull request here: FIRST_TIME_CONTRIBUTOR until one merges. */
  pullAuthors: Set<User>;
  branches: Map<string, string>;
  /** Tags by name (`v1.0` for `refs/tags/v1.0`): a commit's SHA, or an annotated tag's (tagObjects). */
  tags: Map<string, string>;
  /** Annotated tags by SHA. */
  tagObjects: Map<string, TagObject>;
  /** Releases by id, in the order they were made (world/releases.ts). */
  releases: Map<number, Release>;
  /** Moves with every change of a release: the releases list's version. */
  releasesVersion: number;
  /** Milestones by number (world/milestones.ts), the next number, and their list's version. */
  milestones: Map<number, Milestone>;
  nextMilestone: number;
  milestonesVersion: number;
  /** The releases newest first, while `releasesVersion` is unchanged. */
  releasesList?: { version: number; items: Release[] };
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
  /** The input field at fault, when one is (REST names it in its Validation Failed error). */
  readonly field: string | undefined;
  /**
   * GitHub's error code when it answers one (`already_exists`, `invalid`): REST then says only
   * `{resource, code, field}`; without one, `code: custom` with the message.
   */
  readonly code: string | undefined;
  constructor(status: number, message: string, field?: string, code?: string) {
    super(message);
    this.name = 'GitHubStateError';
    this.status = status;
    this.field = field;
    this.code = code;
  }
}

/** Users are dated before the run: created a year before it, last updated a day before. */
export const USER_CREATED_AT = -365 * 86_400_000;
export const USER_UPDATED_AT = -86_400_000;

/** A global node id (GraphQL `node(id:)`): the type's prefix and the object's database id. */
export function nodeId(prefix: string, id: number): string {
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
