/**
 * The GraphQL mutations `gh` and orchestrators send (createPullRequest, createIssue, addComment,
 * addPullRequestReview, mergePullRequest, closePullRequest, updatePullRequest,
 * markPullRequestReadyForReview, addLabelsToLabelable, and the issue counterparts), with GitHub's
 * input and payload types.
 * Each calls the same GitHubState method the REST write or the admin API calls, so a comment
 * posted through GraphQL moves the same versions, `updated_at` and ETags as one posted through
 * REST. Refusals come back as GitHub's GraphQL errors (`type` NOT_FOUND or UNPROCESSABLE next to
 * `data: {field: null}`); charging is the emulator's job (see ../emulator.ts).
 */
import type { GraphQLError } from 'graphql';
import {
  checkCommentBody,
  type Issue,
  type IssueComment,
  type Label,
  type PullRequest,
  type ReviewState,
} from '../state.ts';
import { roleOf } from '../world/access.ts';
import { GRAPHQL_REACTIONS, type ReactionContent } from '../world/reactions.ts';
import { cursor } from './connection.ts';
import {
  change,
  type GqlContext,
  type MutationInput as Input,
  notFound,
  repoById,
  unprocessable,
} from './context.ts';
import { gitMutations } from './git-mutations.ts';
import { IssueNode, PullNode } from './issues.ts';
import { ReactionNode } from './reactions.ts';
import { IssueCommentNode, ReviewNode } from './reviews.ts';
import { UserNode } from './users.ts';

/** Top-level mutation fields that create content (GitHub's 80/min and 500/h secondary limits). */
export const CONTENT_CREATING_MUTATIONS: ReadonlySet<string> = new Set([
  'addComment',
  'addPullRequestReview',
  'createIssue',
  'createPullRequest',
  // A commit on a branch readers see, as `PUT …/contents` (docs/github-emulator.md, "Contents and Git data").
  'createCommitOnBranch',
]);

function unresolved(id: string): GraphQLError {
  return notFound(`Could not resolve to a node with the global id of '${id}'.`);
}

/**
 * An issue or pull request by node id (a PR's id gives its issue). Its repository becomes the
 * trace record's `repo`, refused or not.
 */
function issueById(ctx: GqlContext, id: string): Issue {
  const entity = ctx.state.nodes.get(id);
  let issue: Issue | undefined;
  if (entity !== undefined && 'issue' in entity) issue = entity.issue;
  else if (entity !== undefined && 'number' in entity && 'repo' in entity) issue = entity;
  if (issue === undefined) throw unresolved(id);
  ctx.touched = issue.repo.fullName;
  // What the mutation names, for attribution by content (attribution.ts).
  ctx.state.touched?.issues.push(issue.number);
  return issue;
}

/** An issue comment by node id (`IC_…`), with its issue; its repository becomes the record's. */
function commentById(ctx: GqlContext, id: string): { issue: Issue; comment: IssueComment } {
  const found = ctx.state.findIssueCommentByNodeId(id);
  if (found === undefined) throw unresolved(id);
  ctx.touched = found.issue.repo.fullName;
  ctx.state.touched?.issues.push(found.issue.number);
  return found;
}

/** What a reaction is on, by node id: an issue, a pull request (its issue) or an issue comment. */
function reactable(ctx: GqlContext, id: string): { issue: Issue; comment?: IssueComment } {
  return id.startsWith('IC_') ? commentById(ctx, id) : { issue: issueById(ctx, id) };
}

/** REST's name of a GraphQL `ReactionContent` (the schema has already checked it is one). */
function restContent(content: string): ReactionContent {
  return GRAPHQL_REACTIONS.find(([name]) => name === content)![1];
}

function pullById(ctx: GqlContext, id: string): PullRequest {
  const entity = ctx.state.nodes.get(id);
  let pull: PullRequest | undefined;
  if (entity !== undefined && 'issue' in entity) pull = entity;
  else if (entity !== undefined && 'pull' in entity && entity.pull) pull = entity.pull;
  if (pull === undefined) throw notFound(`Could not resolve to a PullRequest with the global id of '${id}'.`);
  ctx.touched = pull.issue.repo.fullName;
  ctx.state.touched?.pulls.push(pull.issue.number);
  return pull;
}

