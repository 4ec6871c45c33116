/**
 * git's smart HTTP protocol on the emulator's server, as github.com serves it: `git clone`,
 * `fetch` and `push` of `http(s)://HOST/OWNER/REPO` or `…/REPO.git`, whatever the host is called
 * (127.0.0.1, or github.com behind a TLS front). The three requests git makes:
 *
 *   GET  /OWNER/REPO(.git)/info/refs?service=git-upload-pack|git-receive-pack   (the refs)
 *   POST /OWNER/REPO(.git)/git-upload-pack                                      (a fetch)
 *   POST /OWNER/REPO(.git)/git-receive-pack                                     (a push)
 *
 * each answered by `git http-backend` (backend.ts) on the world's repository (repos.ts). As on
 * GitHub: a fetch of a public repository needs no token, a push takes one as the password of
 * HTTP basic auth (any user name; `x-access-token` too) or as the user name alone, and none of it
 * counts against the REST or GraphQL rate limits. Each request is one `github.git` span in the
 * trace (docs/trace-format.md), attributed by its token as REST calls are.
 */
import type { TokenInfo } from '../auth.ts';
import type { GitHubEmulator } from '../emulator.ts';
import { ATTRIBUTION_HEADERS } from '../types.ts';
import type { Repo } from '../world/objects.ts';
import { GitHubStateError } from '../world/objects.ts';
import {
  answerText,
  BackendGate,
  type BackendResult,
  type GitRequest,
  type GitResponse,
  runBackend,
} from './backend.ts';
import { type BranchUpdate, GitRepositories } from './repos.ts';

/** How long close() waits for git requests still in flight (docs/limits.md). */
const GIT_CLOSE_GRACE_MS = 3_000;

type GitService = 'git-upload-pack' | 'git-receive-pack';

/** What a git request names: the repository, the service, whether it is the refs or the exchange. */
export interface GitRoute {
  owner: string;
  name: string;
  service: GitService;
  /** `info/refs` (the refs advertised) or the service's own POST. */
  request: 'info/refs' | 'rpc';
}

const GIT_PATH = /^\/([^/]+)\/([^/]+)\/(info\/refs|git-upload-pack|git-receive-pack)$/;

/** Whether a request's path is one of git's (anything else goes to the REST and GraphQL routes). */
export function isGitPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  return (
    path.endsWith('/info/refs') || path.endsWith('/git-upload-pack') || path.endsWith('/git-receive-pack')
  );
}

/** The route of a git request; undefined for a path or method git's smart protocol never sends. */
export function gitRoute(method: string, url: string): GitRoute | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const match = GIT_PATH.exec(path);
  if (match === null) return undefined;
  let owner: string;
  let name: string;
  try {
    owner = decodeURIComponent(match[1]!);
    name = decodeURIComponent(match[2]!);
  } catch {
    return undefined;
  }
  const tail = match[3]!;
  if (tail === 'info/refs') {
    if (method !== 'GET' && method !== 'HEAD') return undefined;
    const service = new URLSearchParams(q < 0 ? '' : url.slice(q + 1)).get('service');
    if (service !== 'git-upload-pack' && service !== 'git-receive-pack') return undefined;
    return { owner, name, service, request: 'info/refs' };
  }
  if (method !== 'POST') return undefined;
  return { owner, name, service: tail as GitService, request: 'rpc' };
}

/**
 * The token of a git request's `Authorization`: basic auth's password (any user name), or its user
 * name when the password is empty or `x-oauth-basic` (`https://TOKEN@github.com/…`); a bearer token.
 */
export function gitTokenText(header: string | undefined): string[] {
  if (header === undefined) return [];
  const space = header.indexOf(' ');
  if (space < 0) return [];
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (scheme === 'bearer' || scheme === 'token') return [value];
  if (scheme !== 'basic') return [];
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return [decoded];
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  return [password, user].filter((text) => text !== '' && text !== 'x-oauth-basic');
}

const ROUTES = {
  'info/refs': '/{owner}/{repo}/info/refs',
  rpc: {
    'git-upload-pack': '/{owner}/{repo}/git-upload-pack',
    'git-receive-pack': '/{owner}/{repo}/git-receive-pack',
  },
} as const;

const AUTH_CHALLENGE = { 'www-authenticate': 'Basic realm="GitHub"' };

export interface GitSmartHttpOptions {
  /** Where the bare repositories go (kept); a private temporary directory (removed at close) when absent. */
  dir?: string;
}

