/**
 * Emulator options as the user gives them (`EmulatorLimitsInput`, `LatencyInput`) and as the
 * emulator uses them (`EmulatorLimits`, `LatencyConfig`), with every default written down here,
 * in one place. The numbers are GitHub's published ones (docs.github.com, "Rate limits for the
 * REST API" and "Rate limits and node limits for the GraphQL API").
 */

/** Rate-limit resources reported by `GET /rate_limit`, in GitHub's order. */
export const RESOURCES = [
  'core',
  'search',
  'graphql',
  'integration_manifest',
  'source_import',
  'code_scanning_upload',
  'actions_runner_registration',
  'scim',
  'dependency_snapshots',
  'audit_log',
  'audit_log_streaming',
  'code_search',
] as const;
export type Resource = (typeof RESOURCES)[number];

/**
 * Who a request is charged to. `user`: a personal token (5,000/h); `enterprise`: a GitHub App on
 * Enterprise Cloud (15,000/h); `actions`: a workflow's GITHUB_TOKEN (1,000/h per repository);
 * `installation`: a GitHub App installation's token (`ghs_`, 5,000/h scaled by the installation's
 * repositories and users, apps.ts); `unauthenticated`: per client IP (60/h).
 */
export const IDENTITY_KINDS = ['user', 'enterprise', 'actions', 'installation', 'unauthenticated'] as const;
export type IdentityKind = (typeof IDENTITY_KINDS)[number];

export type ResourceLimits = Record<Resource, number>;

export interface SecondaryLimits {
  /** Concurrent requests per identity, REST and GraphQL together. */
  concurrent: number;
  /** Points per minute per REST endpoint (method + route): GET/HEAD/OPTIONS 1, writes 5. */
  restPointsPerMinute: number;
  /** Points per minute for GraphQL: 1 per query, 5 per mutation. */
  graphqlPointsPerMinute: number;
  /** Content-creating requests (comments, PRs, issues) per minute and per hour. */
  contentPerMinute: number;
  contentPerHour: number;
  /**
   * `retry-after` (s) sent for a concurrency breach: 60, the minute GitHub tells clients to wait
   * when no header says otherwise; 0 sends no header (the client then waits that minute itself).
   */
  concurrencyRetryAfterS: number;
  /**
   * CPU time per minute, REST and GraphQL together, in ms: GitHub allows 90 s per 60 s of real
   * time, estimated by "the total response time"; here the modelled response time (latency).
   */
  cpuMsPerMinute: number;
  /** Of which GraphQL may use (60 s per minute on GitHub). */
  graphqlCpuMsPerMinute: number;
}

