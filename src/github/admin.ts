/**
 * The admin API: one typed method per operation, callable in-process (`emulator.admin.x(input)`,
 * what the reference control plane uses to script sessions) and over HTTP as
 * `POST /_fleetbench/<kebab-name>` with the same input as a JSON body (GET with query parameters
 * for the read-only ones), guarded by the admin token. One zod schema per method validates the
 * HTTP input and gives the in-process input type, so the two cannot drift apart.
 *
 * Repositories are addressed as `repo: 'owner/name'`, pull requests and issues by `number`, and
 * a commit by `sha` or by the pull request whose head it is.
 */
import { z } from 'zod';
import { describeZodIssues } from '../base/validation.ts';
import type { Clock } from '../clock/index.ts';
import { sources } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { ContentAttribution } from './attribution.ts';
import type { TokenInfo, TokenRegistry } from './auth.ts';
import { RESOURCES, type Resource } from './config.ts';
import { type FaultBoard, faultInputSchema } from './faults.ts';
import { CHECK_CONCLUSIONS, CHECK_STATUSES, REVIEW_STATES, STATUS_STATES } from './fixtures.ts';
import { pullMergeAhead } from './merge-ahead.ts';
import type { Identity, QuotaLedger, RateLimitJson } from './quota.ts';
import { type Commit, type GitHubState, GitHubStateError, type PullRequest, type Repo } from './state.ts';
import type { EmulatorRequest, EmulatorResponse, EmulatorStats } from './types.ts';

const repo = z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'expected owner/name');
/** A commit SHA a caller chooses (else one is drawn from the seed). */
const commitSha = z
  .string()
  .regex(/^[0-9a-f]{40}$/)
  .optional();
const number = z.coerce.number().int().positive();
const who = {
  user: z.string().optional(),
  token: z.string().optional(),
  ip: z.string().optional(),
  repo: repo.optional().describe('for actions tokens: the repository whose quota it is'),
};

export const adminSchemas = {
  mintToken: z
    .object({
      user: z.string().optional(),
      kind: z.enum(['user', 'enterprise', 'actions']).optional(),
      repo: repo.optional(),
      session: z.string().optional(),
      source: z.enum(sources).optional(),
      project: z.string().optional(),
      token: z.string().min(8).optional(),
      limits: z.partialRecord(z.enum(RESOURCES), z.number().int().nonnegative()).optional(),
    })
    .strict(),
  quota: z.object(who).strict(),
  resetQuota: z.object({ ...who, resource: z.enum(RESOURCES).optional() }).strict(),
  snapshotRateLimit: z.object({ ...who, label: z.string().optional() }).strict(),
  listRepos: z.object({}).strict(),
  findPullRequest: z
    .object({ repo, number: number.optional(), head: z.string().optional() })
    .strict()
    .refine((v) => v.number !== undefined || v.head !== undefined, 'give number or head'),
  createIssue: z
    .object({
      repo,
      title: z.string().min(1).optional(),
      body: z.string().optional(),
      user: z.string().optional(),
      labels: z.array(z.string()).optional(),
    })
    .strict(),
  closeIssue: z.object({ repo, number }).strict(),
  openPullRequest: z
    .object({
      repo,
      head: z.string().min(1),
      base: z.string().min(1).optional(),
      title: z.string().min(1).optional(),
      body: z.string().optional(),
      user: z.string().optional(),
      issue: number.optional(),
      draft: z.boolean().optional(),
      sha: commitSha,
    })
    .strict(),
  pushCommit: z
    .object({
      repo,
      number,
      sha: commitSha,
      message: z.string().optional(),
    })
    .strict(),
  pushBranch: z
    .object({
      repo,
      branch: z.string().min(1),
      sha: commitSha,
      message: z.string().optional(),
    })
    .strict(),
  setCheckRun: z
    .object({
      repo,
      number: number.optional(),
      sha: z.string().optional(),
      name: z.string().min(1).default('ci'),
      status: z.enum(CHECK_STATUSES).optional(),
      conclusion: z.enum(CHECK_CONCLUSIONS).nullable().optional(),
    })
    .strict(),
  setStatus: z
    .object({
      repo,
      number: number.optional(),
      sha: z.string().optional(),
      context: z.string().min(1),
      state: z.enum(STATUS_STATES),
      description: z.string().optional(),
      targetUrl: z.string().optional(),
    })
    .strict(),
  postReviewComments: z
    .object({
      repo,
      number,
      count: z.number().int().positive().max(1000).optional(),
      user: z.string().optional(),
      body: z.string().optional(),
      path: z.string().optional(),
    })
    .strict(),
  submitReview: z
    .object({
      repo,
      number,
      state: z.enum(REVIEW_STATES),
      user: z.string().optional(),
      body: z.string().optional(),
    })
    .strict(),
  postIssueComment: z
    .object({ repo, number, body: z.string().optional(), user: z.string().optional() })
    .strict(),
  mergePullRequest: z.object({ repo, number, user: z.string().optional() }).strict(),
  closePullRequest: z.object({ repo, number }).strict(),
  setMergeable: z.object({ repo, number, mergeable: z.boolean().nullable() }).strict(),
  injectFault: faultInputSchema,
  clearFaults: z.object({ id: z.string().optional() }).strict(),
  stats: z.object({}).strict(),
  registerSession: z
    .object({
      session: z.string().min(1),
      repo,
      branch: z.string().min(1).optional(),
      issue: number.optional(),
    })
    .strict(),
  setCycle: z.object({ repo, cycle: z.number().int().nonnegative().nullable() }).strict(),
} as const;

