/**
 * GitHub's OAuth logins on github.com, approved at once (docs/github-emulator.md, "OAuth
 * logins"): a control plane or CLI that logs in as a user (the device flow of a CLI, the web
 * flow behind a dashboard's "Sign in with GitHub") gets a user token with nobody at a browser.
 *
 *   POST /login/device/code          a device code; the user is taken to enter it within one interval (5 s)
 *   POST /login/oauth/access_token   a device code's or an authorization code's token
 *   GET  /login/oauth/authorize      the web flow's consent: a redirect back with a code at once
 *
 * Answered as GitHub answers them: form-encoded unless the client asks for JSON (`Accept:
 * application/json`), parameters in the query or the body (form or JSON), and the token
 * endpoint's refusals (`slow_down`, `expired_token`, `bad_verification_code`, …) as 200 answers
 * naming the error, as GitHub's are. Not API calls: no rate limit counts them (as on GitHub),
 * each is a `github.oauth` span in the trace. Any client id is taken (the user's OAuth app is
 * not registered here); the token acts as the fixtures' default user.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { BodyTooLargeError, readBoundedBody } from '../base/http-body.ts';
import type { GitHubEmulator } from './emulator.ts';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

const PATHS = {
  '/login/device/code': 'device_code',
  '/login/oauth/access_token': 'access_token',
  '/login/oauth/authorize': 'authorize',
} as const;
type OAuthRequest = (typeof PATHS)[keyof typeof PATHS];

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** GitHub's: a device code lives 15 minutes, polled at most every 5 s (+5 s at each `slow_down`). */
const DEVICE_EXPIRES_S = 900;
const DEVICE_INTERVAL_S = 5;
/** GitHub's: an authorization code lives 10 minutes. */
const CODE_EXPIRES_MS = 10 * 60_000;
/** Codes outstanding at once, each kind (docs/limits.md): the oldest is forgotten past it. */
export const MAX_OAUTH_CODES = 10_000;
/** GitHub's: at most 10 tokens per user, OAuth app and scopes; an 11th revokes the oldest. */
export const OAUTH_TOKENS_PER_GRANT = 10;
/** OAuth tokens live at once over every client id (docs/limits.md): the oldest is revoked past it. */
export const MAX_OAUTH_TOKENS = 10_000;
/**
 * The parameters kept with a code (docs/limits.md): GitHub's client ids are 20 characters, its
 * scopes a short list. Unbounded, 10,000 device codes of 64 KiB client ids held a gigabyte.
 */
export const MAX_OAUTH_PARAM_CHARS = 1024;
const KEPT_PARAMS = ['client_id', 'scope', 'redirect_uri'] as const;
/** An OAuth request's body (docs/limits.md): a few parameters. */
export const OAUTH_BODY_LIMIT = 64 * 1024;
const ERROR_URI = 'https://docs.github.com/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps';
const USER_CODE_CHARS = 'BCDFGHJKLMNPQRSTVWXZ0123456789';

interface DeviceGrant {
  clientId: string;
  scope: string;
  issuedAt: number;
  interval: number;
  lastPollAt: number | undefined;
  used: boolean;
}

interface CodeGrant {
  clientId: string;
  scope: string;
  redirectUri: string | undefined;
  issuedAt: number;
}

/** The OAuth path a request's URL names, else undefined. */
export function oauthRequestOf(url: string): OAuthRequest | undefined {
  const path = url.split('?')[0] ?? '';
  return PATHS[path.replace(/\/$/, '') as keyof typeof PATHS];
}

