/**
 * A repository's collaborators: the list, "is this user a collaborator" (204 or 404) and a
 * user's permission, the routes a control plane gates on (only act on issues opened by someone
 * with write access); and a pull request's review requests, which only collaborators can get (a
 * control plane asks a human, or a reviewing bot, to look at its agent's pull request). Roles
 * come from the fixtures (world/access.ts): the owner is admin, direct collaborators have their
 * role, an organization's members its base role.
 */
import {
  actor,
  bodyField,
  fail,
  mutate,
  notFound,
  pagedList,
  type RestContext,
  type RestResult,
  type RestRouter,
  validation,
  withPull,
  withRepo,
} from './rest-kit.ts';
import { pullSimpleJson, userObject } from './shapes.ts';
import type { GitHubState, Repo, RoleName, User } from './state.ts';
import { basePermission, permissionFlags, roleOf } from './world/access.ts';

/** A collaborator as GitHub lists one: the user, its `permissions` flags and `role_name`. */
function collaboratorObject(state: GitHubState, user: User, role: RoleName | null): Record<string, unknown> {
  return { ...userObject(state, user), permissions: permissionFlags(role), role_name: role ?? 'none' };
}

/** Everyone with a role on the repository, by login: its owner, direct collaborators, organization members. */
function collaborators(repo: Repo, affiliation: string | undefined): User[] {
  const users = new Set<User>(repo.collaborators.keys());
  if (affiliation !== 'outside') {
    if (repo.owner.type !== 'Organization') users.add(repo.owner);
    if (affiliation !== 'direct') for (const member of repo.owner.members ?? []) users.add(member);
  } else for (const member of repo.owner.members ?? []) users.delete(member);
  return [...users].sort((a, b) => (a.login.toLowerCase() < b.login.toLowerCase() ? -1 : 1));
}

/** The repository and the user the path names (any case), else 404. */
function withUser(ctx: RestContext, fn: (repo: Repo, user: User) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const user = ctx.state.findUser(ctx.params[2]!);
    return user === undefined ? notFound() : fn(repo, user);
  });
}

export function addCollaboratorRoutes(r: RestRouter): void {
  const base = '/repos/{owner}/{repo}/collaborators';
  r.add('GET', base, 'collaborators/collaborators#list-repository-collaborators', (ctx) =>
    withRepo(ctx, (repo) => {
      // `permission=push` keeps those whose flags include it (an unknown one keeps none).
      const wanted = ctx.query.get('permission');
      return pagedList(
        ctx,
        repo.version,
        () =>
          collaborators(repo, ctx.query.get('affiliation')).filter(
            (u) => wanted === undefined || permissionFlags(roleOf(u, repo))[wanted] === true,
          ),
        (user) => collaboratorObject(ctx.state, user, roleOf(user, repo)),
      );
    }),
  );
  r.add(
    'GET',
    `${base}/{username}`,
    'collaborators/collaborators#check-if-a-user-is-a-repository-collaborator',
    (ctx) =>
      withUser(ctx, (repo, user) => (roleOf(user, repo) === null ? notFound() : { status: 204, body: '' })),
  );
  r.add(
    'GET',
    `${base}/{username}/permission`,
    'collaborators/collaborators#get-repository-permissions-for-a-user',
    (ctx) =>
      withUser(ctx, (repo, user) => {
        // Anyone may read a public repository: GitHub answers `read` for a user with no grant there.
        const role = roleOf(user, repo) ?? (repo.private ? null : 'read');
        return {
          status: 200,
          body: JSON.stringify({
            permission: basePermission(role),
            role_name: role ?? 'none',
            user: collaboratorObject(ctx.state, user, role),
          }),
          version: repo.version,
        };
      }),
  );

  const requested = '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers';
  r.add('GET', requested, 'pulls/review-requests#get-all-requested-reviewers-for-a-pull-request', (ctx) =>
    withPull(ctx, (pull) => ({
      status: 200,
      body: JSON.stringify({
        users: (pull.requestedReviewers ?? []).map((u) => userObject(ctx.state, u)),
        teams: [],
      }),
      // An ETag, as on every GET: a request or a review that takes one off moves reviewsVersion.
      version: pull.reviewsVersion,
    })),
  );
  r.add('POST', requested, 'pulls/review-requests#request-reviewers-for-a-pull-request', (ctx) =>
    withPull(ctx, (pull) =>
      withReviewers(ctx, pull.issue.repo, true, (users) => {
        ctx.state.requestReviewers(pull, users, actor(ctx));
        return { status: 201, body: pullSimpleJson(ctx.state, pull) };
      }),
    ),
  );
  r.add('DELETE', requested, 'pulls/review-requests#remove-requested-reviewers-from-a-pull-request', (ctx) =>
    withPull(ctx, (pull) =>
      withReviewers(ctx, pull.issue.repo, false, (users) => {
        ctx.state.removeRequestedReviewers(pull, users, actor(ctx));
        return { status: 200, body: pullSimpleJson(ctx.state, pull) };
      }),
    ),
  );
}

/**
 * The users of a review request (`reviewers`, logins; `team_reviewers`, which the emulator has no
 * teams for): GitHub's 422s for neither given, a login that is not a collaborator of the
 * repository, or any team; nothing written then.
 */
function withReviewers(
  ctx: RestContext,
  repo: Repo,
  adding: boolean,
  fn: (users: User[]) => RestResult,
): RestResult {
  const reviewers = bodyField(ctx, 'reviewers');
  const teams = bodyField(ctx, 'team_reviewers');
  const list = (v: unknown) =>
    Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
  if (reviewers !== undefined && list(reviewers) === undefined)
    return validation('PullRequest', 'reviewers', 'invalid');
  if (teams !== undefined && list(teams) === undefined)
    return validation('PullRequest', 'team_reviewers', 'invalid');
  const logins = list(reviewers) ?? [];
  if (reviewers === undefined && (adding ? teams === undefined : true))
    return validation('PullRequest', 'reviewers');
  const users = logins.map((login) => ctx.state.findUser(login));
  if (
    users.some((u) => u === undefined || roleOf(u, repo) === null) ||
    (adding && (list(teams) ?? []).length > 0)
  )
    return fail(
      422,
      `Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the ${repo.fullName} repository.`,
    );
  return mutate(() => fn(users as User[]), 'PullRequest');
}
