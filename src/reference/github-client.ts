/**
 * The reference control plane's GitHub client: a thin layer over a GitHubTransport (in-process
 * or HTTP, the same request path a real client uses). It adds the token, conditional-request
 * headers and attribution headers, and it backs off the way a well-behaved client (Octokit's
 * throttling plugin) does: after a secondary-limit answer no request leaves until `retry-after`
 * is over; after a primary-limit answer (remaining 0) none of that resource's requests leaves
 * until `x-ratelimit-reset`. It can also pace itself (`maxRps`), which is how a control plane
 * keeps its bursts under GitHub's guidance and the Track B row of 30 req/s.
 */
import type { Clock } from '../clock/clock.ts';
import { ATTRIBUTION_HEADERS, type EmulatorResponse, type GitHubTransport } from '../github/types.ts';
import type { ApiSource } from '../trace/schema.ts';

export interface CallAttribution {
  source: ApiSource;
  /** Absent: the call names no operation (a learned replay of calls that carried none). */
  op?: string;
  session?: string;
  cycle?: number;
  phase?: string;
  project?: string;
}

export interface GitHubResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  etag?: string;
  /** Parsed JSON body, or undefined for an empty or non-JSON body. */
  json: unknown;
}

export interface RequestOptions {
  /** Send If-None-Match with this ETag. */
  etag?: string;
  body?: unknown;
}

export class GitHubClient {
  /** Run time until which requests wait: all of them (secondary limit), or one resource's. */
  private pausedUntil = 0;
  private readonly resourcePausedUntil = new Map<string, number>();
  /** Answers that were 304, 4xx and 5xx: the control plane's own view of its traffic. */
  readonly stats = { requests: 0, notModified: 0, errors: 0, limited: 0 };

  /** Pacing: request starts are at least this far apart (0: unpaced). */
  private readonly spacingMs: number;
  private nextStart = 0;

  constructor(
    private readonly transport: GitHubTransport,
    private readonly token: string,
    private readonly clock: Clock,
    options: { maxRps?: number } = {},
  ) {
    this.spacingMs = options.maxRps && options.maxRps > 0 ? 1_000 / options.maxRps : 0;
  }

  async request(
    method: string,
    path: string,
    attr: CallAttribution,
    options: RequestOptions = {},
  ): Promise<GitHubResult> {
    const resource = path.startsWith('/graphql') ? 'graphql' : 'core';
    const wait = Math.max(this.pausedUntil, this.resourcePausedUntil.get(resource) ?? 0) - this.clock.now();
    if (wait > 0) await this.clock.sleep(wait);
    if (this.spacingMs > 0) {
      // Starts are handed out in call order, one every spacingMs: at most maxRps a second.
      const now = this.clock.now();
      const slot = Math.max(now, this.nextStart);
      this.nextStart = slot + this.spacingMs;
      if (slot > now) await this.clock.sleep(slot - now);
    }
    const headers: Record<string, string> = {
      authorization: `token ${this.token}`,
      accept: 'application/vnd.github+json',
      [ATTRIBUTION_HEADERS.source]: attr.source,
    };
    if (attr.op !== undefined) headers[ATTRIBUTION_HEADERS.op] = attr.op;
    if (attr.session !== undefined) headers[ATTRIBUTION_HEADERS.session] = attr.session;
    if (attr.cycle !== undefined) headers[ATTRIBUTION_HEADERS.cycle] = String(attr.cycle);
    if (attr.phase !== undefined) headers[ATTRIBUTION_HEADERS.phase] = attr.phase;
    if (attr.project !== undefined) headers[ATTRIBUTION_HEADERS.project] = attr.project;
    if (options.etag) headers['if-none-match'] = options.etag;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    this.stats.requests++;
    const response = await this.transport.request({ method, path, headers, body });
    return this.finish(response);
  }

  get(path: string, attr: CallAttribution, etag?: string): Promise<GitHubResult> {
    return this.request('GET', path, attr, { etag });
  }

  graphql(query: string, attr: CallAttribution): Promise<GitHubResult> {
    return this.request('POST', '/graphql', attr, { body: { query } });
  }

  private finish(response: EmulatorResponse): GitHubResult {
    const { status, headers } = response;
    if (status === 304) this.stats.notModified++;
    else if (status >= 400) this.stats.errors++;
    const retryAfter = headers['retry-after'];
    const limited =
      status === 403 || status === 429 || (status === 200 && headers['x-ratelimit-remaining'] === '0');
    if (limited && retryAfter !== undefined) {
      this.stats.limited++;
      this.pausedUntil = Math.max(this.pausedUntil, this.clock.now() + Number(retryAfter) * 1_000);
    } else if (
      limited &&
      headers['x-ratelimit-remaining'] === '0' &&
      headers['x-ratelimit-reset'] !== undefined
    ) {
      this.stats.limited++;
      const resource = headers['x-ratelimit-resource'] ?? 'core';
      // The reset is wall-clock epoch seconds; turn it back into run time.
      const resetAt =
        (Number(headers['x-ratelimit-reset']) * 1_000 - this.clock.epochMs) * this.clock.timeScale;
      this.resourcePausedUntil.set(resource, Math.max(this.resourcePausedUntil.get(resource) ?? 0, resetAt));
    }
    let json: unknown;
    if (response.body.length > 0) {
      try {
        json = JSON.parse(response.body);
      } catch {
        json = undefined;
      }
    }
    return { status, headers, body: response.body, etag: headers.etag, json };
  }
}
