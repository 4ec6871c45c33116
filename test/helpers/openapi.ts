/**
 * Every REST answer the emulator gives in a test, checked against GitHub's own OpenAPI
 * description of api.github.com (npm `@octokit/openapi`, pinned in package.json): the status
 * must be one the operation documents, and a JSON body must match that status's schema (ajv,
 * with the formats GitHub uses). `watchParity(emulator)` wraps the emulator's `handle`, so every
 * request of a test, in-process or over HTTP, is checked; `problems` lists what did not fit.
 *
 * A few answers are GitHub's on every route and not repeated in each operation's description:
 * an authenticated 304 to a conditional GET, `400 Problems parsing JSON`, `401 Bad credentials`,
 * the rate limits' 403 and 429 (docs.github.com, "Rate limits for the REST API"), `413` for a
 * body over the limit, 5xx (the emulator's injected faults), and a write's `422 Validation
 * Failed` or `Invalid request` (GitHub checks every request body against its schema, and its
 * description lists the 422 only on some operations). Those are allowed anywhere.
 *
 * The description is 13 MB; the part the emulator's routes use (their operations and the
 * components those reach) is kept in node_modules/.cache/fleetbench, keyed by the package's
 * version and the routes, so a test file loads a few hundred kilobytes.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { EmulatorRequest, EmulatorResponse, GitHubEmulator } from '../../src/github/index.ts';
import { buildRestRouter } from '../../src/github/rest.ts';

const require = createRequire(import.meta.url);
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

type Json = Record<string, unknown>;
interface Spec {
  paths: Record<string, Record<string, Json>>;
  components: Record<string, Record<string, unknown>>;
}

/** `/repos/{owner}/{repo}/git/ref/{ref}` → `/repos/{}/{}/git/ref/{}`: templates compared without parameter names. */
export const shapeOf = (template: string) => template.replace(/\{[^}]+\}/g, '{}');

/** The emulator's REST routes as `METHOD template` (HEAD answers with GET's). */
export function emulatorRoutes(): { method: string; template: string }[] {
  return buildRestRouter()
    .routes.filter((r) => r.method !== 'HEAD')
    .map((r) => ({ method: r.method, template: r.template }));
}

/** Bumped when `trim` changes what it keeps, so an older cached part is not used. */
const TRIM_VERSION = 5;

let loaded: { spec: Spec; byShape: Map<string, string>; version: string } | undefined;

/** The description's part the emulator's routes reach (cached on disk), and its path of each route shape. */
export function openApiSpec(): { spec: Spec; byShape: Map<string, string>; version: string } {
  if (loaded !== undefined) return loaded;
  const packageJson = require.resolve('@octokit/openapi/package.json');
  const version = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  const routes = emulatorRoutes();
  const key = createHash('sha256').update(JSON.stringify(routes)).digest('hex').slice(0, 12);
  // The key changes with the routes and with how the part is made (TRIM_VERSION).
  const cacheFile = join(
    process.cwd(),
    'node_modules',
    '.cache',
    'fleetbench',
    `openapi-${version}-${key}-${TRIM_VERSION}.json`,
  );
  let spec: Spec;
  if (existsSync(cacheFile)) spec = JSON.parse(readFileSync(cacheFile, 'utf8')) as Spec;
  else {
    const full = JSON.parse(
      readFileSync(join(dirname(packageJson), 'generated', 'api.github.com.json'), 'utf8'),
    ) as Spec;
    spec = trim(full, routes);
    mkdirSync(dirname(cacheFile), { recursive: true });
    writeFileSync(cacheFile, JSON.stringify(spec));
  }
  const byShape = new Map<string, string>();
  for (const path of Object.keys(spec.paths)) byShape.set(shapeOf(path), path);
  loaded = { spec, byShape, version };
  return loaded;
}

/** The routes' operations with their responses, and every component they reach. */
function trim(full: Spec, routes: { method: string; template: string }[]): Spec {
  const byShape = new Map<string, string>();
  for (const path of Object.keys(full.paths)) byShape.set(shapeOf(path), path);
  const paths: Spec['paths'] = {};
  const pending: unknown[] = [];
  for (const route of routes) {
    const path = byShape.get(shapeOf(route.template));
    const op = path === undefined ? undefined : full.paths[path]?.[route.method.toLowerCase()];
    if (path === undefined || op === undefined) continue;
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = { operationId: op.operationId, responses: op.responses };
    pending.push(op.responses);
  }
  const components: Spec['components'] = {};
  const seen = new Set<string>();
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) pending.push(...value);
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (k === 'examples' || k === 'example') continue;
        if (k === '$ref' && typeof v === 'string' && !seen.has(v)) {
          seen.add(v);
          const [, , kind, name] = v.split('/');
          const target = full.components[kind!]?.[name!];
          components[kind!] ??= {};
          components[kind!]![name!] = target;
          pending.push(target);
        } else pending.push(v);
      }
    }
  }
  const trimmed = { paths, components };
  nullableForAjv(trimmed);
  return trimmed;
}

