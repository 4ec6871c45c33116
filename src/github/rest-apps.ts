/**
 * The REST routes of GitHub Apps (docs/github-emulator.md, "Apps"): the App itself and its
 * installations (a JWT's routes), an installation token's mint and revocation, and the
 * repositories an installation token reaches. Which credential may call which route is decided
 * before the handler runs (`appGate`), as GitHub refuses a wrong credential before anything else.
 */
import { type AppRegistry, appsOf, type GitHubApp, type Installation } from './apps.ts';
import type { TokenInfo } from './auth.ts';
import {
  bodyField,
  fail,
  notFound,
  numberParam,
  paginate,
  type RestContext,
  type RestResult,
  type RestRouter,
} from './rest-kit.ts';
import { repoObject, userObject } from './shapes.ts';
import type { GitHubState } from './state.ts';

/** Routes a JWT may call; every other route answers a JWT 401 `Bad credentials`. */
export const JWT_ROUTES: ReadonlySet<string> = new Set([
  'GET /app',
  'GET /app/installations',
  'GET /app/installations/{installation_id}',
  'POST /app/installations/{installation_id}/access_tokens',
  'GET /repos/{owner}/{repo}/installation',
  'GET /orgs/{org}/installation',
  'GET /users/{username}/installation',
]);

/** Routes only an installation token may call. */
const INSTALLATION_ROUTES: ReadonlySet<string> = new Set([
  'GET /installation/repositories',
  'DELETE /installation/token',
]);

/**
 * GitHub's refusal of a credential on a route, or undefined when it may go on: a JWT off the
 * App's routes, another credential on them, an installation token on a repository it does not
 * reach (404, as for a repository that does not exist).
 */
export function appGate(
  endpoint: string,
  repo: string | undefined,
  token: TokenInfo | undefined,
  apps: AppRegistry,
): { status: number; message: string } | undefined {
  const grant = token?.app;
  if (JWT_ROUTES.has(endpoint)) {
    return grant?.jwt === true
      ? undefined
      : { status: 401, message: 'A JSON web token could not be decoded' };
  }
  if (grant === undefined) {
    return INSTALLATION_ROUTES.has(endpoint) ? { status: 401, message: 'Bad credentials' } : undefined;
  }
  if (grant.jwt) return { status: 401, message: 'Bad credentials' };
  // An installation is no user: `/user` and `/user/…` are a user's (actions/create-github-app-token#258).
  if (endpoint.startsWith('GET /user') && (endpoint.length === 9 || endpoint.charCodeAt(9) === 47))
    return { status: 403, message: 'Resource not accessible by integration' };
  if (repo !== undefined && !apps.reaches(grant, repo)) return { status: 404, message: 'Not Found' };
  return undefined;
}

function nodeId(prefix: string, id: number): string {
  return `${prefix}_${Buffer.from(`0:${id}`).toString('base64url')}`;
}

export function integrationObject(state: GitHubState, app: GitHubApp): Record<string, unknown> {
  return {
    id: app.id,
    slug: app.slug,
    node_id: nodeId('A', app.id),
    client_id: app.clientId,
    owner: userObject(state, app.owner),
    name: app.name,
    description: null,
    external_url: state.webUrl,
    html_url: `${state.webUrl}/apps/${app.slug}`,
    created_at: state.time.iso(app.createdAt),
    updated_at: state.time.iso(app.createdAt),
    permissions: app.permissions,
    events: app.events,
    installations_count: app.installations.length,
  };
}

