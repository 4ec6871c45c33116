/**
 * Quota accounting, the one implementation used in-process and over HTTP.
 *
 * Primary limits: one bucket per identity (user, app, actions repo, client IP) and resource, a
 * fixed window that starts at the first charged request and resets `windowMs` later (an hour for
 * core and GraphQL), as GitHub does. Secondary limits: in-flight requests per identity, points per
 * minute per REST endpoint and for GraphQL, and content-creating requests per minute and hour,
 * each a fixed window from its first use.
 *
 * Times are run-time ms; what clients see (x-ratelimit-reset, retry-after) goes through the
 * clock, so a scaled real clock reports real reset times and a virtual run is deterministic.
 */
import type { Clock } from '../clock/index.ts';
import {
  type EmulatorLimits,
  type IdentityKind,
  RESOURCES,
  type Resource,
  type ResourceLimits,
} from './config.ts';

export interface Bucket {
  readonly resource: Resource;
  limit: number;
  readonly windowMs: number;
  used: number;
  /** Run time at which the window ends; NaN while no window is open (nothing charged yet). */
  resetAt: number;
}

/** A fixed window for secondary limits. */
export interface Window {
  end: number;
  used: number;
}

export interface Identity {
  /** `user:login`, `actions:owner/repo`, `ip:127.0.0.1`. */
  readonly key: string;
  readonly kind: IdentityKind;
  readonly login?: string;
  /** Numeric id named in GitHub's "API rate limit exceeded for user ID n." */
  readonly userId?: number;
  readonly ip?: string;
  readonly repo?: string;
  limits: ResourceLimits;
  readonly buckets: Map<Resource, Bucket>;
  inFlight: number;
  /** Peak in-flight requests seen (for the admin API and tests). */
  peakInFlight: number;
  readonly restPoints: Map<string, Window>;
  readonly graphqlPoints: Window;
  readonly contentMinute: Window;
  readonly contentHour: Window;
  /** Response time (ms) in the current minute, all requests and GraphQL's: the CPU-time limit. */
  readonly cpu: Window;
  readonly graphqlCpu: Window;
  /** ETag salt for unauthenticated requests (per IP); tokens have their own. */
  readonly etagSalt: string;
}

/** What a client sees of one bucket: the x-ratelimit-* values and the /rate_limit entry. */
export interface RateView {
  limit: number;
  remaining: number;
  used: number;
  /** Epoch seconds. */
  reset: number;
  resource: Resource;
}

export type SecondaryKind =
  | 'concurrency'
  | 'rest-points'
  | 'graphql-points'
  | 'content-minute'
  | 'content-hour'
  | 'cpu-time';

export interface SecondaryBreach {
  kind: SecondaryKind;
  /** Seconds the client should wait (real seconds under a scaled clock); none: no retry-after header. */
  retryAfter: number | undefined;
  message: string;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

export class QuotaLedger {
  private readonly clock: Clock;
  readonly limits: EmulatorLimits;
  readonly identities = new Map<string, Identity>();
  private serial = 0;

  constructor(clock: Clock, limits: EmulatorLimits) {
    this.clock = clock;
    this.limits = limits;
  }

  /** The identity for a key, created on first sight with its kind's limits. */
  identity(
    kind: IdentityKind,
    key: string,
    extra: { login?: string; userId?: number; ip?: string; repo?: string } = {},
  ): Identity {
    const existing = this.identities.get(key);
    if (existing) return existing;
    const identity: Identity = {
      key,
      kind,
      ...extra,
      limits: { ...this.limits.primary[kind] },
      buckets: new Map(),
      inFlight: 0,
      peakInFlight: 0,
      restPoints: new Map(),
      graphqlPoints: { end: Number.NEGATIVE_INFINITY, used: 0 },
      contentMinute: { end: Number.NEGATIVE_INFINITY, used: 0 },
      contentHour: { end: Number.NEGATIVE_INFINITY, used: 0 },
      cpu: { end: Number.NEGATIVE_INFINITY, used: 0 },
      graphqlCpu: { end: Number.NEGATIVE_INFINITY, used: 0 },
      etagSalt: `i${(++this.serial).toString(36)}`,
    };
    this.identities.set(key, identity);
    return identity;
  }

  /** The client's unauthenticated identity (60/h per IP). */
  ipIdentity(ip: string | undefined): Identity {
    const addr = ip ?? 'in-process';
    return this.identity('unauthenticated', `ip:${addr}`, { ip: addr });
  }

