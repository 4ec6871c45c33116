/**
 * A repository's collaborators: the list, "is this user a collaborator" (204 or 404) and a
 * user's permission, the routes a control plane gates on (only act on issues opened by someone
 * with write access). Roles come from the fixtures (world/access.ts): the owner is admin, direct
 * collaborators have their role, an organization's members its base role.
 */
import {
  notFound,
  pagedList,
  type RestContext,
  type RestResult,
  type RestRouter,
  withRepo,
} from './rest-kit.ts';
import { userObject } from './shapes.ts';
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
}