export class GitSmartHttp {
  readonly repositories: GitRepositories;
  private readonly gate = new BackendGate();
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly emulator: GitHubEmulator,
    options: GitSmartHttpOptions = {},
  ) {
    this.repositories = new GitRepositories(emulator.state, options.dir);
  }

  /** Answers a git request (a path `isGitPath` took); never throws. */
  handle(req: GitRequest, res: GitResponse): void {
    const work = this.serve(req, res).catch((error: unknown) => {
      process.stderr.write(`github emulator (git): ${(error as Error)?.stack ?? String(error)}\n`);
      answerText(res, 500, 'internal error\n');
    });
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  /** Stops every running git process, waits for their requests to be recorded, removes a temporary root. */
  async close(): Promise<void> {
    this.closing.abort();
    // A request whose client is gone without a word (a world's sandbox ended mid-push) may never
    // finish reading its body: it gets a few seconds, not the rest of the process's life.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, GIT_CLOSE_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    this.repositories.close();
  }

  private async serve(req: GitRequest, res: GitResponse): Promise<void> {
    const t0 = this.emulator.clock.now();
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const route = gitRoute(method, url);
    const record = (
      result: BackendResult,
      extra: { repo?: Repo; token?: TokenInfo; updates?: BranchUpdate[] },
    ) => this.record(req, t0, method, route, result, extra);
    if (route === undefined) {
      // Dumb HTTP (info/refs without a service, objects/…) is not served, nor any other method.
      answerText(res, 404, 'Not Found: fleetbench serves git over its smart HTTP protocol only\n');
      return record(
        { status: 404, bytesIn: 0, bytesOut: 0, outcome: 'error', error: 'not a smart HTTP request' },
        {},
      );
    }
    const repo =
      this.emulator.state.findRepo(route.owner, route.name) ??
      (route.name.endsWith('.git')
        ? this.emulator.state.findRepo(route.owner, route.name.slice(0, -4))
        : undefined);
    const tokens = gitTokenText(header(req, 'authorization'));
    const token = tokens.map((text) => this.emulator.tokenOf(text)).find((t) => t !== undefined);
    const refuse = (status: number, text: string, headers: Record<string, string> = {}) => {
      req.resume();
      answerText(res, status, text, headers);
      record({ status, bytesIn: 0, bytesOut: 0, outcome: 'error', error: text.trim() }, { repo, token });
    };
    const push = route.service === 'git-receive-pack';
    if (repo === undefined) return refuse(404, 'Repository not found.\n');
    // A push, or any request for a private repository, needs a token git then sends once asked.
    if ((push || repo.private) && token === undefined)
      return refuse(
        401,
        tokens.length === 0
          ? 'Authentication required: a token as the password (https://x-access-token:TOKEN@HOST/OWNER/REPO).\n'
          : 'Invalid username or token. Password authentication is not supported for Git operations.\n',
        AUTH_CHALLENGE,
      );
    // A GitHub App's credential pushes to its installation's repositories only (docs/github-emulator.md,
    // "Apps"), refused in GitHub's words for a push without access.
    const grant = token?.app;
    if (push && grant !== undefined && (grant.jwt || !this.emulator.apps.reaches(grant, repo.fullName)))
      return refuse(403, `Permission to ${repo.fullName}.git denied to ${token?.user.login}.\n`);
    const acquired = this.gate.acquire();
    if (acquired === undefined)
      return refuse(503, 'too many git requests at once (fleetbench docs/limits.md)\n', {
        'retry-after': '1',
      });
    const release = await acquired;
    try {
      if (res.writableEnded || res.destroyed) {
        return record({ status: 499, bytesIn: 0, bytesOut: 0, outcome: 'cancelled' }, { repo, token });
      }
      const repositories = this.repositories;
      const backend = (beforeEnd?: () => Promise<void>) =>
        runBackend(req, res, {
          root: repositories.root,
          pathInfo: `/${GitRepositories.dirName(repo)}/${route.request === 'info/refs' ? 'info/refs' : route.service}`,
          query: route.request === 'info/refs' ? `service=${route.service}` : '',
          remoteUser: token?.user.login,
          signal: this.closing.signal,
          beforeEnd,
        });
      try {
        if (push && route.request === 'rpc') {
          // The push and its import into the world run alone on the repository.
          let updates: BranchUpdate[] = [];
          const result = await repositories.exclusive(repo, async () => {
            await repositories.sync(repo);
            return backend(async () => {
              updates = await repositories.importPush(repo, token?.user);
            });
          });
          return record(result, { repo, token, updates });
        }
        await repositories.exclusive(repo, () => repositories.sync(repo));
        return record(await backend(), { repo, token });
      } catch (error) {
        if (!(error instanceof GitHubStateError)) throw error;
        return refuse(error.status, `${error.message}\n`);
      }
    } finally {
      release();
    }
  }

  /** The request's `github.git` span. */
  private record(
    req: GitRequest,
    t0: number,
    method: string,
    route: GitRoute | undefined,
    result: BackendResult,
    extra: { repo?: Repo; token?: TokenInfo; updates?: BranchUpdate[] },
  ): void {
    const trace = this.emulator.trace;
    if (trace === undefined) return;
    const session =
      (this.emulator.attributionHeaders ? header(req, ATTRIBUTION_HEADERS.session) : undefined) ??
      extra.token?.session;
    const data: Record<string, unknown> = {
      method,
      route:
        route === undefined
          ? '(unmatched)'
          : route.request === 'info/refs'
            ? ROUTES['info/refs']
            : ROUTES.rpc[route.service],
      bytesIn: result.bytesIn,
      bytesOut: result.bytesOut,
    };
    if (extra.repo !== undefined) data.repo = extra.repo.fullName;
    if (extra.token !== undefined) data.user = extra.token.user.login;
    if (extra.updates !== undefined && extra.updates.length > 0) data.updates = extra.updates;
    if (result.error !== undefined) data.error = result.error;
    trace.write({
      kind: 'span',
      name: 'github.git',
      t: t0,
      dur: this.emulator.clock.now() - t0,
      ...(session === undefined ? {} : { session }),
      outcome: result.outcome,
      labels: {
        service: route?.service ?? 'none',
        request: route?.request ?? 'none',
        status: String(result.status),
      },
      data,
    });
  }
}

function header(req: GitRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
