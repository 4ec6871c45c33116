/**
 * The GitHub emulator core. `handle()` takes one request (in-process or from the HTTP binding)
 * through the same steps every time:
 *
 *   path and prefix (`/api/v3`, `/api/graphql`) → admin? → token → admission (the concurrency
 *   limit: refused on arrival, or in flight + 1) → route → injected 5xx / forced secondary →
 *   secondary limits → primary limit → handler / GraphQL → ETag (content hash), Last-Modified
 *   and 304 → charge → latency (clock.sleep) → release (in flight − 1; a served request's time
 *   from arrival to answer charged as CPU time) → one `api` trace record.
 *
 * Over HTTP the binding admits the request itself when it arrives (`admit()`), releases it when
 * its answer is written, and hands the admission to `handle()`.
 *
 * Everything before the sleep is synchronous, so in virtual time the only waiting is the modelled
 * latency, and concurrency (the 100-in-flight secondary limit, the record's t/dur) is honest.
 */

import { FleetbenchError } from '../base/errors.ts';
import type { Rng } from '../base/rng.ts';
import { describeZodIssues } from '../base/validation.ts';
import type { Clock } from '../clock/index.ts';
import { type ApiRecord, type ApiSource, type RateLimitSnapshot, sources } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import { EmulatorAdmin } from './admin.ts';
import { type AppInput, AppRegistry, jwtShaped, looksLikeJwt } from './apps.ts';
import { ContentAttribution } from './attribution.ts';
import { type MintTokenOptions, type TokenInfo, TokenRegistry } from './auth.ts';
import { isLargeBody, largeBodyMemo } from './body-memo.ts';
import {
  type EmulatorLimitsInput,
  type LatencyConfig,
  type LatencyInput,
  type Resource,
  resolveLatency,
  resolveLimits,
} from './config.ts';
import { FaultBoard } from './faults.ts';
import {
  checkFixtures,
  type Fixtures,
  fixturesSchema,
  type GenerateFixturesOptions,
  generateFixtures,
} from './fixtures.ts';
import { GRAPHQL_DOCS, GraphQLEngine } from './graphql/index.ts';
import { mergesAhead } from './merge-ahead.ts';
import { type Bucket, type Identity, QuotaLedger, type SecondaryBreach } from './quota.ts';
import { buildRestRouter } from './rest.ts';
import { appGate } from './rest-apps.ts';
import {
  contentHash,
  errorBody,
  type MediaFormat,
  mediaFormat,
  parseQuery,
  type RestRouter,
} from './rest-kit.ts';
import { GitHubState } from './state.ts';
import { newTouched, type Touched } from './touched.ts';
import {
  type Admission,
  ATTRIBUTION_HEADERS,
  type EmulatorRequest,
  type EmulatorResponse,
  type EmulatorStats,
} from './types.ts';
import { Webhooks } from './webhooks.ts';
import type { WorkflowsOptions } from './world/workflows.ts';

const RATE_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';
const SECONDARY_DOCS = `${RATE_DOCS}#about-secondary-rate-limits`;
/** What a request the server stopped while its merges were computed ahead gets (nobody reads it). */
const SERVER_STOPPED: EmulatorResponse = { status: 503, headers: {}, body: '' };
/** Times one request waits for its merges computed ahead (merge-ahead.ts) before it is handled as it is. */
const MERGE_AHEAD_ROUNDS = 3;

export interface GitHubEmulatorOptions {
  clock: Clock;
  rng: Rng;
  /** Where `api` records (and rate-limit snapshot / fault events) go. */
  trace?: TraceSink;
  /** A fixtures document (as loaded from a file), or sizes to generate one from the Rng. */
  fixtures: Fixtures | GenerateFixturesOptions;
  limits?: EmulatorLimitsInput;
  /** Base latency per protocol; see config.ts for defaults (on: 60/250 ms REST). */
  latency?: LatencyInput;
  /** Treat an unknown token as a new token of the default user instead of answering 401. */
  acceptUnknownTokens?: boolean;
  /**
   * Read every call's content for the work it names (its `scope`) from the first call, not only
   * once some work is registered: a world's control plane polls before any work exists, and those
   * calls are its own (docs/command-target.md, "Attribution with no adapter").
   */
  alwaysAttributeContent?: boolean;
  /**
   * Take the `x-fleetbench-*` attribution headers (session, source, op, cycle, phase, project) from
   * a request. Default true: fleetbench's own clients and an http target's send them
   * (docs/http-target.md). False in a world: what crosses its edge is fleetbench's to attribute,
   * and a control plane that sent `x-fleetbench-session` could move its own calls out of its
   * overhead (docs/command-target.md, "Attribution with no adapter").
   */
  attributionHeaders?: boolean;
  /**
   * Tokens it makes up (the default one, minted ones given no text) come from crypto randomness,
   * different at every start, instead of the seed: what a served emulator hands out
   * (`github serve`) is a credential. Default false (a run's tokens follow its seed).
   */
  secretTokens?: boolean;
  /** GitHub Apps installed in the world (apps.ts; docs/github-emulator.md, "Apps"). */
  apps?: AppInput[];
  /** Guards the `/_fleetbench/` HTTP admin API. Generated from the Rng when absent. */
  adminToken?: string;
  /** Origin rendered into API `url` fields. Default https://api.github.com; the HTTP binding sets its own. */
  apiUrl?: string;
  /**
   * Origin of web links (`html_url`, GraphQL `url`), e.g. `https://github.com` for clients that
   * parse `github.com/OWNER/REPO` out of them. Default: the fixtures' `web_url`, else the API
   * origin (https://github.com in-process).
   */
  webUrl?: string;
  /**
   * How re-runs and dispatched Actions runs go (world/workflows.ts): the run time they take
   * (default 30 s) and their conclusion (default success).
   */
  actions?: WorkflowsOptions;
}

/** What a request carries besides its route, gathered once. */
interface Attribution {
  session?: string;
  source?: ApiSource;
  op?: string;
  cycle?: number;
  phase?: string;
  project?: string;
}

