/**
 * What every REST route is made of: the request context a handler gets and the result it gives,
 * the router (a segment trie: no regex per request) from method and path to a route with its
 * templated name, rate-limit resource, secondary-limit key and handler, GitHub's error bodies,
 * pagination, the cached and paged list answers, and the lookups of a path's repository, issue,
 * pull request or commit. Handlers are synchronous and return the body text plus the version its
 * ETag derives from; quota, ETags, Link headers and tracing are the emulator's job, so every route
 * gets them the same way. The routes themselves are in rest.ts and rest-git.ts.
 */
import { hash } from 'node:crypto';
import type { TokenInfo } from './auth.ts';
import type { Resource } from './config.ts';
import type { Identity, QuotaLedger } from './quota.ts';
import {
  type Commit,
  type GitHubState,
  GitHubStateError,
  type Issue,
  type PullRequest,
  type Repo,
  type User,
} from './state.ts';

export const DOCS = 'https://docs.github.com/rest';

/**
 * The hash an ETag is made from: of the representation, so an answer that did not change keeps
 * its ETag whatever else changed in the repository. SHA-256 (native, about 1 µs per KB here),
 * cut to 128 bits.
 */
export function contentHash(body: string): string {
  return hash('sha256', body, 'hex').slice(0, 32);
}

export interface RestContext {
  state: GitHubState;
  /** Path parameters in template order. */
  params: string[];
  query: ReadonlyMap<string, string>;
  /** The raw query string (cache keys). */
  qs: string;
  /** Parsed JSON body of a write (undefined when there was none). */
  body: unknown;
  /** The user the token acts as; undefined when unauthenticated. */
  user: User | undefined;
  /** The credential itself (an App's JWT or installation token: apps.ts). */
  token?: TokenInfo;
  /** Who is charged (for GET /rate_limit). */
  identity: Identity;
  ledger: QuotaLedger;
  /** What the Accept header asks for: JSON (the default), or a pull request's diff or patch. */
  format: MediaFormat;
  /**
   * Present on conditional requests: when the body of this version was hashed before and the
   * client's If-None-Match matches it, returns that content hash, so the handler can let the
   * emulator answer 304 without rendering a body nobody will read.
   */
  notModified?: (version: number) => string | undefined;
}

export interface RestResult {
  status: number;
  body: string;
  /**
   * Version of what the body shows (only for 200 GETs): a 200 with a version gets an ETag. The
   * ETag is the body's content hash (with the token); the version only lets a conditional
   * request skip rendering when nothing changed since the body was hashed.
   */
  version?: number;
  /** The body's content hash when the handler already has it (cached renders). */
  hash?: string;
  /** Pagination, for the Link header. */
  page?: { page: number; last: number };
  /** GitHub's message, for errors. */
  error?: string;
  /**
   * An error the emulator renders in GitHub's shape with the route's documentation_url and the
   * status (`fail()` sets it): the message is `error`, these are the extra fields.
   */
  problem?: Record<string, unknown>;
  /** Run time the resource last changed: sent as Last-Modified, compared with If-Modified-Since. */
  lastModified?: number;
  /** A body that is not JSON (a diff or a patch): its Content-Type and X-GitHub-Media-Type. */
  contentType?: string;
  mediaType?: string;
  /** What a 201 created: its URL, sent as `Location` (as GitHub does). */
  location?: string;
}

/** What a request's Accept header asks for (GitHub's media types). */
export type MediaFormat = 'json' | 'diff' | 'patch' | 'raw';

/** `application/vnd.github.diff`, `application/vnd.github.v3.patch`, …: the format asked for. */
export function mediaFormat(accept: string | undefined): MediaFormat {
  // Every Octokit request says `application/vnd.github.v3+json`: two substring scans, no regex.
  if (accept === undefined) return 'json';
  if (accept.indexOf('diff') >= 0 && /vnd\.github(?:\.v3)?\.diff/.test(accept)) return 'diff';
  if (accept.indexOf('patch') >= 0 && /vnd\.github(?:\.v3)?\.patch/.test(accept)) return 'patch';
  // A file's or blob's bytes (contents and Git data API): `vnd.github.raw`, `vnd.github.v3.raw`, `+json`.
  if (accept.indexOf('raw') >= 0 && /vnd\.github(?:\.v3)?\.raw/.test(accept)) return 'raw';
  return 'json';
}