function labelsById(ctx: GqlContext, issue: Issue, ids: readonly string[]): Label[] {
  const byId = new Map<string, Label>();
  for (const label of ctx.state.repoLabels(issue.repo).values()) byId.set(label.nodeId, label);
  return ids.map((id) => {
    const label = byId.get(id);
    if (!label) throw unresolved(id);
    return label;
  });
}

/**
 * The assignable users of these node ids, each once: users, not organizations or bots, as REST
 * assigns them (rest-issues.ts `assignable`); any other id is unresolved.
 */
function usersById(ctx: GqlContext, ids: readonly string[]) {
  return [...new Set(ids)].map((id) => {
    const entity = ctx.state.nodes.get(id);
    if (entity === undefined || !('login' in entity) || entity.type !== 'User') throw unresolved(id);
    return entity;
  });
}

type LabelsInput = { labelableId: string; labelIds: string[] };

/** addLabelsToLabelable and removeLabelsFromLabelable: the labels by id, changed, the labelable. */
function changeLabels(
  ctx: GqlContext,
  input: LabelsInput & { clientMutationId?: string | null },
  apply: (issue: Issue, names: string[]) => unknown,
) {
  const issue = issueById(ctx, input.labelableId);
  const labels = labelsById(ctx, issue, input.labelIds);
  change(() =>
    apply(
      issue,
      labels.map((l) => l.name),
    ),
  );
  return { clientMutationId: input.clientMutationId ?? null, labelable: issueNode(ctx, issue) };
}

/** The editable fields of updateIssue and updatePullRequest (`baseRefName`: a pull request's only). */
type IssueEdit = {
  title?: string | null;
  body?: string | null;
  baseRefName?: string | null;
  state?: string | null;
  labelIds?: string[] | null;
  assigneeIds?: string[] | null;
};

/**
 * What updateIssue and updatePullRequest share: title, body, base (a pull request's) and state
 * are edited as given; labelIds / assigneeIds replace the current sets.
 */
function editIssueFromInput(ctx: GqlContext, issue: Issue, input: IssueEdit): void {
  change(() =>
    ctx.state.editIssue(
      issue,
      {
        title: input.title ?? undefined,
        body: input.body ?? undefined,
        base: input.baseRefName ?? undefined,
        state: input.state === 'CLOSED' ? 'closed' : input.state === 'OPEN' ? 'open' : undefined,
      },
      ctx.viewer,
    ),
  );
  if (input.labelIds != null) {
    const labels = labelsById(ctx, issue, input.labelIds);
    change(() =>
      ctx.state.setLabels(
        issue,
        labels.map((l) => l.name),
        ctx.viewer,
      ),
    );
  }
  if (input.assigneeIds != null) {
    const assignees = usersById(ctx, input.assigneeIds);
    change(() =>
      ctx.state.setAssignees(
        issue,
        assignees.map((u) => u.login),
        ctx.viewer,
      ),
    );
  }
}

/** GraphQL's PullRequestMergeMethod as the state's: MERGE when none is given, as GitHub's default. */
const mergeMethodOf = (method: string | null | undefined) =>
  method === 'SQUASH' ? 'squash' : method === 'REBASE' ? 'rebase' : 'merge';

const pullPayload = (ctx: GqlContext, pull: PullRequest, input: { clientMutationId?: string | null }) => ({
  clientMutationId: input.clientMutationId ?? null,
  pullRequest: new PullNode(ctx.state, pull),
  actor: new UserNode(ctx.state, ctx.viewer),
});

const issueNode = (ctx: GqlContext, issue: Issue) =>
  issue.pull ? new PullNode(ctx.state, issue.pull) : new IssueNode(ctx.state, issue);

const REVIEW_EVENTS: Record<string, ReviewState> = {
  APPROVE: 'APPROVED',
  REQUEST_CHANGES: 'CHANGES_REQUESTED',
  COMMENT: 'COMMENTED',
};