export function installationObject(state: GitHubState, inst: Installation): Record<string, unknown> {
  const api = state.apiUrl;
  const org = inst.account.type === 'Organization';
  return {
    id: inst.id,
    account: userObject(state, inst.account),
    repository_selection: inst.selection,
    access_tokens_url: `${api}/app/installations/${inst.id}/access_tokens`,
    repositories_url: `${api}/installation/repositories`,
    html_url: org
      ? `${state.webUrl}/organizations/${inst.account.login}/settings/installations/${inst.id}`
      : `${state.webUrl}/settings/installations/${inst.id}`,
    app_id: inst.app.id,
    client_id: inst.app.clientId,
    app_slug: inst.app.slug,
    target_id: inst.account.id,
    target_type: org ? 'Organization' : 'User',
    permissions: inst.permissions,
    events: inst.app.events,
    created_at: state.time.iso(inst.createdAt),
    updated_at: state.time.iso(inst.createdAt),
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: null,
  };
}

/** The App of the JWT in hand (the gate let only a JWT through). */
function withApp(ctx: RestContext, fn: (apps: AppRegistry, app: GitHubApp) => RestResult): RestResult {
  const apps = appsOf(ctx.state);
  const app = ctx.token?.app === undefined ? undefined : apps?.byId(ctx.token.app.appId);
  return apps === undefined || app === undefined ? fail(401, 'Bad credentials') : fn(apps, app);
}

/** The installation of this App on `account` (a login, any case), else 404. */
function installationOn(ctx: RestContext, login: string | undefined): RestResult {
  return withApp(ctx, (_apps, app) => {
    const inst = app.installations.find((i) => i.account.login.toLowerCase() === login?.toLowerCase());
    return inst === undefined ? notFound() : json(installationObject(ctx.state, inst));
  });
}

const json = (value: unknown, status = 200): RestResult => ({ status, body: JSON.stringify(value) });

/** The installation token's narrowing: repositories by name or id, permissions no wider than granted. */
function narrowing(
  ctx: RestContext,
  apps: AppRegistry,
  inst: Installation,
): { repos?: Set<string>; permissions?: Record<string, string> } | RestResult {
  const reachable = apps.repositories(inst);
  const names = bodyField(ctx, 'repositories');
  const ids = bodyField(ctx, 'repository_ids');
  let repos: Set<string> | undefined;
  if (names !== undefined || ids !== undefined) {
    repos = new Set();
    const notAccessible = fail(
      422,
      'There is at least one repository that does not exist or is not accessible to the parent installation.',
    );
    if (names !== undefined) {
      if (!Array.isArray(names))
        return fail(422, 'Invalid request.', { errors: ['repositories is not an array'] });
      for (const name of names) {
        const repo = reachable.find(
          (r) => typeof name === 'string' && r.name.toLowerCase() === name.toLowerCase(),
        );
        if (repo === undefined) return notAccessible;
        repos.add(repo.fullName.toLowerCase());
      }
    }
    if (ids !== undefined) {
      if (!Array.isArray(ids))
        return fail(422, 'Invalid request.', { errors: ['repository_ids is not an array'] });
      for (const id of ids) {
        const repo = reachable.find((r) => r.id === id);
        if (repo === undefined) return notAccessible;
        repos.add(repo.fullName.toLowerCase());
      }
    }
  }
  const asked = bodyField(ctx, 'permissions');
  let permissions: Record<string, string> | undefined;
  if (asked !== undefined) {
    if (asked === null || typeof asked !== 'object' || Array.isArray(asked))
      return fail(422, 'Invalid request.', { errors: ['permissions is not an object'] });
    const rank: Record<string, number> = { read: 1, write: 2, admin: 3 };
    permissions = {};
    for (const [name, level] of Object.entries(asked as Record<string, unknown>)) {
      const granted = inst.permissions[name];
      if (typeof level !== 'string' || granted === undefined || (rank[level] ?? 9) > (rank[granted] ?? 0))
        return fail(422, 'The permissions requested are not granted to this installation.');
      permissions[name] = level;
    }
  }
  return { repos, permissions };
}