  /** The current window of a bucket; an expired window is closed (used back to 0). */
  bucket(identity: Identity, resource: Resource): Bucket {
    let bucket = identity.buckets.get(resource);
    if (bucket === undefined) {
      bucket = {
        resource,
        limit: identity.limits[resource],
        windowMs: this.limits.windowMs[resource],
        used: 0,
        resetAt: Number.NaN,
      };
      identity.buckets.set(resource, bucket);
    } else if (this.clock.now() >= bucket.resetAt) {
      bucket.used = 0;
      bucket.resetAt = Number.NaN;
    }
    return bucket;
  }

  remaining(bucket: Bucket): number {
    return bucket.limit > bucket.used ? bucket.limit - bucket.used : 0;
  }

  /** Charges points, opening the window if none is open. */
  charge(bucket: Bucket, points: number): void {
    if (points <= 0) return;
    if (Number.isNaN(bucket.resetAt)) bucket.resetAt = this.clock.now() + bucket.windowMs;
    bucket.used += points;
  }

  /** Reset time in epoch seconds; a window not yet open would end a full window from now. */
  resetEpochSeconds(bucket: Bucket): number {
    const at = Number.isNaN(bucket.resetAt) ? this.clock.now() + bucket.windowMs : bucket.resetAt;
    return Math.ceil(this.clock.toWallMs(at) / 1000);
  }

  view(bucket: Bucket): RateView {
    return {
      limit: bucket.limit,
      remaining: this.remaining(bucket),
      used: bucket.used,
      reset: this.resetEpochSeconds(bucket),
      resource: bucket.resource,
    };
  }

  /** The body of `GET /rate_limit` for an identity. */
  rateLimitJson(identity: Identity): RateLimitJson {
    const resources = {} as Record<Resource, RateEntry>;
    for (const resource of RESOURCES) {
      const b = this.bucket(identity, resource);
      resources[resource] = {
        limit: b.limit,
        used: b.used,
        remaining: this.remaining(b),
        reset: this.resetEpochSeconds(b),
      };
    }
    return { resources, rate: { ...resources.core } };
  }

  /** Real seconds until run time `at` (at least 1), for retry-after. */
  secondsUntil(at: number): number {
    const s = Math.ceil((at - this.clock.now()) / this.clock.timeScale / 1000);
    return Math.max(s, 1);
  }

  private use(window: Window, length: number, limit: number, points: number): boolean {
    const now = this.clock.now();
    if (now >= window.end) {
      window.end = now + length;
      window.used = 0;
    }
    if (window.used + points > limit) return false;
    window.used += points;
    return true;
  }

  /**
   * The concurrency limit, checked when a request arrives: refused when the identity already has
   * `concurrent` requests in flight (a refused request is answered at once and never counted in
   * flight itself). GitHub: "No more than 100 concurrent requests are allowed. This limit is
   * shared across the REST API and GraphQL API."
   */
  concurrencyBreach(identity: Identity): SecondaryBreach | undefined {
    const s = this.limits.secondary;
    if (identity.inFlight < s.concurrent) return undefined;
    return {
      kind: 'concurrency',
      // 0: no retry-after header, and a client following GitHub's rules waits at least a minute.
      retryAfter:
        s.concurrencyRetryAfterS > 0
          ? this.secondsUntil(this.clock.now() + s.concurrencyRetryAfterS * 1000)
          : undefined,
      message: `You have exceeded a secondary rate limit: more than ${s.concurrent} concurrent requests. Please wait a few minutes before you try again.`,
    };
  }

  /**
   * Checks and takes the other secondary limits of one request once it is read (the concurrency
   * limit was checked at its arrival). Returns the breach, or undefined when the request may
   * proceed; points and content counts are taken only when it may.
   */
  secondary(
    identity: Identity,
    endpoint: string,
    points: number,
    graphql: boolean,
    contentCreating: boolean,
  ): SecondaryBreach | undefined {
    const s = this.limits.secondary;
    const cpu = this.cpuBreach(identity, graphql);
    if (cpu !== undefined) return cpu;
    if (contentCreating) {
      const minute = identity.contentMinute;
      const hour = identity.contentHour;
      const now = this.clock.now();
      if (now >= minute.end) {
        minute.end = now + MINUTE;
        minute.used = 0;
      }
      if (now >= hour.end) {
        hour.end = now + HOUR;
        hour.used = 0;
      }
      if (minute.used + 1 > s.contentPerMinute) {
        return {
          kind: 'content-minute',
          retryAfter: this.secondsUntil(minute.end),
          message: `You have exceeded a secondary rate limit: more than ${s.contentPerMinute} content-creating requests per minute. Please wait a few minutes before you try again.`,
        };
      }
      if (hour.used + 1 > s.contentPerHour) {
        return {
          kind: 'content-hour',
          retryAfter: this.secondsUntil(hour.end),
          message: `You have exceeded a secondary rate limit: more than ${s.contentPerHour} content-creating requests per hour. Please wait a few minutes before you try again.`,
        };
      }
    }
    if (graphql) {
      if (!this.use(identity.graphqlPoints, MINUTE, s.graphqlPointsPerMinute, points)) {
        return {
          kind: 'graphql-points',
          retryAfter: this.secondsUntil(identity.graphqlPoints.end),
          message: `You have exceeded a secondary rate limit: more than ${s.graphqlPointsPerMinute} points per minute for the GraphQL API. Please wait a few minutes before you try again.`,
        };
      }
    } else {
      let window = identity.restPoints.get(endpoint);
      if (window === undefined) {
        window = { end: Number.NEGATIVE_INFINITY, used: 0 };
        identity.restPoints.set(endpoint, window);
      }
      if (!this.use(window, MINUTE, s.restPointsPerMinute, points)) {
        return {
          kind: 'rest-points',
          retryAfter: this.secondsUntil(window.end),
          message: `You have exceeded a secondary rate limit: more than ${s.restPointsPerMinute} points per minute for ${endpoint}. Please wait a few minutes before you try again.`,
        };
      }
    }
    if (contentCreating) {
      identity.contentMinute.used++;
      identity.contentHour.used++;
    }
    return undefined;
  }

