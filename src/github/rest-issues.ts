/**
 * An issue's labels (list, add, replace, remove one, remove all), the repository's labels, an
 * issue's assignees (add, remove, who may be assigned), and an issue's events and timeline: the
 * routes a control plane uses to mark work (`agent:working` swapped for `agent:done`, the bot
 * assigned as it takes an issue) and to read what happened to an issue or pull request. Labels and
 * assignees change through the same state methods GraphQL's mutations and `PATCH` use, so each
 * change is an issue event.
 */
import {
  actor,
  bodyField,
  fail,
  mutate,
  notFound,
  numberParam,
  pagedList,
  type RestContext,
  type RestResult,
  type RestRouter,
  validation,
  withIssue,
  withRepo,
} from './rest-kit.ts';
import {
  issueCommentObject,
  issueJson,
  labelObject,
  labelsJson,
  reactionObject,
  userObject,
} from './shapes.ts';
import { issueEventObject, listedEvents, timelineEntries } from './shapes-timeline.ts';
import {
  checkCommentBody,
  type GitHubState,
  type Issue,
  type IssueComment,
  type Label,
  type Repo,
  type User,
} from './state.ts';
import type { LabelInput } from './world/labels.ts';
import { isReactionContent } from './world/reactions.ts';

export function addIssueLabelAndTimelineRoutes(r: RestRouter): void {
  const labels = '/repos/{owner}/{repo}/issues/{issue_number}/labels';
  r.add('GET', labels, 'issues/labels#list-labels-for-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) =>
      pagedList(
        ctx,
        issue.version,
        () => labelsJson(ctx.state, issue.repo, issue),
        (label) => label as object,
      ),
    ),
  );
  r.add('POST', labels, 'issues/labels#add-labels-to-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) =>
      withLabelNames(ctx, (names) => {
        ctx.state.addLabels(issue, names, actor(ctx));
        return labelList(ctx, issue);
      }),
    ),
  );
  r.add('PUT', labels, 'issues/labels#set-labels-for-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) =>
      withLabelNames(ctx, (names) => {
        ctx.state.setLabels(issue, names, actor(ctx));
        return labelList(ctx, issue);
      }),
    ),
  );
  r.add('DELETE', labels, 'issues/labels#remove-all-labels-from-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) => {
      ctx.state.removeLabels(
        issue,
        issue.labels.map((l) => l.name),
        actor(ctx),
      );
      return { status: 204, body: '' };
    }),
  );
  r.add('DELETE', `${labels}/{name}`, 'issues/labels#remove-a-label-from-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) => {
      const name = ctx.params[3]!;
      if (!issue.labels.some((l) => l.name.toLowerCase() === name.toLowerCase()))
        return fail(404, 'Label does not exist');
      ctx.state.removeLabels(issue, [name], actor(ctx));
      return labelList(ctx, issue);
    }),
  );

  const assignees = '/repos/{owner}/{repo}/issues/{issue_number}/assignees';
  r.add('POST', assignees, 'issues/assignees#add-assignees-to-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) =>
      withAssigneeLogins(ctx, (users) => {
        ctx.state.setAssignees(
          issue,
          [...issue.assignees, ...users].map((u) => u.login),
          actor(ctx),
        );
        return { status: 201, body: issueJson(ctx.state, issue) };
      }),
    ),
  );
  r.add('DELETE', assignees, 'issues/assignees#remove-assignees-from-an-issue', (ctx) =>
    withIssue(ctx, 2, (issue) =>
      withAssigneeLogins(ctx, (named) => {
        const users = new Set(named);
        ctx.state.setAssignees(
          issue,
          issue.assignees.filter((u) => !users.has(u)).map((u) => u.login),
          actor(ctx),
        );
        return { status: 200, body: issueJson(ctx.state, issue) };
      }),
    ),
  );
  r.add(
    'GET',
    `${assignees}/{assignee}`,
    'issues/assignees#check-if-a-user-can-be-assigned-to-a-issue',
    (ctx) =>
      withIssue(ctx, 2, () =>
        assignable(ctx.state, ctx.params[3]!) ? { status: 204, body: '' } : notFound(),
      ),
  );
  r.add('GET', '/repos/{owner}/{repo}/assignees', 'issues/assignees#list-assignees', (ctx) =>
    withRepo(ctx, (repo) =>
      pagedList(
        ctx,
        // The world's users, not the repository's: a new user moves the list, not `repo.version`.
        Math.max(repo.version, ctx.state.usersVersion),
        () => assignableUsers(ctx.state),
        (user) => userObject(ctx.state, user),
      ),
    ),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/assignees/{assignee}',
    'issues/assignees#check-if-a-user-can-be-assigned',
    (ctx) =>
      withRepo(ctx, () => (assignable(ctx.state, ctx.params[2]!) ? { status: 204, body: '' } : notFound())),
  );

  addReactionRoutes(r);

  // One comment by id: read, edited (a bot's status comment kept up to date), deleted.
  const comment = '/repos/{owner}/{repo}/issues/comments/{comment_id}';
  r.add('GET', comment, 'issues/comments#get-an-issue-comment', (ctx) =>
    withComment(ctx, ({ issue, comment: c }) => ({
      status: 200,
      body: JSON.stringify(issueCommentObject(ctx.state, issue, c)),
      version: issue.commentsVersion,
    })),
  );
  r.add('PATCH', comment, 'issues/comments#update-an-issue-comment', (ctx) =>
    withComment(ctx, ({ issue, comment: c }) => {
      const body = bodyField(ctx, 'body');
      if (typeof body !== 'string')
        return validation('IssueComment', 'body', body === undefined ? 'missing_field' : 'invalid');
      return mutate(() => {
        checkCommentBody(body);
        ctx.state.editIssueComment(issue, c, body, actor(ctx));
        return { status: 200, body: JSON.stringify(issueCommentObject(ctx.state, issue, c)) };
      }, 'IssueComment');
    }),
  );
  r.add('DELETE', comment, 'issues/comments#delete-an-issue-comment', (ctx) =>
    withComment(ctx, ({ issue, comment: c }) => {
      ctx.state.deleteIssueComment(issue, c, actor(ctx));
      return { status: 204, body: '' };
    }),
  );

  const repoLabels = '/repos/{owner}/{repo}/labels';
  r.add('GET', repoLabels, 'issues/labels#list-labels-for-a-repository', (ctx) =>
    withRepo(ctx, (repo) =>
      pagedList(
        ctx,
        repo.labelsVersion,
        () => [...repo.labels.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
        (label) => labelObject(ctx.state, repo, label),
      ),
    ),
  );
  r.add('POST', repoLabels, 'issues/labels#create-a-label', (ctx) =>
    withRepo(ctx, (repo) =>
      withLabelFields(ctx, 'name', (fields) => {
        if (fields.name === undefined) return validation('Label', 'name');
        const label = ctx.state.createLabel(repo, { ...fields, name: fields.name });
        const body = labelObject(ctx.state, repo, label);
        return { status: 201, body: JSON.stringify(body), location: String(body.url) };
      }),
    ),
  );
  r.add('GET', `${repoLabels}/{name}`, 'issues/labels#get-a-label', (ctx) =>
    withLabel(ctx, (repo, label) => ({
      status: 200,
      body: JSON.stringify(labelObject(ctx.state, repo, label)),
      version: repo.labelsVersion,
    })),
  );
  r.add('PATCH', `${repoLabels}/{name}`, 'issues/labels#update-a-label', (ctx) =>
    withLabel(ctx, (repo, label) =>
      withLabelFields(ctx, 'new_name', (fields) => {
        ctx.state.updateLabel(repo, label, fields);
        return { status: 200, body: JSON.stringify(labelObject(ctx.state, repo, label)) };
      }),
    ),
  );
  r.add('DELETE', `${repoLabels}/{name}`, 'issues/labels#delete-a-label', (ctx) =>
    withLabel(ctx, (repo, label) => {
      ctx.state.deleteLabel(repo, label);
      return { status: 204, body: '' };
    }),
  );

  r.add(
    'GET',
    '/repos/{owner}/{repo}/issues/{issue_number}/events',
    'issues/events#list-issue-events',
    (ctx) =>
      withIssue(ctx, 2, (issue) =>
        pagedList(
          ctx,
          issue.version,
          () => listedEvents(issue),
          (e) => issueEventObject(ctx.state, issue, e),
        ),
      ),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/issues/{issue_number}/timeline',
    'issues/timeline#list-timeline-events-for-an-issue',
    (ctx) =>
      withIssue(ctx, 2, (issue) =>
        pagedList(
          ctx,
          issue.version,
          () => timelineEntries(ctx.state, issue),
          (entry) => entry.render(),
        ),
      ),
  );
}