export function addAppRoutes(r: RestRouter): void {
  r.add('GET', '/app', 'apps/apps#get-the-authenticated-app', (ctx) =>
    withApp(ctx, (_apps, app) => json(integrationObject(ctx.state, app))),
  );
  r.add('GET', '/app/installations', 'apps/apps#list-installations-for-the-authenticated-app', (ctx) =>
    withApp(ctx, (_apps, app) => {
      const page = paginate(ctx, app.installations);
      return {
        status: 200,
        body: JSON.stringify(page.items.map((inst) => installationObject(ctx.state, inst))),
        page: page.page,
      };
    }),
  );
  r.add(
    'GET',
    '/app/installations/{installation_id}',
    'apps/apps#get-an-installation-for-the-authenticated-app',
    (ctx) =>
      withApp(ctx, (_apps, app) => {
        const inst = app.installations.find((i) => i.id === numberParam(ctx.params[0]));
        return inst === undefined ? notFound() : json(installationObject(ctx.state, inst));
      }),
  );
  r.add(
    'POST',
    '/app/installations/{installation_id}/access_tokens',
    'apps/apps#create-an-installation-access-token-for-an-app',
    (ctx) =>
      withApp(ctx, (apps, app) => {
        const inst = app.installations.find((i) => i.id === numberParam(ctx.params[0]));
        if (inst === undefined) return notFound();
        const narrow = narrowing(ctx, apps, inst);
        if ('status' in narrow) return narrow;
        const info = apps.mintInstallationToken(inst, narrow);
        const body: Record<string, unknown> = {
          token: info.token,
          expires_at: ctx.state.time.iso(info.expiresAt as number),
          permissions: info.app?.permissions ?? inst.permissions,
          repository_selection: narrow.repos === undefined ? inst.selection : 'selected',
        };
        // GitHub lists the repositories only when the token was narrowed to some.
        if (narrow.repos !== undefined)
          body.repositories = apps
            .repositories(inst)
            .filter((repo) => narrow.repos?.has(repo.fullName.toLowerCase()))
            .map((repo) => repoObject(ctx.state, repo));
        return json(body, 201);
      }),
  );
  r.add(
    'GET',
    '/repos/{owner}/{repo}/installation',
    'apps/apps#get-a-repository-installation-for-the-authenticated-app',
    (ctx) =>
      withApp(ctx, (apps, app) => {
        const repo = ctx.state.findRepo(ctx.params[0]!, ctx.params[1]!);
        const inst =
          repo === undefined ? undefined : app.installations.find((i) => apps.repositories(i).includes(repo));
        return inst === undefined ? notFound() : json(installationObject(ctx.state, inst));
      }),
  );
  r.add(
    'GET',
    '/orgs/{org}/installation',
    'apps/apps#get-an-organization-installation-for-the-authenticated-app',
    (ctx) => installationOn(ctx, ctx.params[0]),
  );
  r.add(
    'GET',
    '/users/{username}/installation',
    'apps/apps#get-a-user-installation-for-the-authenticated-app',
    (ctx) => installationOn(ctx, ctx.params[0]),
  );
  r.add(
    'GET',
    '/installation/repositories',
    'apps/installations#list-repositories-accessible-to-the-app-installation',
    (ctx) => {
      const apps = appsOf(ctx.state);
      const grant = ctx.token?.app;
      const inst = grant?.installationId === undefined ? undefined : apps?.installation(grant.installationId);
      if (apps === undefined || grant === undefined || inst === undefined)
        return fail(401, 'Bad credentials');
      const repos = apps.repositories(inst).filter((repo) => apps.reaches(grant, repo.fullName));
      const page = paginate(ctx, repos);
      return {
        status: 200,
        body: JSON.stringify({
          total_count: repos.length,
          repositories: page.items.map((repo) => repoObject(ctx.state, repo)),
          repository_selection: grant.repos === undefined ? inst.selection : 'selected',
        }),
        page: page.page,
      };
    },
  );
  r.add('DELETE', '/installation/token', 'apps/installations#revoke-an-installation-access-token', (ctx) => {
    const token = ctx.token;
    if (token?.app === undefined || token.app.jwt) return fail(401, 'Bad credentials');
    appsOf(ctx.state)?.revoke(token.token);
    return { status: 204, body: '' };
  });
}
