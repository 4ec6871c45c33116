/**
 * GitHub Apps in the world (docs/github-emulator.md, "Apps"): an App with an RSA key pair,
 * installed on an account, authenticating as GitHub documents it. The App signs a JWT (RS256,
 * `iss` its id or client id, `exp` at most ten minutes ahead) and sends it as a Bearer token to
 * the App's own routes; it exchanges it for an installation token (`ghs_`, an hour) that acts as
 * its bot user (`<slug>[bot]`) on the installation's repositories only, charged to the
 * installation's own rate limit (5,000/h, +50/h per repository and per user over 20, at most
 * 12,500/h).
 *
 * The key pair comes from node:crypto at every start, not from the seed: keys are never in a
 * trace, so a run's trace stays a function of its seed.
 */
import { generateKeyPairSync, type KeyObject, verify } from 'node:crypto';
import type { Clock } from '../clock/index.ts';
import type { AppGrant, TokenInfo, TokenRegistry } from './auth.ts';
import type { Identity, QuotaLedger } from './quota.ts';
import type { GitHubState, Repo, User } from './state.ts';

/** An App as the emulator's options give it; every field has a default. */
export interface AppInput {
  /** The App's id (`iss` of its JWTs). Default 1, then the next free one. */
  id?: number;
  /** Its slug: the bot user is `<slug>[bot]`. Default `fleetbench-app`. */
  slug?: string;
  name?: string;
  /** The account that owns the App and on which it is installed. Default: the first repository's owner. */
  owner?: string;
  installationId?: number;
  /** `all` (default): every repository of the account; else these owner/name. */
  repositories?: 'all' | string[];
  /** Granted permissions. Default: what a control plane needs (issues, pull requests, contents, checks: write). */
  permissions?: Record<string, 'read' | 'write' | 'admin'>;
}

export interface GitHubApp {
  readonly id: number;
  readonly slug: string;
  readonly name: string;
  readonly clientId: string;
  readonly owner: User;
  readonly bot: User;
  readonly publicKey: KeyObject;
  /** PKCS#1 PEM, what GitHub hands out (`-----BEGIN RSA PRIVATE KEY-----`): for the world to give a command. */
  readonly privateKeyPem: string;
  readonly createdAt: number;
  readonly permissions: Readonly<Record<string, string>>;
  readonly events: readonly string[];
  readonly installations: Installation[];
  /** The identity its JWT calls are charged to. */
  readonly jwtIdentity: Identity;
}

export interface Installation {
  readonly id: number;
  readonly app: GitHubApp;
  readonly account: User;
  readonly selection: 'all' | 'selected';
  /** Lowercased owner/name, for `selected`. */
  readonly selected: ReadonlySet<string>;
  readonly permissions: Readonly<Record<string, string>>;
  readonly createdAt: number;
  /** Its tokens' texts in the order minted (expired ones swept at the next mint). */
  readonly tokens: string[];
}

/** GitHub's answers to a JWT it refuses (401), as clients report them (docs/github-emulator.md). */
export const JWT_MESSAGES = {
  undecodable: 'A JSON web token could not be decoded',
  expired:
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
  tooFar: "'Expiration time' claim ('exp') is too far in the future",
  issuedAt:
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
} as const;

/** Bounds (docs/limits.md): a JWT's length, its lifetime, an installation token's, live tokens per installation. */
export const APP_BOUNDS = {
  maxJwtChars: 8_192,
  maxJwtLifetimeS: 600,
  installationTokenMs: 3_600_000,
  maxLiveTokensPerInstallation: 10_000,
  /** Revoked or expired token texts remembered as refused (the oldest forgotten past it). */
  maxRetiredTokens: 100_000,
} as const;

const DEFAULT_PERMISSIONS: Record<string, string> = {
  metadata: 'read',
  contents: 'write',
  issues: 'write',
  pull_requests: 'write',
  checks: 'write',
  statuses: 'write',
};

const DEFAULT_EVENTS = [
  'issues',
  'issue_comment',
  'pull_request',
  'pull_request_review',
  'push',
  'check_run',
];

/** A JWT's shape: three base64url parts, the first a JSON object (`{"` is `eyJ`), of any length. */
export function jwtShaped(text: string): boolean {
  return text.startsWith('eyJ') && /^[\w-]+\.[\w-]+\.[\w-]*$/.test(text);
}

/** Cheap shape test: a JWT's shape within APP_BOUNDS.maxJwtChars (a longer one is never parsed). */
export function looksLikeJwt(text: string): boolean {
  return text.length <= APP_BOUNDS.maxJwtChars && jwtShaped(text);
}