export type RestHandler = (ctx: RestContext) => RestResult;

export interface RestRoute {
  method: string;
  /** Templated route for the trace: `/repos/{owner}/{repo}/pulls`. */
  template: string;
  /** `GET /repos/{owner}/{repo}/pulls`: the key of the per-endpoint secondary limit. */
  endpoint: string;
  resource: Resource;
  /** Not charged against the primary limit (GET /rate_limit). */
  free: boolean;
  /** Counts toward the content-creation secondary limits. */
  contentCreating: boolean;
  /** Secondary-limit points: 1 for GET/HEAD/OPTIONS, 5 for writes. */
  points: number;
  /** Index of the {owner} and {repo} params, for the trace's `repo`. */
  repoParams?: [number, number];
  /** The path parameters' names in order (`pull_number`, `ref`, ...), for content attribution. */
  paramNames: string[];
  /** GitHub's documentation of the operation: the documentation_url of its error answers. */
  docs: string;
  handler: RestHandler;
}

interface TrieNode {
  literal: Map<string, TrieNode>;
  param?: TrieNode;
  /** A `{name+}` parameter: the rest of the path, slashes included (a Git ref). */
  rest?: TrieNode;
  routes: Map<string, RestRoute>;
}

const node = (): TrieNode => ({ literal: new Map(), routes: new Map() });

/** GitHub's error body: the message, any extra fields, the operation's documentation, the status. */
export function errorBody(
  message: string,
  extra: Record<string, unknown> = {},
  docs = DOCS,
  status?: number,
): string {
  return JSON.stringify({
    message,
    ...extra,
    documentation_url: docs,
    ...(status === undefined ? {} : { status: String(status) }),
  });
}

/** An error answer; the emulator renders it with the route's documentation_url. */
export function fail(status: number, message: string, extra: Record<string, unknown> = {}): RestResult {
  return { status, body: '', error: message, problem: extra };
}

export const notFound = (): RestResult => fail(404, 'Not Found');

/**
 * GitHub's schema check refusing a body field of the wrong type, in its words: `what` is `a
 * string`, `a boolean`, `one of ["open", "closed"]`, ….
 */
export function notOfType(field: string, value: unknown, what: string): RestResult {
  return fail(422, `Invalid request.\n\nFor 'properties/${field}', ${JSON.stringify(value)} is not ${what}.`);
}

export function validation(resource: string, field: string, code = 'missing_field'): RestResult {
  return fail(422, 'Validation Failed', { errors: [{ resource, code, field }] });
}

export class RestRouter {
  private readonly root = node();
  readonly routes: RestRoute[] = [];

  add(
    method: string,
    template: string,
    docs: string,
    handler: RestHandler,
    options: { free?: boolean; contentCreating?: boolean; resource?: Resource } = {},
  ): void {
    let at = this.root;
    const parts = template.split('/').filter(Boolean);
    const names: string[] = [];
    for (const part of parts) {
      if (part.endsWith('+}')) {
        names.push(part.replace('+', ''));
        at.rest ??= node();
        at = at.rest;
      } else if (part.startsWith('{')) {
        names.push(part);
        at.param ??= node();
        at = at.param;
      } else {
        let next = at.literal.get(part);
        if (!next) {
          next = node();
          at.literal.set(part, next);
        }
        at = next;
      }
    }
    const owner = names.indexOf('{owner}');
    const repo = names.indexOf('{repo}');
    const write = method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
    // GitHub's own template: `{ref+}` is written `{ref}` in the trace and the secondary-limit key.
    const name = template.replace('+}', '}');
    const route: RestRoute = {
      method,
      template: name,
      endpoint: `${method} ${name}`,
      resource: options.resource ?? 'core',
      free: options.free ?? false,
      contentCreating: options.contentCreating ?? false,
      points: write ? 5 : 1,
      repoParams: owner >= 0 && repo >= 0 ? [owner, repo] : undefined,
      paramNames: names.map((name) => name.slice(1, -1)),
      docs: `https://docs.github.com/rest/${docs}`,
      handler,
    };
    at.routes.set(method, route);
    if (method === 'GET') {
      at.routes.set('HEAD', { ...route, method: 'HEAD', endpoint: `HEAD ${name}` });
    }
    this.routes.push(route);
  }