/** Resolvers of the Mutation type, on the same root value as the queries. */
export const mutationRoot = {
  ...gitMutations,
  addComment({ input }: Input<{ subjectId: string; body: string }>, ctx: GqlContext) {
    const issue = issueById(ctx, input.subjectId);
    const comment = change(() => {
      checkCommentBody(input.body);
      return ctx.state.postIssueComment(issue, { body: input.body, user: ctx.viewer.login });
    });
    const edge = {
      cursor: cursor(issue.comments.length - 1),
      node: new IssueCommentNode(ctx.state, issue, comment),
    };
    return {
      clientMutationId: input.clientMutationId ?? null,
      commentEdge: edge,
      subject: issueNode(ctx, issue),
      timelineEdge: edge,
    };
  },

  updateIssueComment({ input }: Input<{ id: string; body: string }>, ctx: GqlContext) {
    const { issue, comment } = commentById(ctx, input.id);
    change(() => {
      checkCommentBody(input.body);
      ctx.state.editIssueComment(issue, comment, input.body, ctx.viewer);
    });
    return {
      clientMutationId: input.clientMutationId ?? null,
      issueComment: new IssueCommentNode(ctx.state, issue, comment),
    };
  },

  /**
   * Asks users for a review of a pull request (`gh pr create --reviewer`, `gh pr edit
   * --add-reviewer`): with `union` the users are added to those asked, without it they become
   * the whole set (the others' requests removed). The same refusals as REST's.
   */
  requestReviews(
    {
      input,
    }: Input<{
      pullRequestId: string;
      userIds?: string[] | null;
      teamIds?: string[] | null;
      botIds?: string[] | null;
      union?: boolean | null;
    }>,
    ctx: GqlContext,
  ) {
    const pull = pullById(ctx, input.pullRequestId);
    const users = (input.userIds ?? []).map((id) => {
      const user = ctx.state.nodes.get(id);
      if (user === undefined || !('login' in user)) throw unresolved(id);
      return user;
    });
    const repo = pull.issue.repo;
    if (
      (input.teamIds ?? []).length > 0 ||
      (input.botIds ?? []).length > 0 ||
      users.some((u) => roleOf(u, repo) === null)
    )
      throw unprocessable(
        `Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the ${repo.fullName} repository.`,
      );
    change(() => {
      if (input.union !== true) {
        const named = new Set(users);
        const others = (pull.requestedReviewers ?? []).filter((u) => !named.has(u));
        ctx.state.removeRequestedReviewers(pull, others, ctx.viewer);
      }
      ctx.state.requestReviewers(pull, users, ctx.viewer);
    });
    return { clientMutationId: input.clientMutationId ?? null, pullRequest: new PullNode(ctx.state, pull) };
  },

  addReaction({ input }: Input<{ subjectId: string; content: string }>, ctx: GqlContext) {
    const on = reactable(ctx, input.subjectId);
    const made = change(() => ctx.state.react(on, ctx.viewer, restContent(input.content)));
    return {
      clientMutationId: input.clientMutationId ?? null,
      reaction: new ReactionNode(ctx.state, made.reaction),
      subject: on.comment ? new IssueCommentNode(ctx.state, on.issue, on.comment) : issueNode(ctx, on.issue),
    };
  },

  removeReaction({ input }: Input<{ subjectId: string; content: string }>, ctx: GqlContext) {
    const on = reactable(ctx, input.subjectId);
    const gone = change(() => ctx.state.unreactAs(on, ctx.viewer, restContent(input.content)));
    return {
      clientMutationId: input.clientMutationId ?? null,
      reaction: gone === undefined ? null : new ReactionNode(ctx.state, gone),
      subject: on.comment ? new IssueCommentNode(ctx.state, on.issue, on.comment) : issueNode(ctx, on.issue),
    };
  },

  deleteIssueComment({ input }: Input<{ id: string }>, ctx: GqlContext) {
    const { issue, comment } = commentById(ctx, input.id);
    change(() => ctx.state.deleteIssueComment(issue, comment, ctx.viewer));
    return { clientMutationId: input.clientMutationId ?? null };
  },

  addPullRequestReview(
    {
      input,
    }: Input<{
      pullRequestId: string;
      body?: string | null;
      event?: string | null;
      comments?: { path: string; position: number; body: string }[] | null;
      threads?: { path: string; line: number; body: string }[] | null;
    }>,
    ctx: GqlContext,
  ) {
    const pull = pullById(ctx, input.pullRequestId);
    if (input.event === 'DISMISS')
      throw unprocessable('A new review cannot be created with the DISMISS event.');
    // A review without an event stays PENDING on GitHub, seen by its author only until submitted.
    const state: ReviewState = input.event ? (REVIEW_EVENTS[input.event] ?? 'PENDING') : 'PENDING';
    const comments = [
      ...(input.comments ?? []).map((c) => ({ path: c.path, line: c.position, body: c.body })),
      ...(input.threads ?? []).map((t) => ({ path: t.path, line: t.line, body: t.body })),
    ];
    const review = change(() =>
      ctx.state.submitReviewWithComments(pull, {
        user: ctx.viewer.login,
        state,
        body: input.body ?? '',
        comments,
      }),
    );
    const node = new ReviewNode(ctx.state, pull, review);
    return {
      clientMutationId: input.clientMutationId ?? null,
      pullRequestReview: node,
      reviewEdge: { cursor: cursor(pull.reviews.length - 1), node },
    };
  },

  mergePullRequest(
    {
      input,
    }: Input<{
      pullRequestId: string;
      mergeMethod?: string | null;
      expectedHeadOid?: string | null;
      commitHeadline?: string | null;
      commitBody?: string | null;
    }>,
    ctx: GqlContext,
  ) {
    const pull = pullById(ctx, input.pullRequestId);
    const method = mergeMethodOf(input.mergeMethod);
    // The REST merge endpoint's refusals, in the same words.
    const refusal =
      ctx.state.mergeMethodRefusal(pull.issue.repo, method) ??
      ctx.state.mergeRefusal(pull, input.expectedHeadOid ?? undefined)?.message;
    if (refusal) throw unprocessable(refusal);
    change(() =>
      ctx.state.mergePullRequest(pull, {
        user: ctx.viewer.login,
        method,
        title: input.commitHeadline ?? undefined,
        message: input.commitBody ?? undefined,
      }),
    );
    return pullPayload(ctx, pull, input);
  },

  createPullRequest(
    {
      input,
    }: Input<{
      repositoryId: string;
      baseRefName: string;
      headRefName: string;
      title: string;
      body?: string | null;
      draft?: boolean | null;
    }>,
    ctx: GqlContext,
  ) {
    const repo = repoById(ctx, input.repositoryId);
    const head = input.headRefName.replace(/^refs\/heads\//, '');
    ctx.state.touched?.branches.push(head);
    const base = input.baseRefName.replace(/^refs\/heads\//, '');
    // GitHub's answer when the head branch was never pushed (what `gh pr create` shows).
    if (!repo.branches.has(head))
      throw unprocessable(
        `Head sha can't be blank, Base sha can't be blank, No commits between ${base} and ${head}, Head ref must be a branch`,
      );
    if (!repo.branches.has(base)) throw unprocessable(`Base ref must be a branch`);
    const pull = change(() =>
      ctx.state.openPullRequest(repo, {
        head,
        base,
        title: input.title,
        body: input.body ?? '',
        user: ctx.viewer.login,
        draft: input.draft ?? false,
      }),
    );
    return { clientMutationId: input.clientMutationId ?? null, pullRequest: new PullNode(ctx.state, pull) };
  },

  createIssue(
    {
      input,
    }: Input<{
      repositoryId: string;
      title: string;
      body?: string | null;
      labelIds?: string[] | null;
      assigneeIds?: string[] | null;
    }>,
    ctx: GqlContext,
  ) {
    const repo = repoById(ctx, input.repositoryId);
    // One map of the repository's labels by node id, as labelsById makes: a copy and scan of them
    // per id took 300,000 ids x 1,000 labels (2-4 s of the event loop).
    const byId = new Map<string, string>();
    for (const label of ctx.state.repoLabels(repo).values()) byId.set(label.nodeId, label.name);
    const labels = (input.labelIds ?? []).map((id) => {
      const name = byId.get(id);
      if (name === undefined) throw unresolved(id);
      return name;
    });
    const assignees = usersById(ctx, input.assigneeIds ?? []).map((u) => u.login);
    const issue = change(() =>
      ctx.state.createIssue(repo, {
        title: input.title,
        body: input.body ?? '',
        user: ctx.viewer.login,
        labels,
        assignees,
      }),
    );
    return { clientMutationId: input.clientMutationId ?? null, issue: new IssueNode(ctx.state, issue) };
  },

  closePullRequest({ input }: Input<{ pullRequestId: string }>, ctx: GqlContext) {
    const pull = pullById(ctx, input.pullRequestId);
    change(() => ctx.state.editIssue(pull.issue, { state: 'closed' }, ctx.viewer));
    return pullPayload(ctx, pull, input);
  },

  reopenPullRequest({ input }: Input<{ pullRequestId: string }>, ctx: GqlContext) {
    const pull = pullById(ctx, input.pullRequestId);
    change(() => ctx.state.editIssue(pull.issue, { state: 'open' }, ctx.viewer));
    return pullPayload(ctx, pull, input);
  },

  updatePullRequest({ input }: Input<IssueEdit & { pullRequestId: string }>, ctx: GqlContext) {
    const pull = pullById(ctx, input.pullRequestId);
    editIssueFromInput(ctx, pull.issue, input);
    return pullPayload(ctx, pull, input);
  },

  enablePullRequestAutoMerge(
    {
      input,
    }: Input<{
      pullRequestId: string;
      mergeMethod?: string | null;
      commitHeadline?: string | null;
      commitBody?: string | null;
      expectedHeadOid?: string | null;
    }>,
    ctx: GqlContext,
  ) {
    const pull = pullById(ctx, input.pullRequestId);
    if (input.expectedHeadOid != null && input.expectedHeadOid !== pull.headSha)
      throw unprocessable('Head branch was modified. Review and try the merge again.');
    change(() =>
      ctx.state.enableAutoMerge(pull, {
        user: ctx.viewer.login,
        method: mergeMethodOf(input.mergeMethod),
        title: input.commitHeadline ?? undefined,
        message: input.commitBody ?? undefined,
      }),
    );
    return pullPayload(ctx, pull, input);
  },

  disablePullRequestAutoMerge({ input }: Input<{ pullRequestId: string }>, ctx: GqlContext) {
    const pull = pullById(ctx, input.pullRequestId);
    change(() => ctx.state.disableAutoMerge(pull, ctx.viewer.login));
    return pullPayload(ctx, pull, input);
  },

  convertPullRequestToDraft({ input }: Input<{ pullRequestId: string }>, ctx: GqlContext) {
    const pull = pullById(ctx, input.pullRequestId);
    change(() => ctx.state.convertToDraft(pull, ctx.viewer));
    return { clientMutationId: input.clientMutationId ?? null, pullRequest: new PullNode(ctx.state, pull) };
  },

  markPullRequestReadyForReview({ input }: Input<{ pullRequestId: string }>, ctx: GqlContext) {
    const pull = pullById(ctx, input.pullRequestId);
    change(() => ctx.state.markReadyForReview(pull, ctx.viewer));
    return { clientMutationId: input.clientMutationId ?? null, pullRequest: new PullNode(ctx.state, pull) };
  },

  addLabelsToLabelable({ input }: Input<LabelsInput>, ctx: GqlContext) {
    return changeLabels(ctx, input, (issue, names) => ctx.state.addLabels(issue, names, ctx.viewer));
  },

  removeLabelsFromLabelable({ input }: Input<LabelsInput>, ctx: GqlContext) {
    return changeLabels(ctx, input, (issue, names) => ctx.state.removeLabels(issue, names, ctx.viewer));
  },

  updateIssue({ input }: Input<Omit<IssueEdit, 'baseRefName'> & { id: string }>, ctx: GqlContext) {
    const issue = issueById(ctx, input.id);
    editIssueFromInput(ctx, issue, input);
    return {
      clientMutationId: input.clientMutationId ?? null,
      issue: new IssueNode(ctx.state, issue),
      actor: new UserNode(ctx.state, ctx.viewer),
    };
  },

  closeIssue({ input }: Input<{ issueId: string; stateReason?: string | null }>, ctx: GqlContext) {
    const issue = issueById(ctx, input.issueId);
    change(() =>
      ctx.state.editIssue(
        issue,
        {
          state: 'closed',
          stateReason: input.stateReason === 'NOT_PLANNED' ? 'not_planned' : undefined,
        },
        ctx.viewer,
      ),
    );
    return { clientMutationId: input.clientMutationId ?? null, issue: new IssueNode(ctx.state, issue) };
  },

  reopenIssue({ input }: Input<{ issueId: string }>, ctx: GqlContext) {
    const issue = issueById(ctx, input.issueId);
    change(() => ctx.state.editIssue(issue, { state: 'open' }, ctx.viewer));
    return { clientMutationId: input.clientMutationId ?? null, issue: new IssueNode(ctx.state, issue) };
  },
};