export interface EmulatorLimits {
  /** Primary limits per identity kind and resource. 0 means "not allowed" (GraphQL unauthenticated: 401). */
  primary: Record<IdentityKind, ResourceLimits>;
  /** Window length per resource: an hour, except search and code search (a minute). */
  windowMs: Record<Resource, number>;
  secondary: SecondaryLimits;
  /** Status for an exhausted primary limit (GitHub sends 403, sometimes 429). */
  primaryStatus: 403 | 429;
  /** Status for a secondary-limit answer. */
  secondaryStatus: 403 | 429;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

function resources(core: number, graphql: number, search: number, codeSearch: number): ResourceLimits {
  return {
    core,
    search,
    graphql,
    integration_manifest: 5_000,
    source_import: 100,
    code_scanning_upload: 1_000,
    actions_runner_registration: 10_000,
    scim: 15_000,
    dependency_snapshots: 100,
    audit_log: 1_750,
    audit_log_streaming: 15,
    code_search: codeSearch,
  };
}

export function defaultLimits(): EmulatorLimits {
  const windowMs = Object.fromEntries(RESOURCES.map((r) => [r, HOUR])) as Record<Resource, number>;
  windowMs.search = MINUTE;
  windowMs.code_search = MINUTE;
  return {
    primary: {
      user: resources(5_000, 5_000, 30, 10),
      enterprise: resources(15_000, 10_000, 30, 10),
      actions: resources(1_000, 1_000, 30, 10),
      // The floor of an installation's limit; apps.ts scales it by repositories and users.
      installation: resources(5_000, 5_000, 30, 10),
      unauthenticated: { ...resources(60, 0, 10, 0), integration_manifest: 0, scim: 0 },
    },
    windowMs,
    secondary: {
      concurrent: 100,
      restPointsPerMinute: 900,
      graphqlPointsPerMinute: 2_000,
      contentPerMinute: 80,
      contentPerHour: 500,
      concurrencyRetryAfterS: 60,
      cpuMsPerMinute: 90_000,
      graphqlCpuMsPerMinute: 60_000,
    },
    primaryStatus: 403,
    secondaryStatus: 403,
  };
}

/** What a user may override: any subset, merged over the defaults. */
export interface EmulatorLimitsInput {
  primary?: Partial<Record<IdentityKind, Partial<ResourceLimits>>>;
  windowMs?: Partial<Record<Resource, number>>;
  secondary?: Partial<SecondaryLimits>;
  primaryStatus?: 403 | 429;
  secondaryStatus?: 403 | 429;
}

export function resolveLimits(input: EmulatorLimitsInput = {}): EmulatorLimits {
  const limits = defaultLimits();
  for (const kind of IDENTITY_KINDS) {
    Object.assign(limits.primary[kind], input.primary?.[kind] ?? {});
  }
  Object.assign(limits.windowMs, input.windowMs ?? {});
  Object.assign(limits.secondary, input.secondary ?? {});
  if (input.primaryStatus) limits.primaryStatus = input.primaryStatus;
  if (input.secondaryStatus) limits.secondaryStatus = input.secondaryStatus;
  return limits;
}

/**
 * Parses `--limit` flags: `core=100` (user tokens), `enterprise.core=15000`,
 * `unauthenticated.core=60`, `window.core=60000`, `secondary.concurrent=10`,
 * `primaryStatus=429`. Returns an error message for a bad one.
 */
export function applyLimitFlag(input: EmulatorLimitsInput, flag: string): string | undefined {
  const eq = flag.indexOf('=');
  if (eq <= 0) return `--limit ${flag}: expected KEY=NUMBER`;
  const key = flag.slice(0, eq);
  const value = Number(flag.slice(eq + 1));
  if (!Number.isFinite(value) || value < 0) return `--limit ${flag}: expected a non-negative number`;
  const parts = key.split('.');
  if (parts.length === 1 && (key === 'primaryStatus' || key === 'secondaryStatus')) {
    if (value !== 403 && value !== 429) return `--limit ${flag}: status must be 403 or 429`;
    input[key] = value;
    return undefined;
  }
  const [head, tail] = parts.length === 1 ? ['user', parts[0]!] : [parts[0]!, parts[1]!];
  if (parts.length > 2) return `--limit ${flag}: unknown key '${key}'`;
  if (head === 'secondary') {
    if (!(tail in defaultLimits().secondary)) return `--limit ${flag}: unknown secondary limit '${tail}'`;
    input.secondary = { ...input.secondary, [tail]: value };
    return undefined;
  }
  if (!(RESOURCES as readonly string[]).includes(tail)) return `--limit ${flag}: unknown resource '${tail}'`;
  if (head === 'window') {
    input.windowMs = { ...input.windowMs, [tail]: value };
    return undefined;
  }
  if (!(IDENTITY_KINDS as readonly string[]).includes(head)) {
    return `--limit ${flag}: unknown identity kind '${head}' (one of ${IDENTITY_KINDS.join(', ')})`;
  }
  const kind = head as IdentityKind;
  input.primary = { ...input.primary, [kind]: { ...input.primary?.[kind], [tail]: value } };
  return undefined;
}

/** A latency distribution stated the way latency is usually quoted. */
export interface LatencySpec {
  medianMs: number;
  p95Ms: number;
}

/**
 * Base latency per protocol, drawn from a seeded log-normal inside `handle()`. `false` or 0 turns
 * it off. Defaults (virtual runs): REST 60 ms median / 250 ms p95, GraphQL 120 / 500 ms; the
 * HTTP server (`github serve`) has none unless `--latency` is given, the network is real there.
 */
export type LatencyInput = false | 0 | Partial<Record<'rest' | 'graphql', LatencySpec | null>>;

export interface LatencyConfig {
  rest: LatencySpec | null;
  graphql: LatencySpec | null;
}

export const DEFAULT_LATENCY: LatencyConfig = {
  rest: { medianMs: 60, p95Ms: 250 },
  graphql: { medianMs: 120, p95Ms: 500 },
};

export function resolveLatency(input: LatencyInput | undefined): LatencyConfig {
  if (input === false || input === 0) return { rest: null, graphql: null };
  if (input === undefined) return { ...DEFAULT_LATENCY };
  const check = (spec: LatencySpec | null | undefined, fallback: LatencySpec | null) => {
    if (spec === undefined) return fallback;
    if (spec === null || spec.medianMs <= 0) return null;
    if (!(spec.p95Ms >= spec.medianMs)) throw new RangeError('latency p95 must be at least the median');
    return spec;
  };
  return {
    rest: check(input.rest, DEFAULT_LATENCY.rest),
    graphql: check(input.graphql, DEFAULT_LATENCY.graphql),
  };
}

/** Parses `--latency MEDIAN[:P95]` (ms, both protocols; p95 defaults to 4 × median), or `0`. */
export function parseLatencyFlag(text: string): LatencyInput | string {
  if (text === '0' || text === 'off' || text === 'none') return false;
  const [m, p] = text.split(':');
  const medianMs = Number(m);
  const p95Ms = p === undefined ? medianMs * 4 : Number(p);
  if (!(medianMs > 0) || !(p95Ms >= medianMs)) {
    return `--latency ${text}: expected MEDIAN[:P95] in ms with P95 >= MEDIAN > 0, or 0`;
  }
  return { rest: { medianMs, p95Ms }, graphql: { medianMs, p95Ms } };
}