function decodePart(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const registries = new WeakMap<GitHubState, AppRegistry>();

/** The Apps of a world's state (REST handlers reach them through their context's state). */
export function appsOf(state: GitHubState): AppRegistry | undefined {
  return registries.get(state);
}

export class AppRegistry {
  readonly apps: GitHubApp[] = [];
  /**
   * Installation tokens revoked or expired and dropped from the token table: still refused
   * (401) where the emulator takes unknown tokens as the default user's (a world's), in order of
   * retirement, bounded.
   */
  private readonly retired = new Set<string>();
  private readonly jwtTokens = new Map<number, TokenInfo>();

  constructor(
    private readonly state: GitHubState,
    private readonly ledger: QuotaLedger,
    private readonly tokens: TokenRegistry,
    private readonly clock: Clock,
  ) {
    registries.set(state, this);
  }

  get size(): number {
    return this.apps.length;
  }

  /** The emulator's clock as a JWT's claims count it: wall-clock epoch seconds. */
  nowSeconds(): number {
    return Math.floor(this.clock.toWallMs(this.clock.now()) / 1000);
  }

  add(input: AppInput = {}): GitHubApp {
    let id = input.id ?? 1;
    if (input.id === undefined) while (this.byId(id)) id++;
    else if (this.byId(id)) throw new RangeError(`app ${id} already exists`);
    const slug = input.slug ?? (this.apps.length === 0 ? 'fleetbench-app' : `fleetbench-app-${id}`);
    if (!/^[a-z0-9][a-z0-9-]{0,33}$/.test(slug))
      throw new RangeError(`app slug '${slug}': lowercase letters, digits and dashes`);
    const firstRepo = this.state.repos.values().next().value as Repo | undefined;
    const ownerLogin = input.owner ?? firstRepo?.owner.login ?? this.state.defaultUser.login;
    const owner = this.state.ensureUser(ownerLogin, this.state.findUser(ownerLogin)?.type ?? 'Organization');
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const permissions = { ...(input.permissions ?? DEFAULT_PERMISSIONS) };
    const app: GitHubApp = {
      id,
      slug,
      name: input.name ?? slug,
      clientId: `Iv23li${id.toString(16).padStart(14, '0')}`,
      owner,
      bot: this.state.ensureUser(`${slug}[bot]`, 'Bot'),
      publicKey,
      privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
      createdAt: this.clock.now(),
      permissions,
      events: DEFAULT_EVENTS,
      installations: [],
      jwtIdentity: this.ledger.identity('installation', `app:${id}`, { userId: id }),
    };
    const selected = new Set<string>();
    if (Array.isArray(input.repositories))
      for (const full of input.repositories) {
        const [o, n] = full.split('/');
        const repo = o && n ? this.state.findRepo(o, n) : undefined;
        if (repo === undefined) throw new RangeError(`app ${slug}: no repository ${full}`);
        selected.add(repo.fullName.toLowerCase());
      }
    app.installations.push({
      id: input.installationId ?? id,
      app,
      account: owner,
      selection: Array.isArray(input.repositories) ? 'selected' : 'all',
      selected,
      permissions,
      createdAt: this.clock.now(),
      tokens: [],
    });
    this.apps.push(app);
    this.jwtTokens.set(id, {
      token: `jwt:app:${id}`,
      kind: 'installation',
      identity: app.jwtIdentity,
      user: app.bot,
      etagSalt: `a${id.toString(36)}`,
      app: { appId: id, jwt: true },
    });
    return app;
  }

  byId(id: number): GitHubApp | undefined {
    return this.apps.find((a) => a.id === id);
  }

  installation(id: number): Installation | undefined {
    for (const app of this.apps) for (const inst of app.installations) if (inst.id === id) return inst;
    return undefined;
  }

  /** The repositories an installation reaches now (an `all` one: every repository of its account). */
  repositories(inst: Installation): Repo[] {
    const out: Repo[] = [];
    for (const repo of this.state.repos.values())
      if (
        inst.selection === 'all'
          ? repo.owner === inst.account
          : inst.selected.has(repo.fullName.toLowerCase())
      )
        out.push(repo);
    return out.sort((a, b) => (a.fullName < b.fullName ? -1 : 1));
  }

  /** Whether a token's grant reaches owner/name (a repository of another account: no). */
  reaches(grant: AppGrant, fullName: string): boolean {
    const inst = grant.installationId === undefined ? undefined : this.installation(grant.installationId);
    if (inst === undefined) return false;
    const key = fullName.toLowerCase();
    if (grant.repos !== undefined) return grant.repos.has(key);
    if (inst.selection === 'selected') return inst.selected.has(key);
    return key.startsWith(`${inst.account.login.toLowerCase()}/`);
  }

  /**
   * The App a JWT is from, or GitHub's 401 message for it. Checked in GitHub's order as far as
   * clients see it: the token decodes, `alg` is RS256, `iss` names an App, the signature is that
   * App's, `iat` is not in the future, `exp` is in the future and at most ten minutes away.
   */
  verifyJwt(text: string): { app: GitHubApp } | { message: string } {
    const bad = { message: JWT_MESSAGES.undecodable };
    if (!looksLikeJwt(text)) return bad;
    const [head, body, signature] = text.split('.') as [string, string, string];
    const header = decodePart(head);
    const claims = decodePart(body);
    if (header === undefined || claims === undefined || header.alg !== 'RS256') return bad;
    const iss = claims.iss;
    if (typeof iss !== 'string' && typeof iss !== 'number') return bad;
    const app = this.apps.find((a) => String(a.id) === String(iss) || a.clientId === iss);
    if (app === undefined) return bad;
    const signed = verify(
      'sha256',
      Buffer.from(`${head}.${body}`),
      app.publicKey,
      Buffer.from(signature, 'base64url'),
    );
    if (!signed) return bad;
    const now = this.nowSeconds();
    const { iat, exp } = claims;
    if (typeof iat !== 'number' || !Number.isInteger(iat) || iat > now)
      return { message: JWT_MESSAGES.issuedAt };
    if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= now)
      return { message: JWT_MESSAGES.expired };
    if (exp > now + APP_BOUNDS.maxJwtLifetimeS) return { message: JWT_MESSAGES.tooFar };
    return { app };
  }

  /** The credential a valid JWT stands for (one per App: JWTs are never stored), or undefined. */
  jwtToken(text: string): TokenInfo | undefined {
    const verdict = this.verifyJwt(text);
    return 'app' in verdict ? this.jwtTokens.get(verdict.app.id) : undefined;
  }

  /**
   * An installation token for `inst`, maybe narrowed to some repositories and permissions
   * (already checked by the route). Its identity is the installation's, with GitHub's limit.
   */
  mintInstallationToken(
    inst: Installation,
    narrow: { repos?: ReadonlySet<string>; permissions?: Record<string, string> } = {},
  ): TokenInfo {
    this.sweep(inst);
    const identity = this.installationIdentity(inst);
    const token = this.tokens.randomToken('ghs_');
    const info: TokenInfo = {
      token,
      kind: 'installation',
      identity,
      user: inst.app.bot,
      etagSalt: `s${inst.tokens.length.toString(36)}${token.slice(4, 10)}`,
      expiresAt: this.clock.now() + APP_BOUNDS.installationTokenMs,
      app: {
        appId: inst.app.id,
        jwt: false,
        installationId: inst.id,
        repos: narrow.repos,
        permissions: narrow.permissions ?? inst.permissions,
      },
    };
    this.tokens.tokens.set(token, info);
    inst.tokens.push(token);
    return info;
  }

  /** Forgets an installation token (`DELETE /installation/token`). */
  revoke(token: string): void {
    this.tokens.tokens.delete(token);
    this.retire(token);
  }

  /** Whether a token text was one of this emulator's installation tokens, now revoked or expired. */
  isRetired(token: string): boolean {
    return this.retired.has(token);
  }

  private retire(token: string): void {
    this.retired.add(token);
    if (this.retired.size > APP_BOUNDS.maxRetiredTokens)
      this.retired.delete(this.retired.values().next().value as string);
  }

  /**
   * GitHub's installation limit: 5,000/h, plus 50/h for each repository over 20 and each user
   * over 20 (an organization's members), at most 12,500/h (docs/github-emulator.md). The
   * configured `installation` limit is the floor the increments add to.
   */
  limitOf(inst: Installation, base: number): number {
    const repos = this.repositories(inst).length;
    const users = inst.account.type === 'Organization' ? (inst.account.members?.size ?? 0) : 1;
    const scaled = base + 50 * Math.max(0, repos - 20) + 50 * Math.max(0, users - 20);
    return Math.min(scaled, Math.max(12_500, base));
  }

  private installationIdentity(inst: Installation): Identity {
    const identity = this.ledger.identity('installation', `installation:${inst.id}`, {
      login: inst.app.bot.login,
      userId: inst.id,
    });
    const base = this.ledger.limits.primary.installation;
    this.ledger.setLimits(identity, {
      core: this.limitOf(inst, base.core),
      graphql: this.limitOf(inst, base.graphql),
    });
    return identity;
  }

  /** Drops expired tokens of the installation, and the oldest live ones past the bound. */
  private sweep(inst: Installation): void {
    const now = this.clock.now();
    let keep = 0;
    for (const text of inst.tokens) {
      const info = this.tokens.tokens.get(text);
      if (info === undefined) continue;
      if (info.expiresAt !== undefined && now >= info.expiresAt) this.revoke(text);
      else inst.tokens[keep++] = text;
    }
    inst.tokens.length = keep;
    while (inst.tokens.length >= APP_BOUNDS.maxLiveTokensPerInstallation)
      this.revoke(inst.tokens.shift() as string);
  }
}