/**
 * OpenAPI 3.0's `nullable` as ajv reads it: ajv takes `nullable` only beside a `type`, and an
 * `enum` must name null itself (GitHub's `conclusion` is `nullable` with an enum of strings,
 * and is null on a check run in progress). A nullable schema without a type becomes
 * "that, or null".
 */
export function nullableForAjv(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) nullableForAjv(item);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const schema = value as Json;
  for (const item of Object.values(schema)) nullableForAjv(item);
  // An error answer's `oneOf` beside `repository-rule-violation-error`, whose fields are all
  // optional (a contents write's 409 with `basic-error`, a blob's 422 with `validation-error`):
  // every body fits both, and ajv's oneOf refuses one that fits two. Read as what the
  // description means: either.
  if (
    Array.isArray(schema.oneOf) &&
    (schema.oneOf as Json[]).some((s) => String(s.$ref ?? '').endsWith('/repository-rule-violation-error'))
  ) {
    schema.anyOf = schema.oneOf;
    delete schema.oneOf;
  }
  // A defect of the description: `GET /app/installations` inlines an installation's `account` as
  // allOf [Simple User, Enterprise] (no account is both), where the `installation` component it
  // copies says anyOf. Read as the component says.
  const parts = schema.allOf as Json[] | undefined;
  if (
    Array.isArray(parts) &&
    parts.length === 2 &&
    parts[0]?.title === 'Simple User' &&
    parts[1]?.title === 'Enterprise'
  ) {
    schema.anyOf = parts;
    delete schema.allOf;
  }
  if (schema.nullable !== true) return;
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  if (schema.type === undefined) {
    const rest = { ...schema };
    delete rest.nullable;
    for (const key of Object.keys(schema)) delete schema[key];
    schema.anyOf = [rest, { type: 'null' }];
  }
}

/** Statuses GitHub answers on any route (see the file's comment). */
function globallyAllowed(method: string, status: number, body: string): boolean {
  if (status === 304) return method === 'GET' || method === 'HEAD';
  if (status === 400) return body.includes('Problems parsing JSON');
  // A write whose body breaks the operation's own request schema: GitHub's request validation,
  // on every route that takes a body, documented or not ("Validation Failed", "Invalid request").
  if (status === 422 && method !== 'GET')
    return (
      body.includes('"Validation Failed"') ||
      body.includes('"Invalid request.') ||
      // A status or check run on a commit the repository lacks, in GitHub's words.
      body.includes('"No commit found for SHA: ') ||
      // A workflow dispatch on a ref the repository lacks, in GitHub's words.
      body.includes('"No ref found for: ')
    );
  // A repository, issue or pull the token cannot see: GitHub's 404 on every route (docs.github.com,
  // "Troubleshooting the REST API"), listed in few operations' descriptions.
  if (status === 404) return body.includes('"Not Found"');
  return status === 401 || status === 403 || status === 429 || status === 413 || status >= 500;
}

export interface ParityProblem {
  request: string;
  status: number;
  problem: string;
}

export class OpenApiChecker {
  private readonly ajv: Ajv;
  private readonly validators = new Map<string, ValidateFunction | null>();
  private readonly router = buildRestRouter();
  readonly spec: Spec;
  private readonly byShape: Map<string, string>;

  constructor() {
    const { spec, byShape } = openApiSpec();
    this.spec = spec;
    this.byShape = byShape;
    // `discriminator` (with `mapping`, which ajv does not take) only speeds up a oneOf: left out.
    this.ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema(spec as unknown as Json, 'openapi.json');
  }

  /** The description's path of an emulator route template, when it has one. */
  pathOf(template: string): string | undefined {
    return this.byShape.get(shapeOf(template));
  }