type Schemas = typeof adminSchemas;
export type AdminMethod = keyof Schemas;
export type AdminInput<M extends AdminMethod> = z.input<Schemas[M]>;

/** Methods that only read: also served on GET with query parameters. */
const READ_ONLY = new Set<AdminMethod>([
  'quota',
  'snapshotRateLimit',
  'listRepos',
  'findPullRequest',
  'stats',
]);

export interface MintedToken {
  token: string;
  user: string;
  kind: TokenInfo['kind'];
  repo?: string;
  session?: string;
  source?: string;
  project?: string;
}

export interface QuotaReport {
  identity: string;
  kind: Identity['kind'];
  inFlight: number;
  peakInFlight: number;
  resources: Partial<Record<Resource, { limit: number; used: number; remaining: number; reset: number }>>;
}

export interface PullRequestSummary {
  repo: string;
  number: number;
  state: 'open' | 'closed' | 'merged';
  title: string;
  head: string;
  base: string;
  headSha: string;
  nodeId: string;
  url: string;
  updatedAt: string;
  linkedIssue: number | null;
  reviewDecision: string | null;
  checks: string | null;
  reviewComments: number;
}

export interface RepoSummary {
  repo: string;
  defaultBranch: string;
  openIssues: number[];
  pulls: number;
}

/**
 * The parts of the emulator the admin API works on: the emulator is one (emulator.ts), and this
 * file need not import it (which would import this file back).
 */
export interface AdminHost {
  readonly state: GitHubState;
  readonly ledger: QuotaLedger;
  readonly tokens: TokenRegistry;
  readonly faults: FaultBoard;
  readonly attribution: ContentAttribution;
  readonly clock: Clock;
  readonly adminToken: string;
  readonly trace: TraceSink | undefined;
  stats(): EmulatorStats;
}

export class EmulatorAdmin {
  private readonly emulator: AdminHost;

  constructor(emulator: AdminHost) {
    this.emulator = emulator;
  }

  private get state() {
    return this.emulator.state;
  }

  private summary(pull: PullRequest): PullRequestSummary {
    const issue = pull.issue;
    const commit = issue.repo.commits.get(pull.headSha);
    return {
      repo: issue.repo.fullName,
      number: issue.number,
      state: pull.merged ? 'merged' : issue.state,
      title: issue.title,
      head: pull.head,
      base: pull.base,
      headSha: pull.headSha,
      nodeId: pull.nodeId,
      url: `${this.state.webUrl}/${issue.repo.fullName}/pull/${issue.number}`,
      updatedAt: this.state.time.iso(issue.updatedAt),
      linkedIssue: pull.linkedIssue,
      reviewDecision: this.state.reviewDecision(pull),
      checks: commit ? this.state.checks.rollupState(commit) : null,
      reviewComments: pull.reviewComments.length,
    };
  }

  private pullOf(input: { repo: string; number: number | string }): PullRequest {
    return this.state.pull(this.state.repo(input.repo), Number(input.number));
  }

  private commitOf(input: { repo: string; number?: number | string; sha?: string }): Commit {
    const r = this.state.repo(input.repo);
    if (input.number !== undefined) return r.commits.get(this.state.pull(r, Number(input.number)).headSha)!;
    if (input.sha === undefined)
      throw new GitHubStateError(422, 'give number (the PR whose head it is) or sha');
    const commit = this.state.refs.commit(r, input.sha);
    if (!commit) throw new GitHubStateError(404, `no commit ${input.sha} in ${r.fullName}`);
    return commit;
  }