/** Everything decided about one request; one fixed shape, filled in place on the hot path. */
class Outcome {
  status = 200;
  body = '';
  route = '(unmatched)';
  protocol: 'rest' | 'graphql' = 'rest';
  resource: Resource = 'core';
  bucket: Bucket | undefined = undefined;
  cost = 0;
  secondaryCost = 0;
  conditional = false;
  notModified = false;
  limited: 'primary' | 'secondary' | undefined = undefined;
  retryAfter: number | undefined = undefined;
  error: string | undefined = undefined;
  repo: string | undefined = undefined;
  etag: string | undefined = undefined;
  link: string | undefined = undefined;
  /** Answered as out of quota: x-ratelimit-remaining 0 whatever the bucket still holds. */
  exhausted = false;
  /** The GraphQL operation name: the record's `op` when no x-fleetbench-op header names one. */
  op: string | undefined = undefined;
  /** The x-ratelimit-* values sent, fixed when the request was processed (before the latency). */
  rl: RateLimitSnapshot | undefined = undefined;
  /** Run time the resource last changed (Last-Modified), when the route says. */
  lastModified: number | undefined = undefined;
  /** A non-JSON body's Content-Type and X-GitHub-Media-Type (a diff or a patch). */
  contentType: string | undefined = undefined;
  mediaType: string | undefined = undefined;
  /** A created resource's URL (201): the Location header. */
  location: string | undefined = undefined;
  /** What the request named, when content attribution is on (attribution.ts). */
  touched: Touched | undefined = undefined;
  /** The concurrency limit's refusal, decided when the request arrived. */
  concurrency: SecondaryBreach | undefined = undefined;

  /** Answered without running the handler (fault, limit, bad input): nothing charged. */
  reject(status: number, message: string, docs: string): this {
    this.status = status;
    this.body = JSON.stringify({ message, documentation_url: docs });
    this.cost = 0;
    this.secondaryCost = 0;
    this.error = message;
    return this;
  }
}

const SOURCE_SET = new Set<string>(sources);
/** The headers read for attribution where the request's own are not taken (`attributionHeaders`). */
const NO_HEADERS: Readonly<Record<string, string | undefined>> = Object.freeze({});

/** Content hashes of large bodies, which are cached strings answered again and again. */
const hashes = new Map<string, string>();

function bodyHash(body: string): string {
  if (body.length < 2048) return contentHash(body);
  let h = hashes.get(body);
  if (h === undefined) {
    h = contentHash(body);
    if (hashes.size >= 512) hashes.clear();
    hashes.set(body, h);
  }
  return h;
}

/** UTF-8 sizes of large bodies, which are cached strings answered again and again. */
const largeByteLength = largeBodyMemo(512, (body) => Buffer.byteLength(body));

function byteLength(body: string): number {
  if (!isLargeBody(body)) return body === '' ? 0 : Buffer.byteLength(body);
  return largeByteLength(body);
}

/** If-None-Match against our ETag: exact, a list, `*`, weak/strong alike. */
function etagMatches(header: string, etag: string): boolean {
  if (header === etag || header === '*') return true;
  const bare = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const part of header.split(',')) {
    const p = part.trim();
    if (p === etag || p === bare || (p.startsWith('W/') && p.slice(2) === bare)) return true;
  }
  return false;
}

