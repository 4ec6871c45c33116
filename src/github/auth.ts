/**
 * Tokens: which identity a request is charged to, which user it acts as, and the attribution a
 * per-session token carries for clients that cannot send x-fleetbench-* headers.
 */
import { randomInt } from 'node:crypto';
import type { Rng } from '../base/rng.ts';
import type { ApiSource } from '../trace/schema.ts';
import type { IdentityKind, ResourceLimits } from './config.ts';
import type { Identity, QuotaLedger } from './quota.ts';
import { type GitHubState, GitHubStateError, type User } from './state.ts';

export interface TokenInfo {
  readonly token: string;
  readonly kind: Exclude<IdentityKind, 'unauthenticated'>;
  readonly identity: Identity;
  /** The user the token acts as (/user, authored comments); the repo's owner for an actions token. */
  readonly user: User;
  readonly repo?: string;
  readonly session?: string;
  readonly source?: ApiSource;
  readonly project?: string;
  /** Makes ETags per token: the same resource seen through two tokens has two ETags. */
  readonly etagSalt: string;
  /** Run time after which the token is refused with 401 (an installation token: an hour). */
  readonly expiresAt?: number;
  /** A GitHub App's JWT or installation token (apps.ts): what it may reach. */
  readonly app?: AppGrant;
}

/** What an App credential reaches (apps.ts): the App's own routes (JWT), or an installation's repositories. */
export interface AppGrant {
  readonly appId: number;
  /** True for a JWT: only the App's routes (docs/github-emulator.md, "Apps"). */
  readonly jwt: boolean;
  readonly installationId?: number;
  /** Lowercased owner/name the token may reach; undefined: every repository of the installation's account. */
  readonly repos?: ReadonlySet<string>;
  readonly permissions?: Readonly<Record<string, string>>;
}

export interface MintTokenOptions {
  /** Login the token belongs to (default: the fixtures' default user). Tokens of one user share its quota. */
  user?: string;
  /** An installation's token comes from its App (apps.ts), not from here. */
  kind?: Exclude<IdentityKind, 'unauthenticated' | 'installation'>;
  /** owner/name: required for an actions token (its quota is per repository). */
  repo?: string;
  session?: string;
  source?: ApiSource;
  project?: string;
  /** Use this token text instead of a generated one. */
  token?: string;
  /** Overrides the identity's primary limits (applies to every token of that identity). */
  limits?: Partial<ResourceLimits>;
}

const TOKEN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export class TokenRegistry {
  readonly tokens = new Map<string, TokenInfo>();
  private serial = 0;
  private readonly state: GitHubState;
  private readonly ledger: QuotaLedger;
  private readonly rng: Rng;
  /** Token texts from the operating system's randomness instead of the seed (`secret`). */
  private readonly secret: boolean;

  /**
   * `secret`: the tokens it makes up are credentials a server hands out (`github serve`, whose
   * port another user of the machine, or of the network with `--host 0.0.0.0`, can reach), so
   * they come from crypto randomness and differ at every start. Otherwise they come from the
   * seed, as everything else in a run does.
   */
  constructor(state: GitHubState, ledger: QuotaLedger, rng: Rng, options: { secret?: boolean } = {}) {
    this.state = state;
    this.ledger = ledger;
    this.rng = rng;
    this.secret = options.secret ?? false;
  }

  mint(options: MintTokenOptions = {}): TokenInfo {
    const kind = options.kind ?? 'user';
    let identity: Identity;
    let user: User;
    let repo: string | undefined;
    if (kind === 'actions') {
      if (!options.repo) throw new GitHubStateError(422, 'an actions token needs repo (owner/name)');
      const r = this.state.repo(options.repo);
      repo = r.fullName;
      user = options.user
        ? this.state.ensureUser(options.user)
        : this.state.ensureUser('github-actions[bot]', 'Bot');
      identity = this.ledger.identity('actions', `actions:${r.fullName.toLowerCase()}`, {
        repo,
        userId: r.id,
      });
    } else {
      user = options.user ? this.state.ensureUser(options.user) : this.state.defaultUser;
      identity = this.ledger.identity(kind, `user:${user.login.toLowerCase()}`, {
        login: user.login,
        userId: user.id,
      });
      if (identity.kind !== kind) {
        throw new GitHubStateError(
          422,
          `user ${user.login} already has ${identity.kind} tokens; one kind per user`,
        );
      }
    }
    if (options.limits) this.ledger.setLimits(identity, options.limits);
    const token = options.token ?? this.randomToken(kind === 'actions' ? 'ghs_' : 'ghp_');
    if (this.tokens.has(token)) throw new GitHubStateError(422, 'token already exists');
    const info: TokenInfo = {
      token,
      kind,
      identity,
      user,
      repo,
      session: options.session,
      source: options.source,
      project: options.project,
      etagSalt: `t${(++this.serial).toString(36)}`,
    };
    this.tokens.set(token, info);
    return info;
  }

  /** A GitHub-looking token text (not registered): from the seeded stream, or secret. */
  randomToken(prefix: string): string {
    let out = prefix;
    for (let i = 0; i < 36; i++) {
      const pick = this.secret
        ? randomInt(TOKEN_CHARS.length)
        : Math.floor(this.rng.next() * TOKEN_CHARS.length);
      out += TOKEN_CHARS[pick];
    }
    return out;
  }

  /**
   * The token text in an Authorization header (`token X`, `Bearer X`, or Basic with the token as
   * password), or undefined when there is none.
   */
  static parseAuthorization(header: string | undefined): string | undefined {
    if (header === undefined || header === '') return undefined;
    const space = header.indexOf(' ');
    if (space < 0) return header;
    const scheme = header.slice(0, space).toLowerCase();
    const value = header.slice(space + 1).trim();
    if (scheme === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      return colon < 0 ? decoded : decoded.slice(colon + 1) || decoded.slice(0, colon);
    }
    return value;
  }
}