  /** The identity named by user, token, ip or (actions) repo; the default user when none is. */
  private identityOf(input: { user?: string; token?: string; ip?: string; repo?: string }): Identity {
    const ledger = this.emulator.ledger;
    if (input.token !== undefined) {
      const info = this.emulator.tokens.tokens.get(input.token);
      if (!info) throw new GitHubStateError(404, 'unknown token');
      return info.identity;
    }
    if (input.ip !== undefined) return ledger.ipIdentity(input.ip);
    if (input.repo !== undefined) {
      const identity = ledger.identities.get(`actions:${this.state.repo(input.repo).fullName.toLowerCase()}`);
      if (!identity) throw new GitHubStateError(404, `no actions token for ${input.repo}`);
      return identity;
    }
    const login = input.user ?? this.state.defaultUser.login;
    const identity = ledger.identities.get(`user:${login.toLowerCase()}`);
    if (!identity) throw new GitHubStateError(404, `user ${login} has no tokens`);
    return identity;
  }

  // ----- tokens and quota -----

  /** A token for a user (tokens of one user share its quota); session/source/project attribute its requests. */
  mintToken(input: AdminInput<'mintToken'> = {}): MintedToken {
    const o = adminSchemas.mintToken.parse(input);
    const info = this.emulator.tokens.mint(o);
    return {
      token: info.token,
      user: info.user.login,
      kind: info.kind,
      ...(info.repo ? { repo: info.repo } : {}),
      ...(info.session ? { session: info.session } : {}),
      ...(info.source ? { source: info.source } : {}),
      ...(info.project ? { project: info.project } : {}),
    };
  }

  /** Primary buckets (those used so far, plus core and graphql) and in-flight counts of an identity. */
  quota(input: AdminInput<'quota'> = {}): QuotaReport {
    const identity = this.identityOf(input);
    const ledger = this.emulator.ledger;
    const resources: QuotaReport['resources'] = {};
    const names = new Set<Resource>(['core', 'graphql', ...identity.buckets.keys()]);
    for (const r of names) {
      const v = ledger.view(ledger.bucket(identity, r));
      resources[r] = { limit: v.limit, used: v.used, remaining: v.remaining, reset: v.reset };
    }
    return {
      identity: identity.key,
      kind: identity.kind,
      inFlight: identity.inFlight,
      peakInFlight: identity.peakInFlight,
      resources,
    };
  }

  /** Forgets usage of one identity (or all when none is named), one resource or all. */
  resetQuota(input: AdminInput<'resetQuota'> = {}): { identities: number } {
    const named =
      input.user !== undefined ||
      input.token !== undefined ||
      input.ip !== undefined ||
      input.repo !== undefined;
    const identity = named ? this.identityOf(input) : undefined;
    return { identities: this.emulator.ledger.reset(identity, input.resource) };
  }

  /**
   * The `GET /rate_limit` body of an identity, free, plus a `ratelimit.snapshot` trace event
   * (data = the snapshot; labels identity and label) for before/after bracketing.
   */
  snapshotRateLimit(input: AdminInput<'snapshotRateLimit'> = {}): RateLimitJson {
    const identity = this.identityOf(input);
    const snapshot = this.emulator.ledger.rateLimitJson(identity);
    this.emulator.trace?.write({
      kind: 'event',
      name: 'ratelimit.snapshot',
      t: this.emulator.clock.now(),
      labels: { identity: identity.key, ...(input.label ? { label: input.label } : {}) },
      data: snapshot as unknown as Record<string, unknown>,
    });
    return snapshot;
  }

  // ----- reading fixtures -----

  listRepos(_input: AdminInput<'listRepos'> = {}): { repos: RepoSummary[] } {
    const repos: RepoSummary[] = [];
    for (const r of this.state.repos.values()) repos.push(this.repoSummary(r));
    return { repos };
  }

  private repoSummary(r: Repo): RepoSummary {
    const openIssues: number[] = [];
    for (const issue of r.issues.values())
      if (!issue.pull && issue.state === 'open') openIssues.push(issue.number);
    return { repo: r.fullName, defaultBranch: r.defaultBranch, openIssues, pulls: r.pulls.size };
  }