/**
 * Reactions on an issue (or pull request) and on an issue comment: add (201, or 200 with the one
 * already there), list (paged, `content` to filter), delete (204). A bot marks the work it takes
 * with one (👀).
 */
function addReactionRoutes(r: RestRouter): void {
  const onIssue = '/repos/{owner}/{repo}/issues/{issue_number}/reactions';
  const onComment = '/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions';
  const subjects = [
    {
      path: onIssue,
      what: 'issue',
      find: (ctx: RestContext, fn: Reacted) => withIssue(ctx, 2, (issue) => fn({ issue })),
    },
    {
      path: onComment,
      what: 'issue-comment',
      find: (ctx: RestContext, fn: Reacted) => withComment(ctx, fn),
    },
  ] as const;
  for (const { path, what, find } of subjects) {
    r.add(
      'POST',
      path,
      `reactions/reactions#create-reaction-for-an-${what}`,
      (ctx) =>
        find(ctx, (on) => {
          const content = bodyField(ctx, 'content');
          if (!isReactionContent(content))
            return validation('Reaction', 'content', content === undefined ? 'missing_field' : 'invalid');
          const made = ctx.state.react(on, actor(ctx), content);
          return {
            status: made.created ? 201 : 200,
            body: JSON.stringify(reactionObject(ctx.state, made.reaction)),
          };
        }),
      { contentCreating: true },
    );
    r.add('GET', path, `reactions/reactions#list-reactions-for-an-${what}`, (ctx) =>
      find(ctx, (on) => {
        const content = ctx.query.get('content');
        if (content !== undefined && !isReactionContent(content))
          return validation('Reaction', 'content', 'invalid');
        return pagedList(
          ctx,
          on.issue.commentsVersion,
          () =>
            ctx.state.reactions
              .of(on.comment ?? on.issue)
              .filter((x) => content === undefined || x.content === content),
          (reaction) => reactionObject(ctx.state, reaction),
        );
      }),
    );
    r.add('DELETE', `${path}/{reaction_id}`, `reactions/reactions#delete-an-${what}-reaction`, (ctx) =>
      find(ctx, (on) =>
        mutate(() => {
          ctx.state.unreact(on, numberParam(ctx.params[3]));
          return { status: 204, body: '' };
        }, 'Reaction'),
      ),
    );
  }
}