  /**
   * What does not fit in one answer: `path` as sent (query allowed, `/api/v3` prefix allowed).
   * Empty when it fits, or when the path is not one of the emulator's REST routes.
   */
  check(method: string, path: string, status: number, body: string, contentType?: string): string[] {
    let pathname = path.split('?')[0]!;
    if (pathname.startsWith('/api/v3')) pathname = pathname.slice(7) || '/';
    if (pathname === '/graphql' || pathname.startsWith('/_fleetbench/')) return [];
    const route = this.router.match(method === 'HEAD' ? 'GET' : method, pathname, []);
    if (route === undefined) return [];
    const specPath = this.pathOf(route.template);
    if (specPath === undefined) return [`${method} ${route.template}: not in GitHub's OpenAPI description`];
    const op = this.spec.paths[specPath]?.[(method === 'HEAD' ? 'GET' : method).toLowerCase()];
    if (op === undefined) return [`${method} ${specPath}: no such operation in GitHub's OpenAPI description`];
    const responses = op.responses as Record<string, Json>;
    let response = responses[String(status)] ?? responses.default;
    if (response === undefined) {
      return globallyAllowed(method, status, body)
        ? []
        : [
            `${status} is not a documented status of ${method} ${specPath} (documented: ${Object.keys(responses).join(', ')})`,
          ];
    }
    response = this.resolve(response);
    if (status === 304 || status === 204 || method === 'HEAD' || body === '') return [];
    if (contentType !== undefined && !contentType.includes('json')) return [];
    const validate = this.validator(specPath, method, status, response);
    if (validate === null) return [];
    let data: unknown;
    try {
      data = JSON.parse(body);
    } catch {
      return [`${method} ${specPath} ${status}: the body is not JSON`];
    }
    if (validate(data)) return [];
    return (validate.errors ?? [])
      .slice(0, 5)
      .map(
        (e) =>
          `${method} ${specPath} ${status}: ${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`,
      );
  }

  private resolve(response: Json): Json {
    const ref = response.$ref;
    if (typeof ref !== 'string') return response;
    const [, , kind, name] = ref.split('/');
    return this.spec.components[kind!]![name!] as Json;
  }

  private validator(
    specPath: string,
    method: string,
    status: number,
    response: Json,
  ): ValidateFunction | null {
    const key = `${method} ${specPath} ${status}`;
    const known = this.validators.get(key);
    if (known !== undefined) return known;
    const content = response.content as Record<string, { schema?: unknown }> | undefined;
    const json = content?.['application/json'] ?? content?.['application/scim+json'];
    let validate: ValidateFunction | null = null;
    // The response's schema where it lies in the description, so the refs inside resolve from there.
    if (json?.schema !== undefined)
      validate = this.ajv.compile({
        $ref: `openapi.json#${this.pointerOf(specPath, method, status, response)}`,
      });
    this.validators.set(key, validate);
    return validate;
  }

  /** The JSON pointer of a response's JSON schema in the description. */
  private pointerOf(specPath: string, method: string, status: number, response: Json): string {
    const escapePointer = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');
    const op = this.spec.paths[specPath]![method.toLowerCase()]!;
    const responses = op.responses as Record<string, Json>;
    const raw = responses[String(status)] ?? responses.default!;
    const base =
      typeof raw.$ref === 'string'
        ? `/components/responses/${escapePointer(raw.$ref.split('/')[3]!)}`
        : `/paths/${escapePointer(specPath)}/${method.toLowerCase()}/responses/${responses[String(status)] ? status : 'default'}`;
    const content = response.content as Record<string, unknown>;
    const media = content['application/json'] !== undefined ? 'application/json' : 'application/scim+json';
    return `${base}/content/${escapePointer(media)}/schema`;
  }
}

let shared: OpenApiChecker | undefined;

/** One checker per worker: its compiled validators are reused by every file. */
export function openApiChecker(): OpenApiChecker {
  shared ??= new OpenApiChecker();
  return shared;
}

/**
 * Checks every REST answer the emulator gives from now on against GitHub's description;
 * `problems` lists each that did not fit (the request, its status, why).
 */
export function watchParity(emulator: GitHubEmulator): { problems: ParityProblem[]; checked: () => number } {
  const checker = openApiChecker();
  const problems: ParityProblem[] = [];
  let checked = 0;
  // respond() is what handle() and the HTTP binding both call: an answer is checked once.
  const respond = emulator.respond.bind(emulator);
  const check = (req: EmulatorRequest, res: EmulatorResponse) => {
    const method = req.method.toUpperCase();
    let found: string[];
    try {
      found = checker.check(method, req.path, res.status, res.body, res.headers['content-type']);
    } catch (error) {
      found = [`the check itself failed: ${(error as Error).message}`];
    }
    for (const problem of found)
      problems.push({ request: `${method} ${req.path}`, status: res.status, problem });
    checked++;
    return res;
  };
  emulator.respond = (req) => {
    const res = respond(req);
    return res instanceof Promise ? res.then((answered) => check(req, answered)) : check(req, res);
  };
  return { problems, checked: () => checked };
}

/** What the emulators the helpers made (test/helpers/github.ts) answered outside GitHub's description, in this file. */
const unreported: ParityProblem[] = [];

/**
 * Checks an emulator a helper made, for the whole file: test/setup.ts fails the file at its end
 * when any of its REST answers did not fit GitHub's description (`takeParityProblems`).
 */
export function watchForFile(emulator: GitHubEmulator): void {
  const watched = watchParity(emulator);
  watched.problems.push = (...items: ParityProblem[]) => unreported.push(...items);
}

/** The problems found since the last call (test/setup.ts asks at the end of every file). */
export function takeParityProblems(): ParityProblem[] {
  return unreported.splice(0, unreported.length);
}