  /** A pull request by number, or the newest one whose head is `head`; null when none. */
  findPullRequest(input: AdminInput<'findPullRequest'>): PullRequestSummary | null {
    const o = adminSchemas.findPullRequest.parse(input);
    const r = this.state.repo(o.repo);
    if (o.number !== undefined) {
      const pull = r.pulls.get(o.number);
      return pull ? this.summary(pull) : null;
    }
    let found: PullRequest | undefined;
    for (const pull of r.pulls.values()) if (pull.head === o.head) found = pull;
    return found ? this.summary(found) : null;
  }

  // ----- mutating fixtures -----

  createIssue(input: AdminInput<'createIssue'>): { number: number } {
    const o = adminSchemas.createIssue.parse(input);
    const r = this.state.repo(o.repo);
    const issue = this.state.createIssue(r, { ...o, title: o.title ?? `Issue ${r.nextNumber}` });
    return { number: issue.number };
  }

  closeIssue(input: AdminInput<'closeIssue'>): { number: number; state: string } {
    const o = adminSchemas.closeIssue.parse(input);
    const issue = this.state.issue(this.state.repo(o.repo), o.number);
    this.state.closeIssue(issue);
    return { number: issue.number, state: issue.state };
  }

  /** Opens a PR from `head` (created if missing) into `base` (the default branch), linked to `issue`. */
  openPullRequest(input: AdminInput<'openPullRequest'>): PullRequestSummary {
    const o = adminSchemas.openPullRequest.parse(input);
    return this.summary(this.state.openPullRequest(this.state.repo(o.repo), o));
  }

  /** A new head commit on the PR's branch (new SHA; its checks start empty). */
  pushCommit(input: AdminInput<'pushCommit'>): { sha: string } {
    const o = adminSchemas.pushCommit.parse(input);
    return { sha: this.state.pushCommit(this.pullOf(o), o).sha };
  }

  /**
   * A push of a branch without a pull request (created, or moved to a new commit): what an agent
   * does before `gh pr create` or `POST /pulls`, which GitHub refuses for a branch it never saw.
   */
  pushBranch(input: AdminInput<'pushBranch'>): { sha: string } {
    const o = adminSchemas.pushBranch.parse(input);
    return { sha: this.state.pushBranch(this.state.repo(o.repo), o).sha };
  }

  /**
   * Creates or updates the named check run (default `ci`) on a commit (the PR's head when
   * `number` is given). A conclusion finishes it.
   */
  setCheckRun(input: AdminInput<'setCheckRun'>): {
    id: number;
    sha: string;
    name: string;
    status: string;
    conclusion: string | null;
  } {
    const o = adminSchemas.setCheckRun.parse(input);
    const commit = this.commitOf(o);
    const run = this.state.checks.setCheckRun(commit, o);
    return { id: run.id, sha: commit.sha, name: run.name, status: run.status, conclusion: run.conclusion };
  }

  setStatus(input: AdminInput<'setStatus'>): { id: number; sha: string; combined: string } {
    const o = adminSchemas.setStatus.parse(input);
    const commit = this.commitOf(o);
    const status = this.state.setStatus(commit, o);
    return { id: status.id, sha: commit.sha, combined: this.state.checks.combinedStatus(commit) };
  }

  /** K review comments from one reviewer as one COMMENTED review (a review burst). */
  postReviewComments(input: AdminInput<'postReviewComments'>): { ids: number[] } {
    const o = adminSchemas.postReviewComments.parse(input);
    return { ids: this.state.postReviewComments(this.pullOf(o), o).map((c) => c.id) };
  }

  submitReview(input: AdminInput<'submitReview'>): { id: number; reviewDecision: string | null } {
    const o = adminSchemas.submitReview.parse(input);
    const pull = this.pullOf(o);
    const review = this.state.submitReview(pull, o);
    return { id: review.id, reviewDecision: this.state.reviewDecision(pull) };
  }

  postIssueComment(input: AdminInput<'postIssueComment'>): { id: number } {
    const o = adminSchemas.postIssueComment.parse(input);
    const issue = this.state.issue(this.state.repo(o.repo), o.number);
    return { id: this.state.postIssueComment(issue, { body: o.body ?? 'A comment.', user: o.user }).id };
  }

  mergePullRequest(input: AdminInput<'mergePullRequest'>): PullRequestSummary {
    const o = adminSchemas.mergePullRequest.parse(input);
    return this.summary(this.state.mergePullRequest(this.pullOf(o), o));
  }

