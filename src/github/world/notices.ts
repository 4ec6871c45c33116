/**
 * What changed in the world, told to whoever listens (the webhooks, webhooks.ts): one notice per
 * change a GitHub webhook event describes, with the object it happened to, who did it, and what
 * GitHub's payload adds (the label, the assignee, the old title). The world tells synchronously
 * and only when someone listens; a listener renders payloads after the change is whole.
 */
import type {
  CheckRun,
  CheckSuite,
  Commit,
  CommitStatus,
  Issue,
  IssueComment,
  Label,
  PullRequest,
  Repo,
  Review,
  ReviewComment,
  User,
} from './objects.ts';

export type WorldNotice =
  | {
      kind: 'issue';
      /** `opened`, `closed`, `reopened`, `labeled`, `unlabeled`, `assigned`, `unassigned`, `edited`, … */
      action: string;
      issue: Issue;
      sender: User;
      label?: Pick<Label, 'name' | 'color'>;
      assignee?: User;
      requestedReviewer?: User;
      changes?: { title?: { from: string }; body?: { from: string } };
    }
  | {
      kind: 'comment';
      /** Absent: `created`. */
      action?: 'edited' | 'deleted';
      issue: Issue;
      comment: IssueComment;
      sender: User;
      /** edited: the body before. */
      changes?: { body: { from: string } };
    }
  | { kind: 'review'; pull: PullRequest; review: Review; sender: User }
  | { kind: 'review_comment'; pull: PullRequest; comment: ReviewComment; sender: User }
  | { kind: 'synchronize'; pull: PullRequest; before: string; after: string; sender: User }
  | { kind: 'check_run'; action: 'created' | 'completed'; repo: Repo; run: CheckRun; sender: User }
  /** Every latest run of an app's suite on a commit completed (again, after a new run reopened it). */
  | { kind: 'check_suite'; repo: Repo; commit: Commit; suite: CheckSuite; sender: User }
  /** The sender is the status's creator, read when the payload is rendered (the admin API names it after). */
  | { kind: 'status'; repo: Repo; commit: Commit; status: CommitStatus; sender: User }
  /** A branch or tag made or deleted (GitHub's `create` and `delete` events); `ref` is its short name. */
  | {
      kind: 'ref';
      action: 'create' | 'delete';
      repo: Repo;
      refType: 'branch' | 'tag';
      ref: string;
      sender: User;
    }
  | {
      kind: 'push';
      repo: Repo;
      branch: string;
      /** The branch's tip before the push; null when the push created it. */
      before: string | null;
      after: Commit;
      forced: boolean;
      sender: User;
    };

export type WorldListener = (notice: WorldNotice) => void;