  /** The CPU-time limit: refused while this minute's response time is at the limit. */
  private cpuBreach(identity: Identity, graphql: boolean): SecondaryBreach | undefined {
    const s = this.limits.secondary;
    const now = this.clock.now();
    for (const [window, limit, what] of [
      [identity.cpu, s.cpuMsPerMinute, ''],
      [identity.graphqlCpu, s.graphqlCpuMsPerMinute, ' for the GraphQL API'],
    ] as const) {
      if (window === identity.graphqlCpu && !graphql) continue;
      if (now >= window.end) {
        window.end = now + MINUTE;
        window.used = 0;
      }
      if (window.used >= limit) {
        return {
          kind: 'cpu-time',
          retryAfter: this.secondsUntil(window.end),
          message: `You have exceeded a secondary rate limit: more than ${limit / 1000} seconds of CPU time per minute${what}. Please wait a few minutes before you try again.`,
        };
      }
    }
    return undefined;
  }

  /**
   * Adds a served request's response time (run-time ms, from its arrival to its answer) to its
   * identity's CPU-time windows, when the answer completes: the window in force then takes it.
   */
  chargeCpu(identity: Identity, ms: number, graphql: boolean): void {
    if (!(ms > 0)) return;
    const now = this.clock.now();
    for (const window of graphql ? [identity.cpu, identity.graphqlCpu] : [identity.cpu]) {
      if (now >= window.end) {
        window.end = now + MINUTE;
        window.used = 0;
      }
      window.used += ms;
    }
  }

  /**
   * Gives back what `secondary()` took for a request that a later check refused (the primary
   * limit): refused requests charge nothing. Same instant, so the windows are the same.
   */
  refundSecondary(
    identity: Identity,
    endpoint: string,
    points: number,
    graphql: boolean,
    contentCreating: boolean,
  ): void {
    const window = graphql ? identity.graphqlPoints : identity.restPoints.get(endpoint);
    if (window !== undefined) window.used = Math.max(0, window.used - points);
    if (contentCreating) {
      identity.contentMinute.used = Math.max(0, identity.contentMinute.used - 1);
      identity.contentHour.used = Math.max(0, identity.contentHour.used - 1);
    }
  }

  /** Forgets usage: every identity, or one; every resource, or one. Secondary windows too. */
  reset(identity?: Identity, resource?: Resource): number {
    const targets = identity ? [identity] : [...this.identities.values()];
    for (const id of targets) {
      for (const [r, bucket] of id.buckets) {
        if (resource !== undefined && r !== resource) continue;
        bucket.used = 0;
        bucket.resetAt = Number.NaN;
      }
      if (resource === undefined) {
        id.restPoints.clear();
        for (const w of [id.graphqlPoints, id.contentMinute, id.contentHour, id.cpu, id.graphqlCpu]) {
          w.end = Number.NEGATIVE_INFINITY;
          w.used = 0;
        }
      }
    }
    return targets.length;
  }

  /** Overrides some primary limits of one identity (from a minted token's `limits`). */
  setLimits(identity: Identity, limits: Partial<ResourceLimits>): void {
    Object.assign(identity.limits, limits);
    for (const [resource, bucket] of identity.buckets) bucket.limit = identity.limits[resource];
  }
}

export interface RateEntry {
  limit: number;
  used: number;
  remaining: number;
  reset: number;
}

export interface RateLimitJson {
  resources: Record<Resource, RateEntry>;
  rate: RateEntry;
}