/** The issue comment the path's `{comment_id}` names, with its issue, else 404. */
function withComment(
  ctx: RestContext,
  fn: (found: { issue: Issue; comment: IssueComment }) => RestResult,
): RestResult {
  return withRepo(ctx, (repo) => {
    // Decimal digits only, as an issue's number: `Number()` took `0x1d`, `29.0` and ` 29` as 29.
    const found = ctx.state.findIssueComment(repo, numberParam(ctx.params[2]));
    return found === undefined ? notFound() : fn(found);
  });
}

/** What a reactions route acts on: an issue, or one of its comments. */
type Reacted = (on: { issue: Issue; comment?: IssueComment }) => RestResult;

/**
 * Who may be assigned: the world's users (not organizations or bots), as `PATCH` and `POST` issues
 * assign them (docs/github-emulator.md); a login is never made a user.
 */
function assignable(state: GitHubState, login: string): User | undefined {
  const user = state.findUser(login);
  return user?.type === 'User' ? user : undefined;
}

/**
 * GitHub's refusal of `assignees` naming logins it cannot assign (422 `invalid`, the logins as
 * `value`; nothing is written), for `POST …/assignees`, `POST` and `PATCH` issues alike.
 */
export function unassignable(
  ctx: RestContext,
  logins: readonly string[] | undefined,
): RestResult | undefined {
  const invalid = logins?.filter((login) => assignable(ctx.state, login) === undefined) ?? [];
  if (invalid.length === 0) return undefined;
  return fail(422, 'Validation Failed', {
    errors: [{ value: invalid, resource: 'Issue', field: 'assignees', code: 'invalid' }],
  });
}