  /**
   * Finds the route of a path (no query, no /api/v3 prefix). `params` receives the path
   * parameters. Returns undefined for an unknown path or method.
   */
  match(method: string, path: string, params: string[]): RestRoute | undefined {
    return this.matchFrom(this.root, 1, method, path, params);
  }

  private matchFrom(
    from: TrieNode,
    offset: number,
    method: string,
    path: string,
    params: string[],
  ): RestRoute | undefined {
    let at: TrieNode | undefined = from;
    let start = offset;
    const end = path.length;
    while (start <= end && at !== undefined) {
      let slash = path.indexOf('/', start);
      if (slash < 0) slash = end;
      if (slash > start) {
        const raw = path.slice(start, slash);
        const literal: TrieNode | undefined = at.literal.get(raw);
        if (literal !== undefined) at = literal;
        else if (at.rest !== undefined) {
          // A route that goes on past one segment where a `{name+}` one also starts
          // (`…/branches/{branch}/protection` beside `…/branches/{branch+}`) is tried first.
          if (at.param !== undefined) {
            const mark = params.length;
            params.push(raw.indexOf('%') >= 0 ? safeDecode(raw) : raw);
            const found = this.matchFrom(at.param, slash + 1, method, path, params);
            if (found !== undefined) return found;
            params.length = mark;
          }
          const tail = path.slice(start);
          params.push(tail.indexOf('%') >= 0 ? safeDecode(tail) : tail);
          at = at.rest;
          break;
        } else if (at.param !== undefined) {
          params.push(raw.indexOf('%') >= 0 ? safeDecode(raw) : raw);
          at = at.param;
        } else return undefined;
      }
      start = slash + 1;
    }
    const route = at?.routes.get(method);
    // `…/contents` (Octokit's path for the root, `path: ''`): a `{name+}` parameter that is empty.
    if (route === undefined && at?.rest !== undefined) {
      params.push('');
      return at.rest.routes.get(method);
    }
    return route;
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const EMPTY_QUERY: ReadonlyMap<string, string> = new Map();
/** Parsed query strings, reused: pollers send the same few over and over. */
const queryCache = new Map<string, ReadonlyMap<string, string>>();

/** `a=1&b=x%20y` → Map (shared and read-only). Repeated keys: the last wins. */
export function parseQuery(qs: string): ReadonlyMap<string, string> {
  if (qs === '') return EMPTY_QUERY;
  const hit = queryCache.get(qs);
  if (hit !== undefined) return hit;
  const out = new Map<string, string>();
  for (const pair of qs.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const k = eq < 0 ? pair : pair.slice(0, eq);
    let v = eq < 0 ? '' : pair.slice(eq + 1);
    if (v.indexOf('+') >= 0) v = v.replaceAll('+', ' ');
    out.set(k.indexOf('%') >= 0 ? safeDecode(k) : k, v.indexOf('%') >= 0 ? safeDecode(v) : v);
  }
  if (queryCache.size >= 10_000) queryCache.clear();
  queryCache.set(qs, out);
  return out;
}

export function intParam(query: ReadonlyMap<string, string>, name: string, fallback: number): number {
  const raw = query.get(name);
  if (raw === undefined) return fallback;
  const n = Number.parseInt(raw, 10);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** Which page of a list an answer is, and the last one (for the Link header). */
export interface PageNumbers {
  page: number;
  last: number;
}

/** A list answer's body and the page of the list it holds. */
export interface RenderedPage {
  body: string;
  page: PageNumbers;
}

/** One page of a list, GitHub's way: per_page 30 by default, at most 100. */
export function paginate<T>(ctx: RestContext, items: readonly T[]): { items: T[]; page: PageNumbers } {
  const perPage = Math.min(intParam(ctx.query, 'per_page', 30), 100);
  const page = intParam(ctx.query, 'page', 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  return { items: items.slice((page - 1) * perPage, page * perPage), page: { page, last } };
}

export function listOf(texts: string[]): string {
  return texts.length === 0 ? '[]' : `[${texts.join(',')}]`;
}

export function findRepo(ctx: RestContext): Repo | undefined {
  return ctx.state.findRepo(ctx.params[0]!, ctx.params[1]!);
}

export function numberParam(text: string | undefined): number {
  if (text === undefined || text.length > 9) return -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
  }
  return text.length === 0 ? -1 : Number(text);
}

/** Sorted by a key, ties broken by version (a global sequence): deterministic. */
export function sortBy<T extends { version: number }>(
  items: T[],
  key: (item: T) => number,
  desc: boolean,
): T[] {
  const sign = desc ? -1 : 1;
  return items.sort((a, b) => sign * (key(a) - key(b) || a.version - b.version));
}

export function cachedList<T>(repo: Repo, key: string, version: number, build: () => T[]): T[] {
  const hit = repo.listCache.get(key);
  if (hit !== undefined && hit.version === version) return hit.items as T[];
  const items = build();
  repo.listCache.set(key, { version, items });
  return items;
}

/**
 * What a handler returns when the client already has this version's body (its hash is known and
 * matches If-None-Match): no body, the emulator answers 304.
 */
export function unchanged(ctx: RestContext, version: number): RestResult | undefined {
  const hash = ctx.notModified?.(version);
  return hash === undefined ? undefined : { status: 200, body: '', version, hash };
}

/**
 * One page of a list GitHub wraps with its count (`{total_count, <field>: [...]}`: workflow runs,
 * jobs), at `version`.
 */
export function countedPage<T>(
  ctx: RestContext,
  field: string,
  items: readonly T[],
  toJson: (item: T) => object,
  version: number,
): RestResult {
  const page = paginate(ctx, items);
  return {
    status: 200,
    body: JSON.stringify({ total_count: items.length, [field]: page.items.map(toJson) }),
    version,
    page: page.page,
  };
}

/**
 * A repository-wide list of comments as GitHub lists them (`…/issues/comments`,
 * `…/pulls/comments`): those updated since `since` (ISO 8601; one that does not parse is
 * ignored), by `sort` (`updated`, else created: ids follow creation here), oldest first unless
 * `direction=desc`, ties by id.
 */
export function commentsListed<T>(
  ctx: RestContext,
  all: T[],
  of: (item: T) => { id: number; createdAt: number; updatedAt: number },
): T[] {
  const byUpdated = ctx.query.get('sort') === 'updated';
  const since = Date.parse(ctx.query.get('since') ?? '');
  const clock = ctx.state.time.clock;
  const out = Number.isNaN(since) ? all : all.filter((item) => clock.toWallMs(of(item).updatedAt) >= since);
  const key = (item: T) => (byUpdated ? of(item).updatedAt : of(item).createdAt);
  out.sort((a, b) => key(a) - key(b) || of(a).id - of(b).id);
  return ctx.query.get('direction') === 'desc' ? out.reverse() : out;
}

/**
 * A list that moves with `version`, paged and not cached: the unchanged answer when the client
 * has this version (the list is not even read), else one page of it as a JSON array.
 */
export function pagedList<T>(
  ctx: RestContext,
  version: number,
  items: () => readonly T[],
  toJson: (item: T) => object,
): RestResult {
  const hit = unchanged(ctx, version);
  if (hit) return hit;
  const page = paginate(ctx, items());
  return { status: 200, body: JSON.stringify(page.items.map(toJson)), version, page: page.page };
}

/**
 * A list answer rendered and hashed once per (route, query, version): pollers repeat the same
 * request, and handing back the same string object also spares re-encoding it downstream. A
 * conditional request for an unchanged version gets the cached hash without a render.
 */
export function cachedBody(
  ctx: RestContext,
  repo: Repo,
  key: string,
  version: number,
  render: () => RenderedPage,
): RestResult {
  const epoch = ctx.state.urlEpoch;
  const hit = repo.bodyCache.get(key);
  if (hit !== undefined && hit.version === version && hit.epoch === epoch) {
    const r = hit.result;
    return { status: 200, body: r.body, version, hash: r.hash, page: r.page };
  }
  const rendered = render();
  const result = { body: rendered.body, hash: contentHash(rendered.body), page: rendered.page };
  if (repo.bodyCache.size >= 1_000) repo.bodyCache.clear();
  repo.bodyCache.set(key, { version, epoch, result });
  return { status: 200, body: result.body, version, hash: result.hash, page: result.page };
}

/**
 * A repository's list endpoint (`/repos/{owner}/{repo}/<name>`): 404 without the repository,
 * else its rendered page, cached per query string until the list's version moves.
 */
export function repoList(
  ctx: RestContext,
  name: string,
  version: (repo: Repo) => number,
  render: (ctx: RestContext, repo: Repo) => RenderedPage,
): RestResult {
  return withRepo(ctx, (repo) =>
    cachedBody(ctx, repo, `${name}?${ctx.qs}`, version(repo), () => render(ctx, repo)),
  );
}

export function withRepo(ctx: RestContext, fn: (repo: Repo) => RestResult): RestResult {
  const repo = findRepo(ctx);
  return repo ? fn(repo) : notFound();
}

/** The commit `{ref}` names in the repository; GitHub answers 422, not 404, when there is none. */
export function withCommit(ctx: RestContext, fn: (repo: Repo, commit: Commit) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const commit = ctx.state.refs.commit(repo, ctx.params[2]!);
    return commit ? fn(repo, commit) : fail(422, `No commit found for SHA: ${ctx.params[2]}`);
  });
}

export function withIssue(ctx: RestContext, index: number, fn: (issue: Issue) => RestResult): RestResult {
  const repo = findRepo(ctx);
  const issue = repo?.issues.get(numberParam(ctx.params[index]));
  return issue ? fn(issue) : notFound();
}

export function withPull(ctx: RestContext, fn: (pull: PullRequest) => RestResult): RestResult {
  const repo = findRepo(ctx);
  const pull = repo?.pulls.get(numberParam(ctx.params[2]));
  return pull ? fn(pull) : notFound();
}

export function bodyField(ctx: RestContext, field: string): unknown {
  const body = ctx.body;
  return body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
}

export function str(ctx: RestContext, field: string): string | undefined {
  const v = bodyField(ctx, field);
  return typeof v === 'string' ? v : undefined;
}

export function actor(ctx: RestContext): User {
  return ctx.user ?? ctx.state.defaultUser;
}

/** Runs a state mutation, turning its refusal into GitHub's answer. */
/**
 * A change whose refusals GitHub words as a plain message (`{message}`, 422 or 404), not as a
 * `Validation Failed` list: refs, contents, tags, a branch's update.
 */
export function plainly(fn: () => RestResult): RestResult {
  try {
    return fn();
  } catch (error) {
    if (error instanceof GitHubStateError) return fail(error.status, error.message);
    throw error;
  }
}

export function mutate(fn: () => RestResult, resource: string): RestResult {
  try {
    return fn();
  } catch (error) {
    if (error instanceof GitHubStateError) {
      if (error.status === 422) {
        const field = error.field === undefined ? {} : { field: error.field };
        return fail(422, 'Validation Failed', {
          errors: [
            error.code === undefined
              ? { resource, code: 'custom', ...field, message: error.message }
              : { resource, code: error.code, ...field },
          ],
        });
      }
      return fail(error.status, error.status === 404 ? 'Not Found' : error.message);
    }
    throw error;
  }
}

/** A string array field of a JSON body (other entries dropped); undefined when absent. */
export function strings(ctx: RestContext, field: string): string[] | undefined {
  const value = bodyField(ctx, field);
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined;
}