export class OAuthLogins {
  private readonly devices = new Map<string, DeviceGrant>();
  private readonly codes = new Map<string, CodeGrant>();
  /**
   * The tokens minted here, oldest first, each with its client id and scopes; and each
   * combination's tokens, oldest first. Any client id is taken, so without these a client logging
   * in a loop would grow the emulator's token table without bound.
   */
  private readonly minted = new Map<string, string>();
  private readonly byGrant = new Map<string, string[]>();
  private readonly maxTokens: number;
  /** Requests not yet answered, each with what records it as cancelled; none taken once closed. */
  private readonly pending = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly emulator: GitHubEmulator,
    options: { maxTokens?: number } = {},
  ) {
    this.maxTokens = options.maxTokens ?? MAX_OAUTH_TOKENS;
  }

  /**
   * The server is stopping: each request not yet answered (its body still arriving) is recorded
   * now as cancelled, before the trace's footer, and nothing is recorded after (docs/limits.md).
   */
  close(): void {
    this.closed = true;
    for (const cancel of this.pending) cancel();
    this.pending.clear();
  }

  /** Answers a request `oauthRequestOf` took (`origin`: the scheme and host the client used); never throws. */
  handle(req: Req, res: Res, origin: string): void {
    if (this.closed) {
      req.resume();
      res.destroy();
      return;
    }
    this.serve(req, res, origin).catch((error: unknown) => {
      process.stderr.write(`github emulator (oauth): ${(error as Error)?.stack ?? String(error)}\n`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  }

  private async serve(req: Req, res: Res, origin: string): Promise<void> {
    const t0 = this.emulator.clock.now();
    const url = req.url ?? '/';
    const request = oauthRequestOf(url) as OAuthRequest;
    const method = req.method ?? 'GET';
    const json = /application\/json/i.test(String(req.headers.accept ?? ''));
    let recorded = false;
    const span = (status: string, outcome: 'ok' | 'error', data: Record<string, unknown>) => {
      if (recorded) return;
      recorded = true;
      this.pending.delete(cancel);
      this.emulator.trace?.write({
        kind: 'span',
        name: 'github.oauth',
        t: t0,
        dur: this.emulator.clock.now() - t0,
        outcome,
        labels: { request, status },
        data,
      });
    };
    const cancel = () =>
      span('cancelled', 'error', { error: 'cancelled: the server stopped before answering' });
    this.pending.add(cancel);
    const record = (status: number, data: Record<string, unknown>) =>
      span(String(status), status < 400 && data.error === undefined ? 'ok' : 'error', data);
    const wanted = request === 'authorize' ? ['GET', 'HEAD'] : ['POST'];
    if (!wanted.includes(method)) {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Not Found\n');
      return void record(404, { error: `${method} not served` });
    }
    let params: URLSearchParams;
    try {
      params = await paramsOf(req, url);
    } catch (error) {
      const status = error instanceof BodyTooLargeError ? 413 : 400;
      res.writeHead(status, {
        'content-type': 'text/plain; charset=utf-8',
        // HTTP/2 has no connection header (Node warns and drops it): the stream ends, the session stays.
        ...('stream' in res ? {} : { connection: 'close' }),
      });
      res.end(`${(error as Error).message}\n`);
      return void record(status, { error: (error as Error).message });
    }
    // Form-encoded as GitHub answers, with its keys in order; JSON when the client asks for it.
    const answer = (status: number, fields: Record<string, string | number>) => {
      const body = json
        ? JSON.stringify(fields)
        : new URLSearchParams(
            Object.entries(fields)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, v]): [string, string] => [k, String(v)]),
          ).toString();
      res.writeHead(status, {
        'content-type': json
          ? 'application/json; charset=utf-8'
          : 'application/x-www-form-urlencoded; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(body);
    };
    const tooLong = KEPT_PARAMS.find((name) => (params.get(name) ?? '').length > MAX_OAUTH_PARAM_CHARS);
    if (tooLong !== undefined) {
      const description = `${tooLong} is over ${MAX_OAUTH_PARAM_CHARS} characters (docs/limits.md)`;
      if (request === 'authorize') {
        res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`fleetbench: GET /login/oauth/authorize: ${description}\n`);
      } else {
        answer(400, { error: 'invalid_request', error_description: description, error_uri: ERROR_URI });
      }
      return void record(400, { error: 'invalid_request', param: tooLong });
    }
    const clientId = params.get('client_id') ?? '';
    const scope = normaliseScope(params.get('scope') ?? '');
    if (request === 'authorize') return this.authorize(res, params, clientId, scope, record);
    const refuse = (error: string, description: string, extra: Record<string, number> = {}) => {
      answer(200, { error, error_description: description, error_uri: ERROR_URI, ...extra });
      record(200, { clientId, error });
    };
    if (clientId === '') {
      // GitHub's device endpoint takes no request without a client id; RFC 6749's word for it.
      answer(400, {
        error: 'invalid_request',
        error_description: 'client_id is required',
        error_uri: ERROR_URI,
      });
      return void record(400, { error: 'invalid_request' });
    }
    const now = this.emulator.clock.now();
    if (request === 'device_code') {
      const deviceCode = this.hex(40);
      remember(this.devices, deviceCode, {
        clientId,
        scope,
        issuedAt: now,
        interval: DEVICE_INTERVAL_S,
        lastPollAt: undefined,
        used: false,
      });
      answer(200, {
        device_code: deviceCode,
        user_code: this.userCode(),
        verification_uri: `${origin}/login/device`,
        expires_in: DEVICE_EXPIRES_S,
        interval: DEVICE_INTERVAL_S,
      });
      return void record(200, { clientId, grant: 'device' });
    }
    // The token endpoint: a device code's poll, or an authorization code's exchange.
    const deviceCode = params.get('device_code');
    if (deviceCode !== null) {
      if (params.get('grant_type') !== DEVICE_GRANT)
        return refuse('unsupported_grant_type', `The grant type must be ${DEVICE_GRANT}.`);
      const grant = this.devices.get(deviceCode);
      if (grant === undefined || grant.used)
        return refuse('incorrect_device_code', 'The device_code provided is not valid.');
      if (grant.clientId !== clientId)
        return refuse(
          'incorrect_client_credentials',
          'The client_id is not the one the device code was issued to.',
        );
      if (now - grant.issuedAt > DEVICE_EXPIRES_S * 1000) {
        this.devices.delete(deviceCode);
        return refuse('expired_token', 'The device_code has expired.');
      }
      const early = grant.lastPollAt !== undefined && now - grant.lastPollAt < grant.interval * 1000;
      grant.lastPollAt = now;
      if (early) {
        grant.interval += 5;
        return refuse('slow_down', 'Too many requests have been made in the same timeframe.', {
          interval: grant.interval,
        });
      }
      // The user takes one interval to type the code: a client that polls at once is told to wait.
      if (now - grant.issuedAt < DEVICE_INTERVAL_S * 1000)
        return refuse('authorization_pending', 'The authorization request is still pending.');
      grant.used = true;
      return this.grantToken(answer, record, clientId, grant.scope, 'device');
    }
    const code = params.get('code');
    if (code === null) return refuse('unsupported_grant_type', 'A device_code or a code is required.');
    const grant = this.codes.get(code);
    if (grant === undefined || now - grant.issuedAt > CODE_EXPIRES_MS) {
      this.codes.delete(code);
      return refuse('bad_verification_code', 'The code passed is incorrect or expired.');
    }
    if (grant.clientId !== clientId || (params.get('client_secret') ?? '') === '')
      return refuse(
        'incorrect_client_credentials',
        'The client_id and/or client_secret passed are incorrect.',
      );
    const redirect = params.get('redirect_uri');
    if (redirect !== null && grant.redirectUri !== undefined && redirect !== grant.redirectUri)
      return refuse(
        'redirect_uri_mismatch',
        'The redirect_uri MUST match the registered callback URL for this application.',
      );
    this.codes.delete(code);
    return this.grantToken(answer, record, clientId, grant.scope, 'code');
  }

  /** The consent page, approved at once: back to the client's redirect URI with a code and its state. */
  private authorize(
    res: Res,
    params: URLSearchParams,
    clientId: string,
    scope: string,
    record: (status: number, data: Record<string, unknown>) => void,
  ): void {
    const redirectUri = params.get('redirect_uri') ?? undefined;
    let target: URL | undefined;
    try {
      target = redirectUri === undefined ? undefined : new URL(redirectUri);
    } catch {
      target = undefined;
    }
    if (clientId === '' || target === undefined || !/^https?:$/.test(target.protocol)) {
      // GitHub would send the user to the app's registered callback, which no app registered here has.
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(
        'fleetbench: GET /login/oauth/authorize needs a client_id and an http(s) redirect_uri (docs/github-emulator.md, "OAuth logins")\n',
      );
      return void record(400, { clientId, error: 'redirect_uri' });
    }
    const code = this.hex(20);
    remember(this.codes, code, { clientId, scope, redirectUri, issuedAt: this.emulator.clock.now() });
    target.searchParams.set('code', code);
    const state = params.get('state');
    if (state !== null) target.searchParams.set('state', state);
    res.writeHead(302, { location: target.toString(), 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<html><body>You are being <a href="${escapeHtml(target.toString())}">redirected</a>.</body></html>`,
    );
    record(302, { clientId, grant: 'code' });
  }

  private grantToken(
    answer: (status: number, fields: Record<string, string | number>) => void,
    record: (status: number, data: Record<string, unknown>) => void,
    clientId: string,
    scope: string,
    grant: 'device' | 'code',
  ): void {
    const { tokens, state } = this.emulator;
    const info = tokens.mint({ user: state.defaultUser.login, token: tokens.randomToken('gho_') });
    const key = `${clientId}\n${scope}`;
    const same = this.byGrant.get(key) ?? [];
    same.push(info.token);
    this.byGrant.set(key, same);
    this.minted.set(info.token, key);
    if (same.length > OAUTH_TOKENS_PER_GRANT) this.revoke(same[0] as string);
    if (this.minted.size > this.maxTokens) this.revoke(this.minted.keys().next().value as string);
    answer(200, { access_token: info.token, token_type: 'bearer', scope });
    record(200, { clientId, grant, user: info.user.login });
  }

  /** A token minted here is no longer taken (401 after, as a revoked token on GitHub). */
  private revoke(token: string): void {
    const key = this.minted.get(token);
    this.minted.delete(token);
    this.emulator.tokens.tokens.delete(token);
    if (key === undefined) return;
    const same = (this.byGrant.get(key) ?? []).filter((t) => t !== token);
    if (same.length === 0) this.byGrant.delete(key);
    else this.byGrant.set(key, same);
  }

  /** Lowercase hex digits from the token registry's stream (seeded, or secret when served). */
  private hex(length: number): string {
    let out = '';
    while (out.length < length)
      for (const ch of this.emulator.tokens.randomToken('')) out += (ch.charCodeAt(0) % 16).toString(16);
    return out.slice(0, length);
  }

  /** A code for a person to type: eight letters and digits without vowels, `WDJB-MJHT` as GitHub's. */
  private userCode(): string {
    let out = '';
    for (const ch of this.emulator.tokens.randomToken('').slice(0, 8))
      out += USER_CODE_CHARS[ch.charCodeAt(0) % USER_CODE_CHARS.length];
    return `${out.slice(0, 4)}-${out.slice(4)}`;
  }
}

/** The parameters the OAuth endpoints read; any other a client sends is ignored. */
const OAUTH_PARAMS = [
  'client_id',
  'client_secret',
  'scope',
  'state',
  'redirect_uri',
  'code',
  'device_code',
  'grant_type',
] as const;

/**
 * The request's parameters: its query, then its body's (form-encoded or JSON), the body's winning.
 * Only OAUTH_PARAMS are taken from the body, each looked up once: setting every one of a body's
 * parameters in turn (each `set` scans them all) took 2.4 s of the event loop for 11,000 keys.
 */
async function paramsOf(req: Req, url: string): Promise<URLSearchParams> {
  const params = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  if (req.method !== 'POST') {
    req.resume();
    return params;
  }
  const text = (await readBoundedBody(req, OAUTH_BODY_LIMIT)).toString('utf8');
  if (text.trim() === '') return params;
  if (/application\/json/i.test(String(req.headers['content-type'] ?? ''))) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error('Problems parsing JSON');
    }
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      for (const key of OAUTH_PARAMS) {
        const value = Object.hasOwn(parsed, key) ? (parsed as Record<string, unknown>)[key] : undefined;
        if (typeof value === 'string' || typeof value === 'number') params.set(key, String(value));
      }
    return params;
  }
  const body = new URLSearchParams(text);
  for (const key of OAUTH_PARAMS) {
    // The last of a repeated parameter wins, as it did when each was set in turn.
    const value = body.getAll(key).at(-1);
    if (value !== undefined) params.set(key, value);
  }
  return params;
}

/** Scopes as GitHub echoes them: the requested list, comma-separated. */
function normaliseScope(scope: string): string {
  return scope
    .split(/[\s,]+/)
    .filter((s) => s !== '')
    .join(',');
}

function remember<T>(map: Map<string, T>, key: string, value: T): void {
  if (map.size >= MAX_OAUTH_CODES) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  map.set(key, value);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