/** The sorted list of each world's assignable users, kept until a user is made (`usersVersion`). */
const sortedAssignable = new WeakMap<GitHubState, { version: number; users: User[] }>();

/**
 * The world's users by login, sorted once per change of its users: a page of `GET …/assignees`
 * is then a slice, not a sort of every user (100,000 users took about 100 ms a page).
 */
function assignableUsers(state: GitHubState): User[] {
  const kept = sortedAssignable.get(state);
  if (kept !== undefined && kept.version === state.usersVersion) return kept.users;
  const users = [...state.users.values()]
    .filter((u) => u.type === 'User')
    .map((u) => ({ u, key: u.login.toLowerCase() }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ u }) => u);
  sortedAssignable.set(state, { version: state.usersVersion, users });
  return users;
}

/**
 * The users of an assignees write (`{assignees: [logins]}`; none given changes nothing), or
 * GitHub's 422 `invalid` naming the logins that cannot be assigned, nothing written.
 */
function withAssigneeLogins(ctx: RestContext, fn: (users: User[]) => RestResult): RestResult {
  const given = bodyField(ctx, 'assignees') ?? [];
  if (!Array.isArray(given) || given.some((l) => typeof l !== 'string'))
    return validation('Issue', 'assignees', 'invalid');
  const logins = given as string[];
  const refused = unassignable(ctx, logins);
  if (refused) return refused;
  return mutate(() => fn(logins.map((login) => assignable(ctx.state, login)!)), 'Issue');
}

/** The label names of a labels write: `{labels: [...]}` or a bare array, as GitHub takes both. */
function withLabelNames(ctx: RestContext, fn: (names: string[]) => RestResult): RestResult {
  const given = Array.isArray(ctx.body) ? ctx.body : bodyField(ctx, 'labels');
  if (!Array.isArray(given)) return validation('Label', 'labels');
  const names = given.flatMap((l: unknown) =>
    typeof l === 'string'
      ? [l]
      : typeof (l as { name?: unknown })?.name === 'string'
        ? [(l as { name: string }).name]
        : [],
  );
  return mutate(() => fn(names), 'Label');
}

type LabelFields = Partial<LabelInput>;

/** The repository's label the path names (in any case), else 404. */
function withLabel(ctx: RestContext, fn: (repo: Repo, label: Label) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const label = ctx.state.labelTable.find(repo, ctx.params[2]!);
    return label === undefined ? notFound() : fn(repo, label);
  });
}

/**
 * The fields of a label write: its name (`name` to create, `new_name` to rename), `color`,
 * `description`, each a string when given (else 422 `invalid` naming it); the state's refusals
 * (`already_exists`, a bad color, a long name or description) as GitHub words them.
 */
function withLabelFields(
  ctx: RestContext,
  nameField: 'name' | 'new_name',
  fn: (fields: LabelFields) => RestResult,
): RestResult {
  // No body at all changes nothing; a body that is not an object is refused.
  if (
    ctx.body !== undefined &&
    (ctx.body === null || typeof ctx.body !== 'object' || Array.isArray(ctx.body))
  )
    return validation('Label', nameField, 'invalid');
  const fields: LabelFields = {};
  const name = bodyField(ctx, nameField);
  const color = bodyField(ctx, 'color');
  const description = bodyField(ctx, 'description');
  if (name !== undefined && typeof name !== 'string') return validation('Label', nameField, 'invalid');
  if (color !== undefined && typeof color !== 'string') return validation('Label', 'color', 'invalid');
  if (description !== undefined && description !== null && typeof description !== 'string')
    return validation('Label', 'description', 'invalid');
  if (name !== undefined) fields.name = name;
  if (color !== undefined) fields.color = color;
  if (description !== undefined) fields.description = description;
  return mutate(() => fn(fields), 'Label');
}

function labelList(ctx: RestContext, issue: Issue): RestResult {
  return { status: 200, body: JSON.stringify(labelsJson(ctx.state, issue.repo, issue)) };
}