/** A query value decoded (`+` a space); a malformed escape (`%E0`) is kept as sent, never thrown. */
function decodeQueryValue(value: string): string {
  const spaced = value.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** What a REST request names, from its path parameters, its `head` filter and a `ref` query. */
function touchedByRoute(names: readonly string[], params: readonly string[], qs: string): Touched {
  const touched = newTouched();
  for (let i = 0; i < names.length; i++) {
    const value = params[i];
    if (value === undefined) continue;
    const name = names[i];
    if (name === 'pull_number') touched.pulls.push(Number(value));
    else if (name === 'issue_number') touched.issues.push(Number(value));
    else if (name === 'ref' || name === 'commit_sha' || name === 'sha')
      // Already decoded by the router: a second decode would throw on a `%` the name holds.
      touched.shas.push(value);
  }
  const head = /(?:^|&)head=([^&]*)/.exec(qs)?.[1];
  if (head) {
    const branch = decodeQueryValue(head);
    touched.branches.push(branch.includes(':') ? branch.slice(branch.indexOf(':') + 1) : branch);
  }
  // The branch a contents read names (`?ref=B`, `heads/B`); a commit's SHA is left to `shas`.
  const ref = /(?:^|&)ref=([^&]*)/.exec(qs)?.[1];
  if (ref) {
    const name = decodeQueryValue(ref).replace(/^(?:refs\/)?heads\//, '');
    if (/^[0-9a-f]{40}$/.test(name)) touched.shas.push(name);
    else touched.branches.push(name);
  }
  return touched;
}

function namesNothing(touched: Touched): boolean {
  return (
    touched.pulls.length === 0 &&
    touched.issues.length === 0 &&
    touched.branches.length === 0 &&
    touched.shas.length === 0
  );
}

/** A write's body fields that name a branch, a commit or an issue (a PR's `head`, a ref's `ref`). */
const BODY_NAMES_LIMIT = 64 * 1024;
function touchedByBody(touched: Touched, body: string): void {
  if (body.length > BODY_NAMES_LIMIT) return;
  let fields: Record<string, unknown>;
  try {
    const parsed = JSON.parse(body) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return;
    fields = parsed as Record<string, unknown>;
  } catch {
    return;
  }
  const text = (name: string) => (typeof fields[name] === 'string' ? (fields[name] as string) : undefined);
  const head = text('head');
  if (head) touched.branches.push(head.includes(':') ? head.slice(head.indexOf(':') + 1) : head);
  const ref = text('ref');
  if (ref?.startsWith('refs/heads/')) touched.branches.push(ref.slice('refs/heads/'.length));
  const branch = text('branch');
  if (branch) touched.branches.push(branch);
  // `sha` is left out: a new ref's `sha` is its base (main's head), which names no one's work.
  for (const name of ['head_sha', 'commit_id']) {
    const sha = text(name);
    if (sha) touched.shas.push(sha);
  }
  for (const name of ['issue_number', 'issue'])
    if (typeof fields[name] === 'number') touched.issues.push(fields[name] as number);
  if (typeof fields.pull_number === 'number') touched.pulls.push(fields.pull_number);
}

/**
 * One request's admission: refused by the concurrency limit on arrival, or counted in flight
 * until released; a served request's own time (from its body in hand to its answer, not the
 * client's upload or download) is charged as CPU time then.
 * A class (one object per request, methods on the prototype): the in-process hot path makes one
 * for every request.
 */
class RequestAdmission implements Admission {
  readonly arrivedAt: number;
  readonly refused: SecondaryBreach | undefined;
  private released: boolean;
  private cpu: { graphql: boolean; ms: number } | undefined = undefined;

  constructor(
    private readonly ledger: QuotaLedger,
    clock: Clock,
    readonly identity: Identity,
    readonly token: TokenInfo | undefined,
  ) {
    this.arrivedAt = clock.now();
    this.refused = ledger.concurrencyBreach(identity);
    this.released = this.refused !== undefined;
    if (this.refused === undefined) {
      identity.inFlight++;
      if (identity.inFlight > identity.peakInFlight) identity.peakInFlight = identity.inFlight;
    }
  }

  served(graphql: boolean, ms: number): void {
    this.cpu = { graphql, ms };
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.identity.inFlight--;
    if (this.cpu !== undefined) this.ledger.chargeCpu(this.identity, this.cpu.ms, this.cpu.graphql);
  }
}

export class GitHubEmulator {
  readonly clock: Clock;
  readonly state: GitHubState;
  readonly ledger: QuotaLedger;
  readonly tokens: TokenRegistry;
  /** GitHub Apps: their JWTs and installation tokens (apps.ts). */
  readonly apps: AppRegistry;
  readonly faults: FaultBoard;
  /** Repository webhooks and their deliveries (webhooks.ts). */
  readonly webhooks: Webhooks;
  readonly graphql: GraphQLEngine;
  readonly admin: EmulatorAdmin;
  /** Sessions registered for attribution by content; empty (and free) unless a client needs it. */
  readonly attribution: ContentAttribution;
  readonly latency: LatencyConfig;
  readonly adminToken: string;
  /** A token of the fixtures' default user, minted at construction. */
  readonly defaultToken: string;
  trace: TraceSink | undefined;
  /** The configured web origin (option or fixtures' `web_url`), if any. */
  readonly webUrl: string | undefined;
  private readonly router: RestRouter;
  private readonly latencyRng: Rng;
  private readonly acceptUnknownTokens: boolean;
  private readonly alwaysAttributeContent: boolean;
  /** `EmulatorOptions.attributionHeaders`; git's smart HTTP routes read it too. */
  readonly attributionHeaders: boolean;
  private requestSeq = 0;
  private readonly counters: Omit<EmulatorStats, 'inFlight' | 'byStatus'> = {
    requests: 0,
    notModified: 0,
    limitedPrimary: 0,
    limitedSecondary: 0,
    injectedErrors: 0,
    traceRecords: 0,
  };
  private readonly byStatus = new Map<number, number>();
  /**
   * The content hash last rendered for (user, path and query) at a version: lets a conditional
   * request for an unchanged version answer 304 without rendering. Lists keep theirs in the
   * repo's body cache instead.
   */
  private readonly hashMemo = new Map<string, { version: number; epoch: number; hash: string }>();

  constructor(options: GitHubEmulatorOptions) {
    this.clock = options.clock;
    this.trace = options.trace;
    const rng = options.rng;
    const fixtures = GitHubEmulator.resolveFixtures(options.fixtures, rng);
    this.state = new GitHubState(fixtures, { clock: this.clock });
    this.webUrl = options.webUrl ?? (fixtures as Fixtures).web_url;
    if (options.apiUrl) this.state.setUrls(options.apiUrl, this.webUrl ?? options.apiUrl);
    else if (this.webUrl) this.state.setUrls(this.state.apiUrl, this.webUrl);
    this.ledger = new QuotaLedger(this.clock, resolveLimits(options.limits));
    this.tokens = new TokenRegistry(this.state, this.ledger, rng.fork('github.tokens'), {
      secret: options.secretTokens,
    });
    this.faults = new FaultBoard(this.clock, rng.fork('github.faults'), this.trace);
    this.webhooks = new Webhooks(this.state, this.clock, rng.fork('github.webhooks'), this.trace);
    this.graphql = new GraphQLEngine();
    this.router = buildRestRouter();
    this.latency = resolveLatency(options.latency);
    this.latencyRng = rng.fork('github.latency');
    this.acceptUnknownTokens = options.acceptUnknownTokens ?? false;
    this.alwaysAttributeContent = options.alwaysAttributeContent ?? false;
    this.attributionHeaders = options.attributionHeaders ?? true;
    this.admin = new EmulatorAdmin(this);
    this.attribution = new ContentAttribution(this.state);
    for (const token of fixtures.tokens ?? []) this.tokens.mint(token);
    this.apps = new AppRegistry(this.state, this.ledger, this.tokens, this.clock);
    for (const app of options.apps ?? []) this.apps.add(app);
    this.defaultToken = this.tokens.mint({}).token;
    this.adminToken = options.adminToken ?? this.tokens.randomToken('fba_');
    this.state.workflows.configure({ ...options.actions, logKey: this.adminToken });
  }

  /** Validates a fixtures object (errors name the field path) or generates one from sizes. */
  static resolveFixtures(input: Fixtures | GenerateFixturesOptions, rng: Rng): Fixtures {
    if (typeof (input as GenerateFixturesOptions).repos === 'number') {
      return generateFixtures(input as GenerateFixturesOptions, rng.fork('github.fixtures'));
    }
    const parsed = fixturesSchema.safeParse(input);
    if (!parsed.success) {
      throw new FleetbenchError('E_FIXTURES', `fixtures: ${describeZodIssues(parsed.error.issues, 1)[0]}`);
    }
    const problem = checkFixtures(parsed.data)[0];
    if (problem)
      throw new FleetbenchError('E_FIXTURES', `fixtures: ${problem.path.join('.')}: ${problem.message}`);
    return parsed.data;
  }

  /**
   * Origin the HTTP binding listens on: rendered into API `url` fields, and into web links
   * (`html_url`) unless a web URL was configured.
   */
  setPublicUrl(origin: string): void {
    this.state.setUrls(origin, this.webUrl ?? origin);
  }

  mintToken(options: MintTokenOptions = {}): TokenInfo {
    return this.tokens.mint(options);
  }

  stats(): EmulatorStats {
    let inFlight = 0;
    for (const identity of this.ledger.identities.values()) inFlight += identity.inFlight;
    return {
      ...this.counters,
      byStatus: Object.fromEntries([...this.byStatus].map(([k, v]) => [String(k), v])),
      inFlight,
    };
  }

  /** Stops fault timers. The emulator holds no other resources. */
  close(): void {
    this.faults.clear();
    this.webhooks.close();
    this.state.workflows.close();
  }

  /**
   * The token a client names (an unknown one becomes the default user's with
   * `acceptUnknownTokens`): what git's smart HTTP routes attribute a push or a fetch to.
   */
  tokenOf(tokenText: string): TokenInfo | undefined {
    return this.tokenFor(tokenText);
  }

  /**
   * Tokens nobody minted here that are still someone's: the world's agent launchers give each
   * spawn a token of its own (docs/world.md, "Agents"). Asked once per unknown token.
   */
  tokenResolver: ((tokenText: string) => MintTokenOptions | undefined) | undefined = undefined;
  /** The session a token's calls belong to when the token itself names none (asked per call). */
  tokenSession: ((tokenText: string) => string | undefined) | undefined = undefined;
  /** Told of every request answered (counted in `stats().requests`), with its token if any. */
  onRequest: ((token: TokenInfo | undefined) => void) | undefined = undefined;

  /** A known token not past its expiry (an installation token lives an hour, apps.ts). */
  private live(token: TokenInfo | undefined): boolean {
    return token !== undefined && (token.expiresAt === undefined || this.clock.now() < token.expiresAt);
  }

  private tokenFor(tokenText: string): TokenInfo | undefined {
    const token = this.tokens.tokens.get(tokenText);
    // An expired installation token is refused as GitHub does (401), never taken as unknown.
    if (token !== undefined) return this.live(token) ? token : undefined;
    // A JWT is checked against the Apps, never accepted as an unknown token: one past APP_BOUNDS'
    // length too (it was taken as the default user's where unknown tokens are, forged or not).
    if (this.apps.size > 0 && jwtShaped(tokenText)) return this.apps.jwtToken(tokenText);
    // An installation token no longer in the table (revoked, or expired and swept) stays refused:
    // never the default user's, even where unknown tokens are taken (a world's emulator).
    if (this.apps.isRetired(tokenText)) return undefined;
    const resolved = this.tokenResolver?.(tokenText);
    if (resolved !== undefined) return this.tokens.mint({ ...resolved, token: tokenText });
    if (this.acceptUnknownTokens) return this.tokens.mint({ token: tokenText });
    return undefined;
  }

  /**
   * Counts a request in flight for its identity from now until `release()`: the HTTP binding calls
   * it when a request's headers arrive and releases when the answer is written, so clients fanning
   * out meet the concurrency limit whatever the latency, and a served request's CPU time runs from
   * its arrival to its answer. A request arriving while its identity has the limit's number in
   * flight is refused there (`refused`) and not counted. Undefined (nothing counted) for the admin
   * API and unknown tokens (answered 401).
   */
  admit(
    path: string,
    headers: Record<string, string | string[] | undefined>,
    remoteAddress: string | undefined,
  ): Admission | undefined {
    if (path.includes('/_fleetbench/')) return undefined;
    const authorization = headers.authorization;
    const tokenText = TokenRegistry.parseAuthorization(
      typeof authorization === 'string' ? authorization : undefined,
    );
    if (tokenText === undefined) return this.admitted(this.ledger.ipIdentity(remoteAddress), undefined);
    const token = this.tokenFor(tokenText);
    return token === undefined ? undefined : this.admitted(token.identity, token);
  }

  /** The admission of one request of an identity, arriving now. */
  private admitted(identity: Identity, token: TokenInfo | undefined): Admission {
    return new RequestAdmission(this.ledger, this.clock, identity, token);
  }

  /**
   * False when the request carries a token this emulator would answer 401 to: the HTTP binding
   * then answers without reading the body (a stranger's upload is never buffered).
   */
  acceptsCredentials(path: string, authorization: string | undefined): boolean {
    // The admin API has a token of its own (admin.ts checks it; its bodies are bounded too).
    if (path.includes('/_fleetbench/')) return true;
    const tokenText = TokenRegistry.parseAuthorization(authorization);
    return (
      tokenText === undefined ||
      (this.acceptUnknownTokens &&
        !this.apps.isRetired(tokenText) &&
        !(this.apps.size > 0 && jwtShaped(tokenText))) ||
      this.live(this.tokens.tokens.get(tokenText)) ||
      // A JWT only when it is one of an App's, valid now: a forged one's body is never read.
      (this.apps.size > 0 && looksLikeJwt(tokenText) && this.apps.jwtToken(tokenText) !== undefined) ||
      this.tokenResolver?.(tokenText) !== undefined
    );
  }

  async handle(req: EmulatorRequest): Promise<EmulatorResponse> {
    return this.respond(req);
  }

  /**
   * `handle()`, answered synchronously when there is no modelled latency to wait out: the HTTP
   * binding then writes the answer in the same slice of the event loop as the work that made it
   * (base/turn-slices.ts), instead of in a microtask the slice's budget does not see.
   */
  respond(req: EmulatorRequest): EmulatorResponse | Promise<EmulatorResponse> {
    const t0 = req.arrivedAt ?? this.clock.now();
    let path = req.path;
    if (path.charCodeAt(0) !== 47) {
      // An absolute URL (a client following a Link header in-process): keep path and query.
      const slash = path.indexOf('/', path.indexOf('//') + 2);
      path = slash < 0 ? '/' : path.slice(slash);
    }
    const q = path.indexOf('?');
    let pathname = q < 0 ? path : path.slice(0, q);
    const qs = q < 0 ? '' : path.slice(q + 1);
    let prefix = '';
    if (pathname.startsWith('/api/')) {
      if (pathname === '/api/graphql') pathname = '/graphql';
      else if (pathname.startsWith('/api/v3')) {
        prefix = '/api/v3';
        pathname = pathname.length === 7 ? '/' : pathname.slice(7);
      }
    }
    // The merges the request will compute run first, off the event loop (merge-ahead.ts,
    // docs/limits.md "Servers"); the request is then handled as any other, timed from its arrival.
    const ahead = this.mergesAheadOf(req, pathname);
    if (ahead !== undefined) {
      req.arrivedAt = t0;
      req.mergeRounds = (req.mergeRounds ?? 0) + 1;
      // One the server stopped before answering (recorded as cancelled) is not handled after all.
      return ahead.then(() => (req.cancelled ? SERVER_STOPPED : this.respond(req)));
    }
    if (pathname.startsWith('/_fleetbench/')) return this.admin.handleHttp(req, pathname.slice(13), qs);

    const method = req.method.toUpperCase();
    // Counted in flight by the caller since the request arrived (HTTP binding), or from here.
    let admission = req.admission;
    const inProcess = admission === undefined;
    if (admission === undefined) {
      const tokenText = TokenRegistry.parseAuthorization(req.headers.authorization);
      if (tokenText === undefined)
        admission = this.admitted(this.ledger.ipIdentity(req.remoteAddress), undefined);
      else {
        const found = this.tokenFor(tokenText);
        if (found === undefined) return this.badCredentials(req, method, pathname, t0, tokenText);
        admission = this.admitted(found.identity, found);
      }
    }
    const { identity, token } = admission;
    const outcome = new Outcome();
    outcome.concurrency = admission.refused;
    try {
      if (pathname === '/graphql' || pathname === '/graphql/')
        this.graphqlOutcome(outcome, req, method, identity, token);
      else this.restOutcome(outcome, req, method, pathname, qs, prefix, identity, token);
    } catch (error) {
      // A bug in a handler must not take the server down: answer 500 and record it.
      outcome.reject(500, 'Server Error', 'https://docs.github.com/rest');
      outcome.error = `emulator error: ${(error as Error)?.message ?? String(error)}`;
      outcome.route = '(error)';
    }
    this.stampRate(outcome);
    const answer = () => {
      try {
        // The CPU-time limit counts the response time of requests served (refused ones take
        // none): GitHub's own work, from the request in hand (its body uploaded) to the answer,
        // with the modelled latency; not the client's upload (150 GraphQL requests whose bodies
        // took 1.5 s were refused for "more than 60 seconds of CPU time"). Charged when the
        // answer is written.
        if (outcome.secondaryCost > 0)
          admission.served(outcome.protocol === 'graphql', this.clock.now() - t0);
      } finally {
        if (inProcess) admission.release();
      }
      return this.finish(req, method, outcome, token, t0);
    };
    const base = outcome.protocol === 'graphql' ? this.latency.graphql : this.latency.rest;
    let delay = base === null ? 0 : this.latencyRng.lognormal(base.medianMs, base.p95Ms);
    if (this.faults.size > 0) delay += this.faults.latency(outcome.protocol, outcome.route);
    return delay > 0 ? this.clock.sleep(delay).then(answer) : answer();
  }

  /**
   * The merges a request will compute, run ahead off the event loop (merge-ahead.ts): only in
   * served repositories, for a request whose credentials will be taken (the admin token, or an API
   * token; one refused on arrival computes nothing), at most MERGE_AHEAD_ROUNDS times (the base
   * or head moving meanwhile asks for another merge; after that it is computed synchronously).
   */
  private mergesAheadOf(req: EmulatorRequest, pathname: string): Promise<void> | undefined {
    if (this.state.gitStore.asyncReader === undefined || (req.mergeRounds ?? 0) >= MERGE_AHEAD_ROUNDS)
      return undefined;
    if (req.admission?.refused !== undefined) return undefined;
    const authorization = req.headers.authorization;
    if (authorization === undefined) return undefined;
    if (pathname.startsWith('/_fleetbench/')) {
      if (authorization.slice(authorization.indexOf(' ') + 1).trim() !== this.adminToken) return undefined;
    } else if (!this.acceptsCredentials(pathname, authorization)) return undefined;
    return mergesAhead(this.state, req, req.method.toUpperCase(), pathname);
  }

  /**
   * A request the server stopped before answering (its body still arriving, or its answer
   * waiting out the modelled latency): one `api` record with no status, `error: cancelled: …`,
   * from its arrival to now, and none later. Nothing is charged for it.
   */
  recordCancelled(req: EmulatorRequest, arrivedAt: number, reason: string): void {
    if (req.cancelled) return;
    req.cancelled = true;
    const trace = this.trace;
    if (trace === undefined) return;
    const method = req.method.toUpperCase();
    const q = req.path.indexOf('?');
    let pathname = q < 0 ? req.path : req.path.slice(0, q);
    if (pathname === '/api/graphql') pathname = '/graphql';
    else if (pathname.startsWith('/api/v3')) pathname = pathname.length === 7 ? '/' : pathname.slice(7);
    const graphql = pathname === '/graphql' || pathname === '/graphql/';
    const params: string[] = [];
    const route = graphql ? undefined : this.router.match(method, pathname, params);
    const token = this.tokens.tokens.get(TokenRegistry.parseAuthorization(req.headers.authorization) ?? '');
    const record: ApiRecord = {
      kind: 'api',
      t: arrivedAt,
      dur: Math.max(0, this.clock.now() - arrivedAt),
      service: 'github',
      protocol: graphql ? 'graphql' : 'rest',
      method,
      route: graphql ? '/graphql' : (route?.template ?? '(unmatched)'),
      status: null,
      conditional:
        req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined,
      notModified: false,
      resource: graphql ? 'graphql' : (route?.resource ?? 'core'),
      cost: 0,
      secondaryCost: 0,
      error: `cancelled: ${reason}`,
    };
    if (route?.repoParams) record.repo = `${params[route.repoParams[0]]}/${params[route.repoParams[1]]}`;
    const a = this.attributionOf(req, token);
    if (a.project) record.project = a.project;
    if (a.session) record.session = a.session;
    if (a.source) record.source = a.source;
    if (a.op) record.op = a.op;
    if (a.cycle !== undefined) record.cycle = a.cycle;
    if (a.phase) record.phase = a.phase;
    trace.write(record);
    this.counters.traceRecords++;
  }

  private hashMemoKey(
    pathname: string,
    qs: string,
    token: TokenInfo | undefined,
    format: MediaFormat,
  ): string {
    const key = `${token?.user.login ?? ''} ${pathname}?${qs}`;
    return format === 'json' ? key : `${key} ${format}`;
  }

  /**
   * If-Modified-Since (when no If-None-Match came: that one wins, as HTTP says) against the
   * resource's Last-Modified, to the second.
   */
  private notModifiedSince(req: EmulatorRequest, lastModified: number | undefined): boolean {
    const since = req.headers['if-modified-since'];
    if (since === undefined || lastModified === undefined) return false;
    const sinceMs = Date.parse(since);
    if (Number.isNaN(sinceMs)) return false;
    return Math.floor(this.clock.toWallMs(lastModified) / 1000) * 1000 <= sinceMs;
  }

  /** Fixes the bucket's x-ratelimit-* values for the response and the record. */
  private stampRate(outcome: Outcome): void {
    const bucket = outcome.bucket;
    if (bucket === undefined) return;
    outcome.rl = {
      limit: bucket.limit,
      remaining: outcome.exhausted ? 0 : this.ledger.remaining(bucket),
      used: bucket.used,
      reset: this.ledger.resetEpochSeconds(bucket),
      resource: bucket.resource,
    };
  }

  /** Injected 5xx, forced secondary, real secondary limits. Returns true when the request was stopped. */
  private refused(
    outcome: Outcome,
    identity: Identity,
    endpoint: string,
    points: number,
    contentCreating: boolean,
  ): boolean {
    const protocol = outcome.protocol;
    const concurrency = outcome.concurrency;
    if (concurrency !== undefined) {
      outcome.reject(this.ledger.limits.secondaryStatus, concurrency.message, SECONDARY_DOCS);
      outcome.limited = 'secondary';
      outcome.retryAfter = concurrency.retryAfter;
      return true;
    }
    if (this.faults.size > 0) {
      const status = this.faults.error(protocol, outcome.route);
      if (status !== undefined) {
        this.counters.injectedErrors++;
        const message =
          status === 503 ? 'Service Unavailable' : status === 502 ? 'Server Error' : 'Internal Server Error';
        outcome.reject(status, message, 'https://www.githubstatus.com');
        return true;
      }
      const forced = this.faults.secondary(protocol, outcome.route);
      if (forced !== undefined) {
        outcome.reject(
          this.ledger.limits.secondaryStatus,
          'You have exceeded a secondary rate limit (injected fault). Please wait a few minutes before you try again.',
          SECONDARY_DOCS,
        );
        outcome.limited = 'secondary';
        outcome.retryAfter =
          forced.retryAfterS ?? (forced.endsAt !== undefined ? this.ledger.secondsUntil(forced.endsAt) : 60);
        return true;
      }
    }
    const breach = this.ledger.secondary(identity, endpoint, points, protocol === 'graphql', contentCreating);
    if (breach === undefined) return false;
    outcome.reject(this.ledger.limits.secondaryStatus, breach.message, SECONDARY_DOCS);
    outcome.limited = 'secondary';
    outcome.retryAfter = breach.retryAfter;
    return true;
  }

  private primaryMessage(identity: Identity): string {
    if (identity.kind === 'unauthenticated') {
      return `API rate limit exceeded for ${identity.ip}. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)`;
    }
    if (identity.kind === 'actions' || identity.kind === 'installation')
      return `API rate limit exceeded for installation ID ${identity.userId}.`;
    return `API rate limit exceeded for user ID ${identity.userId}.`;
  }

  private restOutcome(
    outcome: Outcome,
    req: EmulatorRequest,
    method: string,
    pathname: string,
    qs: string,
    prefix: string,
    identity: Identity,
    token: TokenInfo | undefined,
  ): void {
    const params: string[] = [];
    const route = this.router.match(method, pathname, params);
    const inm = req.headers['if-none-match'];
    const resource: Resource = route?.resource ?? 'core';
    const bucket = this.ledger.bucket(identity, resource);
    const points = route?.points ?? (method === 'GET' || method === 'HEAD' ? 1 : 5);
    outcome.resource = resource;
    outcome.bucket = bucket;
    outcome.conditional = inm !== undefined || req.headers['if-modified-since'] !== undefined;
    if (route !== undefined) {
      outcome.route = route.template;
      if (route.repoParams) outcome.repo = `${params[route.repoParams[0]]}/${params[route.repoParams[1]]}`;
      if (this.attribution.size > 0 || this.alwaysAttributeContent) {
        outcome.touched = touchedByRoute(route.paramNames, params, qs);
        if (req.body !== undefined && method !== 'GET') touchedByBody(outcome.touched, req.body);
      }
    }
    const endpoint = route?.endpoint ?? `${method} (unmatched)`;
    if (route !== undefined) {
      // A credential on a route it may not call (a JWT off the App's routes, an installation
      // token on a repository it does not reach): refused before anything is charged.
      const gate = appGate(endpoint, outcome.repo, token, this.apps);
      if (gate !== undefined) {
        outcome.reject(gate.status, gate.message, route.docs);
        return;
      }
    }
    const contentCreating = route?.contentCreating ?? false;
    if (this.refused(outcome, identity, endpoint, points, contentCreating)) return;
    outcome.secondaryCost = points;
    const free = route?.free ?? false;
    if (!free && this.ledger.remaining(bucket) === 0) {
      // Refused requests charge nothing: give back the secondary points just taken.
      this.counters.limitedPrimary++;
      this.ledger.refundSecondary(identity, endpoint, points, false, contentCreating);
      outcome.reject(this.ledger.limits.primaryStatus, this.primaryMessage(identity), RATE_DOCS);
      outcome.limited = 'primary';
      return;
    }
    if (route === undefined) {
      this.ledger.charge(bucket, 1);
      outcome.status = 404;
      outcome.body = errorBody('Not Found', {}, undefined, 404);
      outcome.cost = 1;
      outcome.error = `Not Found: ${pathname}`;
      return;
    }
    let body: unknown;
    if (req.body !== undefined && req.body !== '') {
      try {
        body = JSON.parse(req.body);
      } catch {
        this.ledger.charge(bucket, 1);
        outcome.status = 400;
        outcome.body = errorBody('Problems parsing JSON', {}, route.docs, 400);
        outcome.cost = 1;
        outcome.error = 'Problems parsing JSON';
        return;
      }
    }
    const format = mediaFormat(req.headers.accept);
    // The ETag is the body's content hash, per token (GitHub varies ETags on Authorization). A
    // version seen before remembers its hash, so a conditional request for an unchanged answer
    // is a 304 without rendering; a changed version is rendered and hashed, and an identical
    // body still answers 304.
    const salt = token?.etagSalt ?? identity.etagSalt;
    let memoKey: string | undefined;
    const result = route.handler({
      state: this.state,
      params,
      query: parseQuery(qs),
      qs,
      body,
      user: token?.user,
      token,
      identity,
      ledger: this.ledger,
      format,
      notModified:
        inm === undefined
          ? undefined
          : (version: number) => {
              memoKey ??= this.hashMemoKey(pathname, qs, token, format);
              const known = this.hashMemo.get(memoKey);
              return known !== undefined &&
                known.version === version &&
                known.epoch === this.state.urlEpoch &&
                etagMatches(inm, `W/"${salt}${known.hash}"`)
                ? known.hash
                : undefined;
            },
    });
    outcome.status = result.status;
    outcome.body =
      result.problem !== undefined
        ? errorBody(result.error ?? '', result.problem, route.docs, result.status)
        : method === 'HEAD'
          ? ''
          : result.body;
    outcome.error = result.error;
    outcome.lastModified = result.lastModified;
    outcome.contentType = result.contentType;
    outcome.mediaType = result.mediaType;
    outcome.location = result.location;
    if (result.version !== undefined && result.status === 200) {
      let hash = result.hash;
      if (hash === undefined) {
        hash = bodyHash(result.body);
        memoKey ??= this.hashMemoKey(pathname, qs, token, format);
        if (this.hashMemo.size >= 20_000) this.hashMemo.clear();
        this.hashMemo.set(memoKey, { version: result.version, epoch: this.state.urlEpoch, hash });
      }
      const etag = `W/"${salt}${hash}"`;
      outcome.etag = etag;
      if (inm !== undefined ? etagMatches(inm, etag) : this.notModifiedSince(req, result.lastModified)) {
        outcome.status = 304;
        outcome.body = '';
        outcome.notModified = true;
        this.counters.notModified++;
      }
    }
    if (result.page !== undefined && result.page.last > 1 && !outcome.notModified) {
      outcome.link = this.linkHeader(req, prefix, pathname, qs, result.page.page, result.page.last);
    }
    // Authenticated 304s are free; unauthenticated ones are charged (GitHub's rule).
    const cost = free || (outcome.notModified && token !== undefined) ? 0 : 1;
    this.ledger.charge(bucket, cost);
    outcome.cost = cost;
  }

  private linkHeader(
    req: EmulatorRequest,
    prefix: string,
    pathname: string,
    qs: string,
    page: number,
    last: number,
  ): string {
    const origin = req.baseUrl ?? (req.headers.host ? `http://${req.headers.host}` : this.state.apiUrl);
    const rest = qs === '' ? [] : qs.split('&').filter((p) => p !== '' && !p.startsWith('page='));
    const url = (n: number) => `<${origin}${prefix}${pathname}?${[...rest, `page=${n}`].join('&')}>`;
    const links: string[] = [];
    if (page > 1) links.push(`${url(Math.min(page - 1, last))}; rel="prev"`);
    if (page < last) links.push(`${url(page + 1)}; rel="next"`);
    if (page < last) links.push(`${url(last)}; rel="last"`);
    if (page > 1) links.push(`${url(1)}; rel="first"`);
    return links.join(', ');
  }

  private graphqlOutcome(
    outcome: Outcome,
    req: EmulatorRequest,
    method: string,
    identity: Identity,
    token: TokenInfo | undefined,
  ): void {
    const bucket = this.ledger.bucket(identity, 'graphql');
    outcome.route = '/graphql';
    outcome.protocol = 'graphql';
    outcome.resource = 'graphql';
    outcome.bucket = bucket;
    // GraphQL answers carry no ETag: a conditional POST is recorded as such and charged in full.
    outcome.conditional = req.headers['if-none-match'] !== undefined;
    if (method !== 'POST') {
      outcome.reject(404, 'Not Found', GRAPHQL_DOCS);
      return;
    }
    if (token === undefined) {
      outcome.reject(
        401,
        'This endpoint requires you to be authenticated.',
        `${GRAPHQL_DOCS}/guides/forming-calls-with-graphql#authenticating-with-graphql`,
      );
      return;
    }
    if (token.app?.jwt === true) {
      // A JWT reaches the App's REST routes only (docs/github-emulator.md, "Apps").
      outcome.reject(401, 'Bad credentials', GRAPHQL_DOCS);
      return;
    }
    const prepared = this.graphql.prepare(req.body);
    outcome.op = prepared.opName;
    if (!prepared.ok) {
      if (this.refused(outcome, identity, 'POST /graphql', 1, false)) return;
      outcome.status = prepared.status;
      outcome.body = prepared.body;
      outcome.error = prepared.error;
      outcome.secondaryCost = 1;
      return;
    }
    outcome.repo = prepared.repo;
    const points = prepared.mutation ? 5 : 1;
    if (this.refused(outcome, identity, 'POST /graphql', points, prepared.contentCreating)) return;
    outcome.secondaryCost = points;
    if (prepared.cost > this.ledger.remaining(bucket) || bucket.limit === 0) {
      // GitHub answers a GraphQL primary-limit breach with 200 and an error body.
      // GitHub: "the response status will still be 200, but you will receive an error message,
      // and the value of the x-ratelimit-remaining header will be 0" (also when what remains is
      // more than 0 but less than this query's cost). Refused: no secondary point either.
      this.counters.limitedPrimary++;
      this.ledger.refundSecondary(identity, 'POST /graphql', points, true, prepared.contentCreating);
      const message = this.primaryMessage(identity);
      outcome.body = JSON.stringify({ errors: [{ type: 'RATE_LIMITED', message }] });
      outcome.error = message;
      outcome.secondaryCost = 0;
      outcome.limited = 'primary';
      outcome.exhausted = true;
      return;
    }
    this.ledger.charge(bucket, prepared.cost);
    outcome.cost = prepared.cost;
    const view = this.ledger.view(bucket);
    if (this.attribution.size > 0 || this.alwaysAttributeContent)
      this.state.touched = outcome.touched = newTouched();
    const executed = this.graphql.execute(prepared, this.state, token.user, {
      limit: view.limit,
      cost: prepared.cost,
      remaining: view.remaining,
      used: view.used,
      resetAt: new Date(view.reset * 1000).toISOString().replace('.000Z', 'Z'),
      nodeCount: prepared.nodeCount,
    });
    this.state.touched = undefined;
    outcome.body = executed.body;
    if (executed.error !== undefined) outcome.error = executed.error;
    if (executed.touched !== undefined) outcome.repo ??= executed.touched;
  }

  /** 401 for an unknown token: not charged, rate headers of the client's IP. */
  private badCredentials(
    req: EmulatorRequest,
    method: string,
    pathname: string,
    t0: number,
    tokenText: string,
  ): EmulatorResponse {
    const identity = this.ledger.ipIdentity(req.remoteAddress);
    const graphql = pathname === '/graphql';
    const outcome = new Outcome();
    outcome.protocol = graphql ? 'graphql' : 'rest';
    outcome.resource = graphql ? 'graphql' : 'core';
    outcome.route = graphql
      ? '/graphql'
      : (this.router.match(method, pathname, [])?.template ?? '(unmatched)');
    outcome.bucket = this.ledger.bucket(identity, outcome.resource);
    // A JWT gets GitHub's reason for refusing it (apps.ts), one past APP_BOUNDS' length too
    // (undecodable, unparsed: docs/limits.md); anything else, `Bad credentials`.
    const message =
      this.apps.size > 0 && jwtShaped(tokenText)
        ? (this.apps.verifyJwt(tokenText) as { message?: string }).message
        : undefined;
    outcome.reject(401, message ?? 'Bad credentials', 'https://docs.github.com/rest');
    this.stampRate(outcome);
    return this.finish(req, method, outcome, undefined, t0);
  }

  private attributionOf(req: EmulatorRequest, token: TokenInfo | undefined): Attribution {
    const h = this.attributionHeaders ? req.headers : NO_HEADERS;
    const out: Attribution = {};
    const project = h[ATTRIBUTION_HEADERS.project] ?? token?.project;
    if (project) out.project = project;
    const session =
      h[ATTRIBUTION_HEADERS.session] ??
      token?.session ??
      (token !== undefined && this.tokenSession !== undefined ? this.tokenSession(token.token) : undefined);
    if (session) out.session = session;
    const source = h[ATTRIBUTION_HEADERS.source];
    if (source !== undefined && SOURCE_SET.has(source)) out.source = source as ApiSource;
    else if (token?.source) out.source = token.source;
    const op = h[ATTRIBUTION_HEADERS.op];
    if (op) out.op = op;
    const cycle = h[ATTRIBUTION_HEADERS.cycle];
    if (cycle !== undefined) {
      const n = Number(cycle);
      if (Number.isInteger(n)) out.cycle = n;
    }
    const phase = h[ATTRIBUTION_HEADERS.phase];
    if (phase) out.phase = phase;
    return out;
  }

  private finish(
    req: EmulatorRequest,
    method: string,
    outcome: Outcome,
    token: TokenInfo | undefined,
    t0: number,
  ): EmulatorResponse {
    const rl = outcome.rl;
    const body = outcome.body;
    const bytes = byteLength(body);
    // Built in its final order, never deleted from: a `delete` turns the object into a
    // dictionary that every later read (writeHead walks it) pays for, on every 304.
    const headers: Record<string, string> = outcome.notModified
      ? {}
      : { 'content-type': outcome.contentType ?? 'application/json; charset=utf-8' };
    headers['content-length'] = String(bytes);
    headers['x-github-api-version-selected'] = '2022-11-28';
    headers['x-github-media-type'] = outcome.mediaType ?? 'github.v3; format=json';
    headers['x-github-request-id'] = `FB${(++this.requestSeq).toString(16).toUpperCase()}`;
    if (rl !== undefined) {
      headers['x-ratelimit-limit'] = String(rl.limit);
      headers['x-ratelimit-remaining'] = String(rl.remaining);
      headers['x-ratelimit-reset'] = String(rl.reset);
      headers['x-ratelimit-used'] = String(rl.used);
      headers['x-ratelimit-resource'] = rl.resource!;
    } else {
      headers['x-ratelimit-limit'] = '';
      headers['x-ratelimit-remaining'] = '';
      headers['x-ratelimit-reset'] = '';
      headers['x-ratelimit-used'] = '';
      headers['x-ratelimit-resource'] = '';
    }
    if (token !== undefined) headers['x-oauth-scopes'] = 'repo, read:org, workflow';
    if (outcome.etag !== undefined) {
      headers.etag = outcome.etag;
      headers['cache-control'] = token
        ? 'private, max-age=60, s-maxage=60'
        : 'public, max-age=60, s-maxage=60';
      headers.vary = 'Accept, Authorization, Cookie, X-GitHub-OTP';
    }
    if (outcome.lastModified !== undefined)
      headers['last-modified'] = new Date(this.clock.toWallMs(outcome.lastModified)).toUTCString();
    if (outcome.link !== undefined) headers.link = outcome.link;
    // A header holds Latin-1 only (Node throws on more): a URL naming a branch `gałąź` goes out
    // percent-encoded, as GitHub's does.
    if (outcome.location !== undefined)
      headers.location = /[^\x21-\x7e]/.test(outcome.location)
        ? encodeURI(outcome.location)
        : outcome.location;
    if (outcome.retryAfter !== undefined) headers['retry-after'] = String(outcome.retryAfter);
    this.counters.requests++;
    this.onRequest?.(token);
    this.byStatus.set(outcome.status, (this.byStatus.get(outcome.status) ?? 0) + 1);
    if (outcome.limited === 'secondary') this.counters.limitedSecondary++;
    const trace = this.trace;
    // A request recorded as cancelled when the server stopped is not recorded again.
    if (trace !== undefined && req.cancelled !== true) {
      const record: ApiRecord = {
        kind: 'api',
        t: t0,
        dur: this.clock.now() - t0,
        service: 'github',
        protocol: outcome.protocol,
        method,
        route: outcome.route,
        status: outcome.status,
        conditional: outcome.conditional,
        notModified: outcome.notModified,
        resource: outcome.resource,
        cost: outcome.cost,
        secondaryCost: outcome.secondaryCost,
      };
      if (rl) record.rl = rl;
      record.bytes = bytes;
      if (outcome.retryAfter !== undefined) record.retryAfter = outcome.retryAfter;
      if (outcome.limited) record.limited = outcome.limited;
      if (outcome.error) record.error = outcome.error;
      const a = this.attributionOf(req, token);
      if (outcome.touched !== undefined && a.session === undefined) {
        outcome.touched.repo = outcome.repo;
        const found = this.attribution.resolve(outcome.touched);
        if (found.session !== undefined) a.session = found.session;
        if (found.cycle !== undefined && a.cycle === undefined) a.cycle = found.cycle;
        if (found.source !== undefined && a.source === undefined) a.source = found.source;
      }
      if (a.project) record.project = a.project;
      if (a.session) record.session = a.session;
      // With content attribution on: whether the call named a piece of work (and whose).
      if (outcome.touched !== undefined)
        record.scope = a.session ? 'session' : namesNothing(outcome.touched) ? 'shared' : 'unresolved';
      if (outcome.repo) record.repo = outcome.repo;
      if (a.source) record.source = a.source;
      if (a.op) record.op = a.op;
      else if (outcome.op) record.op = outcome.op;
      if (a.cycle !== undefined) record.cycle = a.cycle;
      if (a.phase) record.phase = a.phase;
      trace.write(record);
      this.counters.traceRecords++;
    }
    return { status: outcome.status, headers, body };
  }
}