  /**
   * What `mergePullRequest` will merge, computed ahead off the event loop in a served repository
   * (merge-ahead.ts): a caller in the same process awaits it first, as a request over HTTP does.
   * Not an HTTP method of its own. Undefined when there is nothing to compute (in process, or
   * done already): the caller then merges at once, in the same turn, as before.
   */
  mergeAhead(input: { repo: string; number: number }): Promise<void> | undefined {
    const [owner = '', name = ''] = input.repo.split('/');
    const pull = this.state.findRepo(owner, name)?.pulls.get(input.number);
    return pull === undefined ? undefined : pullMergeAhead(this.state, pull, 'base');
  }

  closePullRequest(input: AdminInput<'closePullRequest'>): PullRequestSummary {
    const o = adminSchemas.closePullRequest.parse(input);
    return this.summary(this.state.closePullRequest(this.pullOf(o)));
  }

  setMergeable(input: AdminInput<'setMergeable'>): PullRequestSummary {
    const o = adminSchemas.setMergeable.parse(input);
    return this.summary(this.state.setMergeable(this.pullOf(o), o.mergeable));
  }

  // ----- faults and stats -----

  /** Starts a fault now (until `durationMs`, or until cleared); emits `fault.start`. */
  injectFault(input: AdminInput<'injectFault'>): { id: string } {
    return { id: this.emulator.faults.inject(input).id };
  }

  /** Ends one fault or all; emits `fault.end` for each. */
  clearFaults(input: AdminInput<'clearFaults'> = {}): { cleared: number } {
    return { cleared: this.emulator.faults.clear(input.id) };
  }

  stats(_input: AdminInput<'stats'> = {}): EmulatorStats {
    return this.emulator.stats();
  }

  /**
   * Attribution by content (attribution.ts): requests about this branch, its pull request or
   * this issue are the session's, for clients that send no attribution headers.
   */
  registerSession(input: AdminInput<'registerSession'>): { registered: string } {
    const o = adminSchemas.registerSession.parse(input);
    this.state.repo(o.repo); // 404 for an unknown repository
    this.emulator.attribution.register(o);
    return { registered: o.session };
  }

  /** The poll cycle now under way for a repository's registered sessions (null: none). */
  setCycle(input: AdminInput<'setCycle'>): { repo: string; cycle: number | null } {
    const o = adminSchemas.setCycle.parse(input);
    this.emulator.attribution.setCycle(o.repo, o.cycle ?? undefined);
    return { repo: o.repo, cycle: o.cycle };
  }

  /** `/_fleetbench/<kebab-name>`: the HTTP face of the methods above (not traced: not GitHub calls). */
  handleHttp(req: EmulatorRequest, name: string, qs: string): EmulatorResponse {
    const json = (status: number, value: unknown): EmulatorResponse => {
      const body = JSON.stringify(value);
      return {
        status,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'content-length': String(Buffer.byteLength(body)),
        },
        body,
      };
    };
    const auth = req.headers.authorization ?? '';
    const given = auth.slice(auth.indexOf(' ') + 1).trim();
    if (given !== this.emulator.adminToken) {
      return json(401, {
        message: 'admin token required: Authorization: Bearer <admin token printed at start>',
      });
    }
    const method = name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase()) as AdminMethod;
    const schema = (adminSchemas as Record<string, z.ZodType>)[method];
    if (schema === undefined) {
      return json(404, {
        message: `unknown admin method '${name}'`,
        methods: Object.keys(adminSchemas).map(kebab),
      });
    }
    let input: unknown = {};
    const verb = req.method.toUpperCase();
    if (verb === 'GET' && READ_ONLY.has(method)) {
      input = Object.fromEntries(new URLSearchParams(qs));
    } else if (verb === 'POST') {
      try {
        input = req.body ? JSON.parse(req.body) : {};
      } catch {
        return json(400, { message: 'body: expected JSON' });
      }
    } else {
      return json(405, { message: `use POST${READ_ONLY.has(method) ? ' or GET' : ''} for ${name}` });
    }
    const parsed = schema.safeParse(input);
    if (!parsed.success) return json(400, { message: describeZodIssues(parsed.error.issues, 3).join('; ') });
    try {
      const fn = this[method] as (input: unknown) => unknown;
      return json(200, fn.call(this, parsed.data) ?? null);
    } catch (error) {
      if (error instanceof GitHubStateError) return json(error.status, { message: error.message });
      throw error;
    }
  }
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
